"""What the conformance suite cannot see about the async faces: that they are the API's own
methods (signatures, docstrings, coroutines), that ``AsyncClient`` sends what ``Client``
sends, and that ``AsyncMemory`` keeps the event loop free, in order, per task actor.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
import threading
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx", reason="AsyncClient needs the 'client' extra")

import httpx

from branchmem import AsyncClient, AsyncMemory, InvalidInput, Memory, NotFoundError
from branchmem.api import MemoryAPI
from branchmem.api.operations import Operation, Param, operations
from branchmem.client import Client
from branchmem.errors import Unavailable
from timing import scaled

FIXTURES = Path(__file__).parent / "fixtures" / "importers"


def public(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_")}


def shape(method: Any) -> list[tuple[object, ...]]:
    signature = inspect.signature(method)
    params = [(p.name, p.kind, p.default, p.annotation) for p in signature.parameters.values()]
    return [*params, ("return", signature.return_annotation)]


# -- the API's own methods -------------------------------------------------------------
@pytest.mark.parametrize("face", [AsyncMemory, AsyncClient])
@pytest.mark.parametrize("name", sorted(public(MemoryAPI)))
def test_every_api_method_is_a_coroutine_with_memorys_signature(face: type, name: str) -> None:
    method = getattr(face, name)
    assert inspect.iscoroutinefunction(method), f"{face.__name__}.{name} is not awaited"
    if name != "close":
        assert shape(method) == shape(getattr(Memory, name))
    if name in operations():
        assert inspect.getdoc(method) == operations()[name].doc


# -- AsyncClient sends what Client sends -------------------------------------------------
NAMED: dict[str, Any] = {
    "events": [{"id": "e/1", "parent": None, "content": "ü"}],
    "records": [{"id": "r.1", "sources": ["e/1"], "meta": {"n": 1}}],
    "sources": ["e/1", "r.1@2"],
    "targets": ["r.1"],
    "supersedes": ["old"],
    "meta": {"note": "ü", "n": [1, 2]},
    "receipt": {"version": 1, "namespace": "default"},
}


def sample(param: Param) -> Any:
    """A value of the parameter's type that the client passes on (ids with '/', '.')."""
    if param.name in NAMED:
        return NAMED[param.name]
    kinds = typing.get_args(param.hint) or (param.hint,)
    for kind, value in ((bool, True), (int, 5), (float, 1.5), (str, f"{param.name} v/.")):
        if kind in kinds:
            return value
    raise AssertionError(f"no sample for {param.name}: {param.hint}")


def calls(op: Operation) -> Iterable[tuple[list[Any], dict[str, Any]]]:
    """The operation with only what it requires, then with every parameter given."""
    required = [p for p in op.params if p.required]
    positional = [sample(p) for p in required if p.positional]
    keywords = {p.name: sample(p) for p in required if not p.positional}
    yield positional, keywords
    if any(p.name == "anchor" and p.where == "query" for p in required):  # None: left out
        yield (
            [None if p.name == "anchor" else sample(p) for p in required if p.positional],
            keywords,
        )
    everything = {p.name: sample(p) for p in op.params if not p.positional}
    yield [sample(p) for p in op.params if p.positional], {**everything, "namespace": "acme/a b"}


