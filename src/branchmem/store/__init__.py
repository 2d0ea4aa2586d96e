"""Storage backends behind one protocol (``base.Store``)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from ..errors import InvalidInput, StorageError
from .base import CleanupPending, Store
from .inmemory import InMemoryStore
from .keys import ApiKeyRow, KeyStore


def open_store(url: str | Path, *, migrate: bool = False) -> Store:
    """``postgresql://...`` -> PostgreSQL; ``sqlite:///path``, or any path -> SQLite."""
    if isinstance(url, Path):
        url = str(url)
    if not isinstance(url, str) or not url:
        raise InvalidInput(f"a store URL or path is required, got {url!r}")
    if url.startswith(("postgresql://", "postgres://")):
        # imported by name: psycopg is the optional extra branchmem[postgres]
        postgres = importlib.import_module(".postgres", __package__)
        store: Store = postgres.PostgresStore(url, migrate=migrate)
        return store
    if url == "sqlite://":
        url = ":memory:"
    elif url.startswith("sqlite:///"):  # sqlite:///relative.db, sqlite:////absolute.db
        url = url.removeprefix("sqlite:///") or ":memory:"
    if "://" in url:
        raise InvalidInput(f"unsupported store URL {url!r}: use a path, sqlite:// or postgresql://")
    from .sqlite import SQLiteStore

    return SQLiteStore(url, migrate=migrate)


def refuse_missing(url: str) -> None:
    """Refuse a SQLite path that does not exist (``Memory.open(..., create=False)``)."""
    if "://" in url and not url.startswith("sqlite:"):
        return  # PostgreSQL: the server says whether the database exists
    path = url.removeprefix("sqlite:///").removeprefix("sqlite://")
    if path and path != ":memory:" and not os.path.exists(path):
        raise StorageError(f"no store at {path}")


__all__ = [
    "ApiKeyRow",
    "CleanupPending",
    "InMemoryStore",
    "KeyStore",
    "Store",
    "open_store",
    "refuse_missing",
]
