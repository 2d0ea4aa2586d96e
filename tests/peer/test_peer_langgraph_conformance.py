"""LangGraph's checkpoint conformance suite against ``BranchCheckpointer`` over each saver
it accepts: the wrapper must reach the level of the saver it wraps (docs/langgraph.md)."""

from __future__ import annotations

import sys
import uuid
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


def _postgres(dsn: str) -> Callable[[], AsyncIterator[BaseCheckpointSaver[Any]]]:
    """AsyncPostgresSaver on a fresh database per saver: the suite expects an empty one."""
    pytest.importorskip("langgraph.checkpoint.postgres")
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncConnection

    from pg import with_database

    async def factory() -> AsyncIterator[BaseCheckpointSaver[Any]]:
        name = f"conformance_{uuid.uuid4().hex[:12]}"
        async with await AsyncConnection.connect(dsn, autocommit=True) as admin:
            await admin.execute(f'CREATE DATABASE "{name}"')
        async with AsyncPostgresSaver.from_conn_string(with_database(dsn, name)) as saver:
            await saver.setup()
            yield saver

    return factory


async def _assert_same_level(name: str, inner: Callable[[], AsyncIterator[Any]]) -> None:
    stock = await _report(name, inner, wrap=False)
    wrapped = await _report(name, inner, wrap=True)
    wrapped.print_report()
    assert wrapped.to_dict()["conformance_level"] == stock.to_dict()["conformance_level"]
    detected = {cap for cap, r in wrapped.to_dict()["results"].items() if r["detected"]}
    stock_detected = {cap for cap, r in stock.to_dict()["results"].items() if r["detected"]}
    assert detected == stock_detected
    failures = {cap: r["failures"] for cap, r in wrapped.to_dict()["results"].items()}
    assert not any(failures.values()), failures


@pytest.mark.parametrize("name", sorted(SAVERS))
async def test_wrapper_reaches_the_level_of_the_saver_it_wraps(name: str) -> None:
    await _assert_same_level(name, SAVERS[name])


async def test_wrapper_over_postgres_reaches_its_level(pg_dsn: str) -> None:
    await _assert_same_level("AsyncPostgresSaver", _postgres(pg_dsn))
