"""BranchStore's TTL across stores and processes, and the lifecycle methods
(``from_conn_string``, ``setup``, the TTL sweeper) of LangGraph's SQL stores, sync and async
(docs/langgraph.md, "TTL")."""

from __future__ import annotations

import asyncio
import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.postgres import AsyncPostgresStore, PostgresStore
from langgraph.store.sqlite import AsyncSqliteStore, SqliteStore

from branchmem import InvalidInput, Memory
from branchmem.integrations.langgraph import (
    AsyncBranchStore,
    BranchCheckpointer,
    BranchStore,
    gated,
)
from timing import Clock, scaled, wait_until

NS = ("user", "u1")
SRC = Path(__file__).parent.parent / "src"
LIFECYCLE = ("setup", "sweep_ttl", "start_ttl_sweeper", "stop_ttl_sweeper")


def thread_head(memory: Memory) -> Any:
    """A thread with one checkpoint mirrored into ``memory``; its config (the head)."""
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    BranchCheckpointer(InMemorySaver(), memory).put(
        config, empty_checkpoint(), {"source": "input", "step": -1, "parents": {}}, {}
    )
    return {"configurable": {"thread_id": "t"}}


def at_head(memory: Memory, **options: Any) -> BranchStore:
    return BranchStore(memory, **options).at({"configurable": {"thread_id": "t"}})


def test_a_refresh_is_seen_by_another_store_on_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read that extends an item's TTL in one store keeps it alive for a store opened on
    the same SQLite file (before, the refresh lived in the reading process only)."""
    clock = Clock()
    monkeypatch.setattr(gated, "time", clock)
    path = tmp_path / "m.db"
    with Memory.open(path) as first_memory, Memory.open(path) as second_memory:
        thread_head(first_memory)
        first, second = at_head(first_memory), at_head(second_memory)
        first.put(NS, "k", {"v": 1}, ttl=1.0)  # expires 60 s from now
        assert first.get(NS, "k") is not None  # the first store has read (cached) it
        clock.now += 50
        assert second.get(NS, "k", refresh_ttl=True) is not None  # now expires at +110
        clock.now += 30  # +80: past the put's expiry, before the refreshed one
        assert first.get(NS, "k", refresh_ttl=False) is not None
        assert [item.key for item in first.search(NS, refresh_ttl=False)] == ["k"]
        clock.now += 40  # +120: past both
        assert first.get(NS, "k") is None and second.get(NS, "k") is None


CHILD = """
import json, sys
from branchmem import InvalidInput, Memory
from branchmem.integrations.langgraph import BranchStore, gated

class Clock:
    now = float(sys.argv[2])
    def time(self):
        return self.now

gated.time = Clock()
with Memory.open(sys.argv[1]) as memory:
    store = BranchStore(memory).at({"configurable": {"thread_id": "t"}})
    item = store.get(("user", "u1"), "k", refresh_ttl=True)
    print(json.dumps({"found": item is not None}), flush=True)
"""


def test_a_refresh_in_another_process_is_seen_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process reads the item (refreshing its TTL) halfway through its life: this
    process sees the later expiry, on a store that had the item cached before."""
    clock = Clock()
    monkeypatch.setattr(gated, "time", clock)
    path = tmp_path / "m.db"
    with Memory.open(path) as memory:
        thread_head(memory)
        store = at_head(memory)
        store.put(NS, "k", {"v": 1}, ttl=10.0)  # expires at +600 s
        assert store.get(NS, "k", refresh_ttl=False) is not None
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), str(clock.now + 300)],  # refreshes to +900
            capture_output=True,
            text=True,
            timeout=scaled(60),
            env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        )
        assert child.returncode == 0, child.stderr
        assert json.loads(child.stdout) == {"found": True}
        clock.now += 700
        assert store.get(NS, "k", refresh_ttl=False) is not None
        clock.now += 250  # +950
        assert store.get(NS, "k") is None


def test_sweeping_keeps_an_expired_item_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep drops this process's memo of an expired item's refresh; the item must not
    come back from the put's own (earlier) expiry nor from its stored refresh."""
    clock = Clock()
    monkeypatch.setattr(gated, "time", clock)
    memory = Memory()
    thread_head(memory)
    store = at_head(memory, ttl={"default_ttl": 1.0})
    store.put(NS, "k", {"v": 1})
    clock.now += 30
    assert store.get(NS, "k") is not None  # refreshed to +90
    clock.now += 70
    assert store.get(NS, "k") is None
    assert store.sweep_ttl() == 1
    assert store.sweep_ttl() == 0
    assert store.get(NS, "k") is None and store.search(NS) == []
    store.put(NS, "other", {"v": 2})  # a write: the next read refills from the Memory
    assert store.get(NS, "k") is None and [i.key for i in store.search(NS)] == ["other"]