class Recorder:
    """Answers every request with 503 after writing down what was sent: a request that may
    be repeated is sent again (``retries`` times), so the repeatability is compared too."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, bytes, str | None]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(
            (request.method, str(request.url), request.read(), request.headers.get("content-type"))
        )
        return httpx.Response(503, json={"code": "unavailable", "detail": "recorded"})


@pytest.mark.parametrize("name", sorted(operations()))
def test_async_client_sends_the_request_client_sends(name: str) -> None:
    op = operations()[name]
    sync_sent, async_sent = Recorder(), Recorder()
    client = Client("http://w1", "bm_key", mode="compat", transport=httpx.MockTransport(sync_sent))

    async def send_async(args: list[Any], kwargs: dict[str, Any]) -> None:
        transport = httpx.MockTransport(async_sent)
        async with AsyncClient("http://w1", "bm_key", mode="compat", transport=transport) as aio:
            with pytest.raises(Unavailable, match="recorded"):
                await getattr(aio, name)(*args, **kwargs)

    with client:
        for args, kwargs in calls(op):
            with pytest.raises(Unavailable, match="recorded"):
                getattr(client, name)(*args, **kwargs)
            asyncio.run(send_async(args, kwargs))
    assert sync_sent.sent and async_sent.sent == sync_sent.sent


def test_a_query_value_of_the_wrong_type_is_refused_before_sending() -> None:
    async def main() -> None:
        async with AsyncClient("http://127.0.0.1:9") as client:  # nothing listens there
            with pytest.raises(InvalidInput, match="query must be str"):
                await client.search(5, "u1")  # type: ignore[arg-type]
            with pytest.raises(InvalidInput, match="namespace"):
                await client.visible("u1", namespace="")

    asyncio.run(main())


def test_a_worker_that_cannot_be_reached_is_skipped() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.host == "down":
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, json={"head": "u2"})

    async def main() -> None:
        transport = httpx.MockTransport(answer)
        async with AsyncClient(["http://down", "http://up"], transport=transport) as client:
            assert await client.head("t") == "u2"
            assert client.failovers == 1
            assert await client.head("t") == "u2"  # the worker that answered is kept
            assert client.failovers == 1

    asyncio.run(main())


def test_a_write_whose_connection_breaks_is_not_sent_again() -> None:
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.method)
        raise httpx.ReadError("reset", request=request)

    async def main() -> None:
        async with AsyncClient("http://w1", transport=httpx.MockTransport(answer)) as client:
            with pytest.raises(Unavailable, match="may or may not have been applied"):
                await client.supersede("new", "old")

    asyncio.run(main())
    assert sent == ["POST"]


def test_import_plans_and_files_go_through_the_service() -> None:
    pytest.importorskip("fastapi", reason="the app needs the 'server' extra")
    from branchmem.importers import load
    from branchmem.server import create_app

    served = Memory()
    transport = httpx.ASGITransport(create_app(served, auth=False))
    export = FIXTURES / "chatgpt-conversations.json"

    async def main() -> None:
        async with AsyncClient("http://bm.test", transport=transport) as client:
            planned = await client.import_(load(export), namespace="plan")
            uploaded = await client.import_file(str(export), namespace="file")
            assert (planned.imported, planned.events_added) == (
                uploaded.imported,
                uploaded.events_added,
            )
            assert planned.events_added > 0
            heads = await client.heads(namespace="plan")
            assert heads == await client.heads(namespace="file") and heads
            tree, head = next(iter(heads.items()))
            assert head in [e.id for e in (await client.tree_events(tree, namespace="plan")).events]

    asyncio.run(main())
    assert served.conversations(namespace="plan") == served.conversations(namespace="file")


# -- AsyncMemory keeps the loop free -----------------------------------------------------
class GatedCounter:
    """A token counter that holds the call counting with it until released."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.threads: set[int] = set()

    def count(self, text: str) -> int:
        self.threads.add(threading.get_ident())
        self.entered.set()
        self.release.wait(5)
        return len(text.split())


async def until(flag: threading.Event) -> None:
    for _ in range(5000):
        if flag.is_set():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("the worker never started the call")


def test_a_call_runs_off_the_event_loop() -> None:
    counter = GatedCounter()

    async def main() -> None:
        async with AsyncMemory(Memory(counter=counter)) as mem:
            await mem.add_event("u1", content="moving to Chengdu")
            held = asyncio.create_task(mem.context("u1", budget=100))
            await until(counter.entered)
            for _ in range(20):  # the loop keeps turning while the store call is busy
                await asyncio.sleep(0)
            assert not held.done()
            counter.release.set()
            assert (await held).events == ("u1",)

    asyncio.run(main())
    assert threading.get_ident() not in counter.threads


