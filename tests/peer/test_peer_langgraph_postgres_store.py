"""LangGraph's ``PostgresStore`` tests, run against ``BranchStore`` over branchmem's
PostgreSQL backend (docs/langgraph.md)."""

from __future__ import annotations

from typing import Any

import pytest
from peer_adapter import PEER, export, needs_peer

pytestmark = [needs_peer, pytest.mark.usefixtures("peer_pg_memory")]

# test name -> why it contradicts branch gating by design (strict xfail)
EXPECTED: dict[str, str] = {
    "test_omit_expired_disabled_preserves_expired_rows": (
        "BranchStore hides an item from the moment it expires (PostgresStore's "
        "omit_expired=True): its sweeper deletes nothing, so no lag shows expired items"
    ),
}
# test name -> why it does not concern a store's behaviour (PostgresStore's SQL internals)
NOT_A_STORE: dict[str, str] = {
    "test_nonnull_migrations": "PostgresStore's schema migrations",
    "test_escape_like_literal": "PostgresStore's LIKE escaping helper",
    "test_namespace_match_pattern": "PostgresStore's LIKE pattern helper",
    "test_omit_expired_search_pagination": "backdates updated_at in PostgresStore's table",
}

if PEER is not None:
    from peer_postgres import peer_pg_memory, sync_suite

    export(sync_suite(), globals(), expected=EXPECTED, skipped=NOT_A_STORE)
    __all__ = ["peer_pg_memory"]

    @pytest.fixture(autouse=True)
    def stock_server(pg_dsn: str) -> None:
        """The suite's own ``store`` fixture makes its database per test on the tests'
        server (its ``DEFAULT_URI``)."""
        sync_suite().DEFAULT_URI = pg_dsn

    @pytest.fixture
    def fake_embeddings() -> Any:
        return sync_suite().CharacterEmbeddings(dims=500)