def test_forgetting_an_item_takes_its_stored_refreshes() -> None:
    """A refresh is built on the item revision it extends: a forget that erases the item
    erases it too, and no text of the item is left (its key, say) for the check to find."""
    memory = Memory()
    thread_head(memory)
    store = at_head(memory, ttl={"default_ttl": 5.0})
    store.put(("user", "facts"), "cat", {"name": "Mittens"})
    assert store.get(("user", "facts"), "cat") is not None  # stores a refresh
    receipt = memory.forget("subject", "facts")
    assert len(receipt.erased["records"]) == 2 and receipt.check.clean
    assert store.get(("user", "facts"), "cat") is None


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (BranchStore, SqliteStore),
        (BranchStore, PostgresStore),
        (AsyncBranchStore, AsyncSqliteStore),
        (AsyncBranchStore, AsyncPostgresStore),
    ],
)
def test_lifecycle_methods_match_langgraphs_sql_stores(ours: type, theirs: type) -> None:
    """Code written for one of LangGraph's SQL stores calls these with the same arguments
    and, sync or async alike, gets the same kind of answer."""
    for name in LIFECYCLE:
        mine, stock = getattr(ours, name), getattr(theirs, name)
        assert inspect.signature(mine) == inspect.signature(stock), name
        assert inspect.iscoroutinefunction(mine) == inspect.iscoroutinefunction(stock), name


def test_the_sweeper_thread_sweeps_until_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(gated, "time", clock)
    memory = Memory()
    thread_head(memory)
    store = at_head(memory, ttl={"default_ttl": 1.0, "sweep_interval_minutes": 0.0005})
    store.put(NS, "k", {"v": 1})
    assert store.get(NS, "k") is not None and store._refreshed  # its refresh is held
    clock.now += 120
    future = store.start_ttl_sweeper()  # every 30 ms
    assert not future.done()
    store.start_ttl_sweeper()  # already running: no second thread
    wait_until(lambda: not store._refreshed, what="a sweep of the expired item's refresh")
    assert store.stop_ttl_sweeper(timeout=scaled(10))
    wait_until(future.done, what="the sweeper's future")
    assert store.stop_ttl_sweeper()  # not running


def test_cancelling_the_sweepers_future_stops_it() -> None:
    memory = Memory()
    thread_head(memory)
    store = at_head(memory, ttl={"default_ttl": 1.0, "sweep_interval_minutes": 10})
    future = store.start_ttl_sweeper()
    assert future.cancel()
    thread = store.__dict__["_ttl_sweeper"].thread
    thread.join(scaled(10))
    assert not thread.is_alive()


def test_without_a_ttl_config_there_is_no_sweeper() -> None:
    store = BranchStore(Memory())
    future = store.start_ttl_sweeper()
    assert future.done() and future.result() is None
    assert store.stop_ttl_sweeper()


def test_the_async_sweeper_is_a_task_until_stopped() -> None:
    memory = Memory()
    thread_head(memory)
    store = AsyncBranchStore(memory, ttl={"default_ttl": 1.0, "sweep_interval_minutes": 10})
    view = store.at({"configurable": {"thread_id": "t"}})

    async def lifecycle() -> None:
        await view.setup()
        task = await view.start_ttl_sweeper()
        assert isinstance(task, asyncio.Task) and not task.done()
        assert await view.start_ttl_sweeper() is task  # already running
        await view.aput(NS, "k", {"v": 1})
        assert await view.sweep_ttl() == 0  # nothing expired
        assert await view.stop_ttl_sweeper(timeout=scaled(10))
        assert task.done()
        assert await view.stop_ttl_sweeper()

    asyncio.run(lifecycle())


HEAD: Any = {"configurable": {"thread_id": "t"}}


@pytest.mark.parametrize("stock", [PostgresStore, SqliteStore])
def test_from_conn_string_takes_the_sql_stores_arguments(stock: type) -> None:
    ours = inspect.signature(BranchStore.from_conn_string).parameters
    assert set(inspect.signature(stock.from_conn_string).parameters) <= set(ours)


def test_from_conn_string_opens_a_memory_for_the_stores_life(tmp_path: Path) -> None:
    """PostgresStore's connection modes are accepted (branchmem's backend keeps its own
    pool and pipelines); what one store wrote, the next one opened there reads."""
    path = str(tmp_path / "m.db")
    with BranchStore.from_conn_string(path, pipeline=True, pool_config={"max_size": 4}) as store:
        thread_head(store.memory)
        store.at(HEAD).put(NS, "k", {"v": 1})
    with BranchStore.from_conn_string(path, config=HEAD) as store:
        found = store.get(NS, "k")
        assert found is not None and found.value == {"v": 1}
    with (
        pytest.raises(InvalidInput, match="pipeline"),
        BranchStore.from_conn_string(
            path,
            pipeline="yes",  # type: ignore[arg-type]
        ),
    ):
        pass
    with (
        pytest.raises(InvalidInput, match="pool_config"),
        BranchStore.from_conn_string(
            path,
            pool_config=4,  # type: ignore[arg-type]
        ),
    ):
        pass


def test_the_async_from_conn_string_is_an_async_context(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")

    async def roundtrip() -> Any:
        async with AsyncBranchStore.from_conn_string(path) as store:
            thread_head(store.memory)
            await store.at(HEAD).aput(NS, "k", {"v": 2})
        async with AsyncBranchStore.from_conn_string(path, config=HEAD) as store:
            await store.setup()
            return await store.aget(NS, "k")

    found = asyncio.run(roundtrip())
    assert found is not None and found.value == {"v": 2}
