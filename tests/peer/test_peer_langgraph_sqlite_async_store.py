"""LangGraph's ``AsyncSqliteStore`` tests, run against ``BranchStore`` (docs/langgraph.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from peer_adapter import PEER, export, needs_peer

pytestmark = needs_peer

# test name -> why it contradicts branch gating by design (strict xfail)
EXPECTED: dict[str, str] = {
    "test_no_running_loop": (
        "BranchStore, like InMemoryStore, is a sync and async store: outside a run "
        "nothing waits, so sync calls work on the event loop; inside an async run they raise "
        "InvalidStateError (tests/test_langgraph_contract.py)"
    ),
}

if PEER is not None:
    from peer_sqlite import async_suite, remove, temp_file
    from peer_stores import BranchAsyncSqliteStore

    export(async_suite(), globals(), expected=EXPECTED)

    @pytest_asyncio.fixture(params=["memory", "file"])
    async def store(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
        """The suite's async ``store`` fixture, on BranchAsyncSqliteStore."""
        path = ":memory:" if request.param == "memory" else temp_file()
        try:
            async with BranchAsyncSqliteStore.from_conn_string(path) as built:
                yield built
        finally:
            remove(path)
