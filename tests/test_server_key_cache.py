"""The API key cache: a key in steady use never sends a request to the store (its row is
read again in the background), and a deleted key still stops working within
``CACHE_SECONDS`` on every worker."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import pytest

from branchmem import Memory
from branchmem.server.keys import (
    CACHE_SECONDS,
    REFRESH_SECONDS,
    AfterTheAnswer,
    ApiKey,
    KeyRing,
)
from timing import scaled


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Refresher(ThreadPoolExecutor):
    """The ring's background thread, keeping what it was given so a test can wait for it."""

    def __init__(self) -> None:
        super().__init__(1)
        self.given: list[Future[Any]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future = super().submit(fn, *args, **kwargs)
        self.given.append(future)
        return future


@pytest.fixture
def memory() -> Memory:
    return Memory()


def settle(ring: KeyRing) -> None:
    assert isinstance(ring.refresher, Refresher)
    wait(ring.refresher.given, timeout=scaled(30))


def ring_on(memory: Memory, clock: Clock) -> KeyRing:
    return KeyRing(memory, clock=clock, refresher=Refresher())


def reads_started(ring: KeyRing) -> int:
    assert isinstance(ring.refresher, Refresher)
    return len(ring.refresher.given)


def cached_key(memory: Memory) -> tuple[Clock, KeyRing, str, ApiKey]:
    """A ring on its own clock holding one key whose row the first request has read."""
    clock = Clock()
    ring = ring_on(memory, clock)
    key, grant = ring.create("me", ["alice"])
    assert ring.verify(key) == grant
    return clock, ring, key, grant


def test_a_key_in_steady_use_is_never_sent_to_the_store(memory: Memory) -> None:
    clock, ring, key, grant = cached_key(memory)
    step = REFRESH_SECONDS / 2
    for _ in range(int(10 * CACHE_SECONDS / step)):  # ten cache lifetimes, a request a step
        clock.now += step
        assert ring.verify_cached(key) == (True, grant)
        settle(ring)


def test_without_traffic_the_copy_still_ages_out(memory: Memory) -> None:
    clock, ring, key, _ = cached_key(memory)
    clock.now += CACHE_SECONDS
    assert ring.verify_cached(key) == (False, None)  # the request reads the store itself
    assert reads_started(ring) == 0


def test_a_key_deleted_by_another_worker_stops_working_within_the_cache_time(
    memory: Memory,
) -> None:
    clock = Clock()
    serving, other = ring_on(memory, clock), ring_on(memory, clock)
    key, grant = serving.create("me", ["alice"])
    assert serving.verify(key) == grant
    other.delete(grant.key_id)
    clock.now += REFRESH_SECONDS  # still the old copy, and a read of the row starts
    assert serving.verify_cached(key) == (True, grant)
    settle(serving)
    assert serving.verify_cached(key) == (True, None)  # the read found the key gone
    assert serving.verify(key) is None


def test_a_failed_background_read_leaves_the_request_to_the_store(tmp_path: Path) -> None:
    memory = Memory.open(str(tmp_path / "keys.db"))
    clock, ring, key, grant = cached_key(memory)
    memory.close()  # the background read fails on a closed SQLite store
    clock.now += REFRESH_SECONDS
    assert ring.verify_cached(key) == (True, grant)  # the copy is still young enough
    settle(ring)
    clock.now += CACHE_SECONDS - REFRESH_SECONDS
    assert ring.verify_cached(key) == (False, None)


def test_one_background_read_at_a_time_per_key(memory: Memory) -> None:
    clock, ring, key, grant = cached_key(memory)
    clock.now += REFRESH_SECONDS
    with memory.transaction():  # holds the store: the background read waits behind it
        for _ in range(20):
            assert ring.verify_cached(key) == (True, grant)
        assert reads_started(ring) == 1
    settle(ring)
    clock.now += REFRESH_SECONDS  # the copy the read made is young: no read; then old again
    assert ring.verify_cached(key) == (True, grant)
    assert reads_started(ring) == 2


def test_a_refresher_shut_down_leaves_the_requests_to_the_store(memory: Memory) -> None:
    clock = Clock()
    refresher = Refresher()
    ring = KeyRing(memory, clock=clock, refresher=refresher)
    key, grant = ring.create("me", ["alice"])
    assert ring.verify(key) == grant
    refresher.shutdown()
    clock.now += REFRESH_SECONDS
    assert ring.verify_cached(key) == (True, grant)  # no read started, and nothing raised
    assert refresher.given == []
    clock.now += CACHE_SECONDS - REFRESH_SECONDS
    assert ring.verify_cached(key) == (False, None)  # the request reads the store itself
    assert ring.verify(key) == grant
    clock.now += REFRESH_SECONDS  # the key is not left marked as being read
    assert ring.verify_cached(key) == (True, grant)


class AtOnce(Executor):
    """Runs what it is given in the caller's thread, before ``submit`` returns."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def test_a_refresher_that_runs_the_read_at_once_is_served(memory: Memory) -> None:
    """The ring hands a read to its refresher without holding its own lock."""
    clock = Clock()
    ring = KeyRing(memory, clock=clock, refresher=AtOnce())
    key, grant = ring.create("me", ["alice"])
    assert ring.verify(key) == grant
    clock.now += REFRESH_SECONDS
    outcome: list[Any] = []
    caller = threading.Thread(target=lambda: outcome.append(ring.verify_cached(key)))
    caller.start()
    caller.join(10)
    assert not caller.is_alive(), "the refresh waited for the lock its caller held"
    assert outcome == [(True, grant)]
    clock.now += CACHE_SECONDS - REFRESH_SECONDS  # older than the first read: the refresh
    assert ring.verify_cached(key) == (True, grant)  # made the copy young again


# -- a server's refresher: the read on the event loop, between requests -------------------


def test_a_read_asked_on_the_loop_runs_there_once_the_asking_callback_returns(
    memory: Memory,
) -> None:
    refresher = AfterTheAnswer(memory)
    ran: list[int] = []

    def read() -> str:
        ran.append(threading.get_ident())
        return "read"

    async def request() -> Future[Any]:
        future = refresher.submit(read)
        assert ran == []  # not while the request is being answered
        await asyncio.sleep(0)
        return future

    future = asyncio.run(request())
    assert future.result(timeout=0) == "read"
    assert ran == [threading.get_ident()]  # asyncio.run's loop is this thread's


def test_while_a_write_holds_the_store_the_read_waits_in_a_thread_not_on_the_loop(
    memory: Memory,
) -> None:
    refresher = AfterTheAnswer(memory)
    holding, release = threading.Event(), threading.Event()

    def write() -> None:
        with memory.transaction():
            holding.set()
            release.wait(30)

    writer = threading.Thread(target=write)
    writer.start()
    assert holding.wait(30)
    readers: list[int] = []

    def read() -> list[Any]:
        readers.append(threading.get_ident())
        return memory.api_keys().list()  # takes the store's lock

    async def request() -> list[Any]:
        future = refresher.submit(read)
        await asyncio.sleep(0.05)  # the loop goes on while the read waits
        assert not future.done()
        release.set()
        return await asyncio.wrap_future(future)

    try:
        assert asyncio.run(request()) == []
    finally:
        release.set()
        writer.join(scaled(30))
    assert len(readers) == 1 and readers[0] != threading.get_ident()
    refresher.shutdown()


def test_asked_off_the_loop_the_read_runs_in_a_thread(memory: Memory) -> None:
    refresher = AfterTheAnswer(memory)
    assert refresher.submit(threading.get_ident).result(timeout=scaled(30)) != threading.get_ident()
    refresher.shutdown()
    with pytest.raises(RuntimeError):  # the ring then leaves the request to the store
        refresher.submit(threading.get_ident)


def test_shut_down_it_takes_nothing_on_the_loop_and_starts_no_thread(memory: Memory) -> None:
    refresher = AfterTheAnswer(memory)
    refresher.shutdown()

    async def request() -> None:
        with pytest.raises(RuntimeError):
            refresher.submit(threading.get_ident)

    asyncio.run(request())
    with pytest.raises(RuntimeError):
        refresher._threaded()  # a read queued before the shutdown finds no thread either


def test_an_error_in_a_read_on_the_loop_is_its_future_s(memory: Memory) -> None:
    def failing() -> None:
        raise OSError("the store went away")

    async def request() -> Future[Any]:
        future = AfterTheAnswer(memory).submit(failing)
        await asyncio.sleep(0)
        return future

    with pytest.raises(OSError, match="went away"):
        asyncio.run(request()).result(timeout=0)


def test_a_server_ring_sees_a_key_deleted_elsewhere_by_the_next_request(memory: Memory) -> None:
    clock = Clock()
    serving = KeyRing(memory, clock=clock, refresher=AfterTheAnswer(memory))
    other = KeyRing(memory, clock=clock)
    key, grant = serving.create("me", ["alice"])
    assert serving.verify(key) == grant
    other.delete(grant.key_id)
    clock.now += REFRESH_SECONDS

    async def two_requests() -> list[tuple[bool, ApiKey | None]]:
        first = serving.verify_cached(key)  # the old copy; the row is read after this one
        await asyncio.sleep(0)
        return [first, serving.verify_cached(key)]

    assert asyncio.run(two_requests()) == [(True, grant), (True, None)]


def test_the_service_s_own_ring_refreshes_between_requests(memory: Memory) -> None:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from branchmem.server import create_app

    ring = create_app(memory).state.keys
    assert isinstance(ring, KeyRing) and isinstance(ring.refresher, AfterTheAnswer)
