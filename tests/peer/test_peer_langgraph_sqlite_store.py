"""LangGraph's ``SqliteStore`` tests, run against ``BranchStore`` over branchmem's SQLite
backend (docs/langgraph.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from peer_adapter import PEER, export, needs_peer

pytestmark = needs_peer

# test name -> why it contradicts branch gating by design (strict xfail)
EXPECTED: dict[str, str] = {
    "test_sql_injection_vulnerability": (
        "BranchStore takes any filter key, as InMemoryStore does: it builds no SQL from "
        "a key, so SqliteStore's 'Invalid filter key' guard has nothing to guard"
    ),
    "test_vector_store_initialization": (
        "opens SqliteStore's own connection to look for its vector table; BranchStore keeps "
        "vectors per record revision, not in a table (its index config is checked and passes)"
    ),
}
# test name -> why it does not concern a store's behaviour (SqliteStore's SQL internals)
NOT_A_STORE: dict[str, str] = {
    "test_nonnull_migrations": "SqliteStore's schema migrations",
    "test_escape_glob_literal": "SqliteStore's GLOB escaping helper",
    "test_namespace_match_pattern": "SqliteStore's GLOB pattern helper",
    "test_list_namespaces_prefix_uses_indexable_condition": "SqliteStore's SQL text",
}

if PEER is not None:
    from peer_sqlite import remove, sync_suite, temp_file
    from peer_stores import BranchSqliteStore

    export(sync_suite(), globals(), expected=EXPECTED, skipped=NOT_A_STORE)

    @pytest.fixture(params=["memory", "file"])
    def store(request: pytest.FixtureRequest) -> Iterator[Any]:
        """The suite's ``store`` fixture, on BranchSqliteStore."""
        path = ":memory:" if request.param == "memory" else temp_file()
        try:
            with BranchSqliteStore.from_conn_string(path) as built:
                yield built
        finally:
            remove(path)
