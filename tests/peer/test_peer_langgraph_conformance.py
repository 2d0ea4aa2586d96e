"""LangGraph's checkpoint conformance suite against ``BranchCheckpointer`` over each saver
it accepts: the wrapper must reach the level of the saver it wraps (docs/langgraph.md)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from peer_adapter import PEER, needs_peer

from branchmem import Memory
from branchmem.integrations.langgraph import BranchCheckpointer

pytestmark = [needs_peer, pytest.mark.asyncio]

if PEER is not None:
    sys.path.insert(0, str(PEER / "langgraph" / "libs" / "checkpoint-conformance"))
    from langgraph.checkpoint.conformance import checkpointer_test, validate


async def _in_memory() -> AsyncIterator[BaseCheckpointSaver[Any]]:
    yield InMemorySaver()


async def _sqlite() -> AsyncIterator[BaseCheckpointSaver[Any]]:
    async with AsyncSqliteSaver.from_conn_string(":memory:") as saver:
        yield saver


SAVERS = {"InMemorySaver": _in_memory, "AsyncSqliteSaver": _sqlite}


async def _report(name: str, inner: Callable[[], AsyncIterator[Any]], wrap: bool) -> Any:
    async def factory() -> AsyncIterator[BaseCheckpointSaver[Any]]:
        async for saver in inner():
            yield BranchCheckpointer(saver, Memory()) if wrap else saver

    registered = checkpointer_test(name=f"{name}{' wrapped' if wrap else ''}")(factory)
    return await validate(registered)


@pytest.mark.parametrize("name", sorted(SAVERS))
async def test_wrapper_reaches_the_level_of_the_saver_it_wraps(name: str) -> None:
    stock = await _report(name, SAVERS[name], wrap=False)
    wrapped = await _report(name, SAVERS[name], wrap=True)
    wrapped.print_report()
    assert wrapped.to_dict()["conformance_level"] == stock.to_dict()["conformance_level"]
    detected = {cap for cap, r in wrapped.to_dict()["results"].items() if r["detected"]}
    stock_detected = {cap for cap, r in stock.to_dict()["results"].items() if r["detected"]}
    assert detected == stock_detected
    failures = {cap: r["failures"] for cap, r in wrapped.to_dict()["results"].items()}
    assert not any(failures.values()), failures