def test_calls_run_one_at_a_time_in_the_order_awaited() -> None:
    ids = [f"m{i}" for i in range(40)]

    async def main() -> None:
        async with AsyncMemory() as mem:
            await asyncio.gather(*(mem.add_event(i, content=i) for i in ids))
            assert [e.ids for e in await mem.audit()] == [(i,) for i in ids]

    asyncio.run(main())


def test_a_cancelled_call_that_had_not_started_writes_nothing() -> None:
    counter = GatedCounter()

    async def main() -> None:
        async with AsyncMemory(Memory(counter=counter)) as mem:
            await mem.add_event("u1")
            held = asyncio.create_task(mem.context("u1"))
            await until(counter.entered)
            queued = asyncio.create_task(mem.add_event("u2", "u1"))
            await asyncio.sleep(0)
            queued.cancel()
            counter.release.set()
            await held
            with pytest.raises(asyncio.CancelledError):
                await queued
            with pytest.raises(NotFoundError, match="'u2'"):
                await mem.get_event("u2")

    asyncio.run(main())


def test_each_task_writes_as_its_own_actor() -> None:
    async def write(mem: AsyncMemory, actor: str, ids: list[str]) -> None:
        async with mem.acting_as(actor):
            for event_id in ids:
                await mem.add_event(event_id)
                await asyncio.sleep(0)

    async def main() -> None:
        async with AsyncMemory() as mem:
            await asyncio.gather(
                write(mem, "agent-a", ["a1", "a2", "a3"]), write(mem, "agent-b", ["b1", "b2"])
            )
            await mem.add_event("nobody")
            actors = {e.ids[0]: e.actor for e in await mem.audit()}
            assert actors == {
                "a1": "agent-a", "a2": "agent-a", "a3": "agent-a",
                "b1": "agent-b", "b2": "agent-b", "nobody": None,
            }  # fmt: skip

    asyncio.run(main())


def test_a_closed_async_memory_refuses_calls_and_closes_once() -> None:
    async def main() -> None:
        mem = AsyncMemory()
        await mem.add_event("u1")
        await mem.close()
        await mem.close()
        with pytest.raises(InvalidInput, match="closed"):
            await mem.get_event("u1")

    asyncio.run(main())


def test_async_memory_wraps_only_a_memory() -> None:
    with pytest.raises(InvalidInput, match="got str"):
        AsyncMemory("memory.db")  # type: ignore[arg-type]  # that is AsyncMemory.open's


def test_open_keeps_what_was_written(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"

    async def main() -> None:
        async with AsyncMemory.open(path) as mem:
            await mem.add_event("u1", content="moving to Chengdu")
            await mem.add_record("f", sources=["u1"], content="moving to Chengdu", key="city")

    asyncio.run(main())
    with Memory.open(path) as mem:
        assert mem.current("city", "u1").content == "moving to Chengdu"  # type: ignore[union-attr]


def test_without_httpx_async_memory_works_and_async_client_says_how_to_install_it() -> None:
    script = (
        "import sys, asyncio\n"
        "sys.modules['httpx'] = None\n"
        "from branchmem import AsyncMemory\n"
        "from branchmem.errors import MissingExtra\n"
        "async def main():\n"
        "    async with AsyncMemory() as mem:\n"
        "        print((await mem.add_event('u1')).id)\n"
        "asyncio.run(main())\n"
        "try:\n    from branchmem import AsyncClient\n"
        "except MissingExtra as error:\n    print(error)\n"
    )
    source = str(Path(__file__).parent.parent / "src")
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=scaled(60),
        env={**os.environ, "PYTHONPATH": source},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "u1",
        "branchmem.AsyncClient needs 'httpx', which is not installed: "
        'pip install "branchmem[client]"',
    ]
