"""The conformance suite through the async faces: ``AsyncMemory`` and ``AsyncClient``.

``Awaited`` is the adapter: it offers each method of an async face as a plain call that
runs the coroutine to its end on the adapter's own event loop, so every test of
``BackendConformance`` also runs through ``await``. ``AsyncClient`` talks to the same live
service as ``test_client_conformance.py`` (one fresh ``Memory`` per test behind it). The
differential test runs at a small size, as for ``Client``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("httpx", reason="AsyncClient needs the 'client' extra")
pytest.importorskip("uvicorn", reason="the live service needs the 'server' extra")

from branchmem import AsyncClient, AsyncMemory, Memory
from branchmem.testing import BackendConformance
from branchmem.testing.differential import ReadView
from test_client_conformance import Service, remote_views, service  # noqa: F401 (a fixture)


class Awaited:
    """An async face as the synchronous ``Memory`` the suite expects: each call awaited."""

    def __init__(self, face: AsyncMemory | AsyncClient) -> None:
        self.face = face
        self.loop = asyncio.new_event_loop()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.face, name)
        if not inspect.iscoroutinefunction(method):
            return method  # type: ignore[no-any-return]

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.loop.run_until_complete(method(*args, **kwargs))

        return call

    def close(self) -> None:
        if not self.loop.is_closed():
            self.loop.run_until_complete(self.face.close())
            self.loop.close()


class ExplainedDecision:
    """What ``differential.compare`` reads off a decision, from awaited ``explain`` calls."""

    def __init__(self, view: ExplainedView, record_id: str) -> None:
        self.view = view
        self.record_id = record_id
        self.reason = view.explained(record_id, False, False).reason

    def returned(self, include_superseded: bool, include_stale: bool) -> bool:
        return bool(self.view.explained(self.record_id, include_superseded, include_stale).visible)


class ExplainedView:
    def __init__(
        self,
        mem: Awaited,
        namespace: str,
        anchor: str | None,
        cross_tree: bool,
        mode: str,
        as_of: int | None,
    ) -> None:
        self.mem = mem
        self.anchor = anchor
        self.args = {"cross_tree": cross_tree, "mode": mode, "as_of": as_of, "namespace": namespace}

    def explained(self, record_id: str, include_superseded: bool, include_stale: bool) -> Any:
        return self.mem.explain(
            record_id, self.anchor, include_superseded=include_superseded,
            include_stale=include_stale, **self.args,
        )  # fmt: skip

    def decide(self, record_id: str) -> ExplainedDecision:
        return ExplainedDecision(self, record_id)


def explained_views(mem: Memory) -> ReadView:
    """How the differential test reads a view's decisions through ``AsyncMemory``: awaited
    ``explain`` calls."""

    def read(
        namespace: str, anchor: str | None, cross_tree: bool, mode: str, as_of: int | None
    ) -> ExplainedView:
        return ExplainedView(mem, namespace, anchor, cross_tree, mode, as_of)  # type: ignore[arg-type]

    return read


class TestAsyncMemory(BackendConformance):
    differential_trees = 4
    differential_chunks = 1
    read_views = staticmethod(explained_views)

    @pytest.fixture(params=range(differential_chunks))
    def chunk(self, request: pytest.FixtureRequest) -> int:
        return int(request.param)

    def make_memory(self, mode: str = "strict") -> Memory:
        return Awaited(AsyncMemory(Memory(mode)))  # type: ignore[return-value]


class TestAsyncClient(BackendConformance):
    differential_trees = 2
    differential_chunks = 1
    read_views = staticmethod(remote_views)  # AsyncClient read one view at a time, as Client

    @pytest.fixture(params=range(differential_chunks))
    def chunk(self, request: pytest.FixtureRequest) -> int:
        return int(request.param)

    @pytest.fixture(autouse=True)
    def _service(self, service: Service) -> Iterator[None]:  # noqa: F811 (the fixture)
        self.service = service
        self.made: list[Awaited] = []
        yield
        for mem in self.made:
            mem.close()

    def make_memory(self, mode: str = "strict") -> Memory:
        mem = Awaited(AsyncClient(self.service.fresh(mode), self.service.api_key))
        self.made.append(mem)
        return mem  # type: ignore[return-value]
