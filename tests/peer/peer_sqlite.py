"""The upstream SQLite store suites, loaded once and pointed at ``BranchStore``."""

from __future__ import annotations

import os
import tempfile
from types import ModuleType

from peer_adapter import load, package
from peer_stores import BranchAsyncSqliteStore, BranchSqliteStore


def sync_suite() -> ModuleType:
    suite = load("langgraph/libs/checkpoint-sqlite/tests/test_store.py", "peer_lg_sqlite_store")
    suite.SqliteStore = BranchSqliteStore
    return suite


def async_suite() -> ModuleType:
    suite = load(
        "langgraph/libs/checkpoint-sqlite/tests/test_async_store.py",
        "peer_lg_sqlite_async_store",
        aliases=package("tests", test_store=sync_suite()),
    )
    suite.AsyncSqliteStore = BranchAsyncSqliteStore
    return suite


def temp_file() -> str:
    with tempfile.NamedTemporaryFile(delete=False) as handle:
        return handle.name


def remove(path: str) -> None:
    if path != ":memory:" and os.path.exists(path):
        os.unlink(path)
