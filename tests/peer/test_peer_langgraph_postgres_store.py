"""LangGraph's ``PostgresStore`` tests, run against ``BranchStore`` over branchmem's
PostgreSQL backend (docs/langgraph.md)."""

from __future__ import annotations

from collections.abc import Iterator
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
    from peer_postgres import TTL_CONFIG, new_store, peer_pg_memory, sync_suite

    export(sync_suite(), globals(), expected=EXPECTED, skipped=NOT_A_STORE)
    __all__ = ["peer_pg_memory"]

    @pytest.fixture
    def store() -> Iterator[Any]:
        """The suite's ``store`` fixture (its connection modes are PostgresStore's), with
        its lifecycle: set up, the TTL sweeper running while the test does."""
        built = new_store(ttl=dict(TTL_CONFIG))
        built.setup()
        built.start_ttl_sweeper()
        yield built
        assert built.stop_ttl_sweeper(timeout=10)

    @pytest.fixture
    def fake_embeddings() -> Any:
        return sync_suite().CharacterEmbeddings(dims=500)
