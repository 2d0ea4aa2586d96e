"""LangGraph's ``AsyncPostgresStore`` tests, run against ``BranchStore`` over branchmem's
PostgreSQL backend (docs/langgraph.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from peer_adapter import PEER, export, needs_peer

pytestmark = [needs_peer, pytest.mark.usefixtures("peer_pg_memory")]

# test name -> why it contradicts branch gating by design (strict xfail)
EXPECTED: dict[str, str] = {
    "test_no_running_loop": (
        "BranchStore, like InMemoryStore, is a sync and async store: outside a run "
        "nothing waits, so sync calls work on the event loop; inside an async run they "
        "raise InvalidStateError (tests/test_langgraph_contract.py)"
    ),
    "test_omit_expired_disabled_preserves_expired_rows": (
        "BranchStore hides an item from the moment it expires (PostgresStore's "
        "omit_expired=True): its sweeper deletes nothing, so no lag shows expired items"
    ),
}
# test name -> why it does not concern a store's behaviour (PostgresStore's SQL internals),
# or why it cannot run yet
NOT_A_STORE: dict[str, str] = {
    "test_abatch_uses_single_pool_checkout": "AsyncPostgresStore's connection pool",
    "test_omit_expired_search_pagination": "backdates updated_at in PostgresStore's table",
}

if PEER is not None:
    from peer_postgres import TTL_CONFIG, async_store, async_suite, peer_pg_memory

    export(async_suite(), globals(), expected=EXPECTED, skipped=NOT_A_STORE)
    __all__ = ["peer_pg_memory"]

    @pytest_asyncio.fixture
    async def store() -> AsyncIterator[Any]:
        """The suite's ``store`` fixture (its connection modes are AsyncPostgresStore's),
        with its lifecycle: set up, the TTL sweeper running while the test does."""
        built = async_store(ttl=dict(TTL_CONFIG))
        await built.setup()
        await built.start_ttl_sweeper()
        yield built
        assert await built.stop_ttl_sweeper(timeout=10)

    @pytest.fixture
    def fake_embeddings() -> Any:
        return async_suite().CharacterEmbeddings(dims=500)

    @pytest_asyncio.fixture(
        params=[
            (vector, distance)
            for vector in async_suite().VECTOR_TYPES
            for distance in ("l2", "inner_product", "cosine")
        ],
        ids=lambda p: f"{p[0]}_{p[1]}",
    )
    async def vector_store(request: pytest.FixtureRequest, fake_embeddings: Any) -> Any:
        """The suite's async ``vector_store`` fixture (same parameters), on BranchStore."""
        vector, distance = request.param
        async with async_suite()._create_vector_store(vector, distance, fake_embeddings) as s:
            yield s
