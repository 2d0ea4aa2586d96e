"""The conformance suite through ``branchmem.Client`` and a live HTTP server.

Every test gets a fresh ``Memory``; the app (one per mode, on one shared uvicorn) serves it
through a proxy the test points at the new memory, so a test does not pay for building an
app. The client holds an API key bound to every namespace. Nothing is skipped: the suite
touches no store internals. The differential test runs at a small size; its decisions are
read through the ``/explanations`` endpoint (one call per view and flag combination).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from branchmem import Memory
from branchmem.client import Client
from branchmem.server import KeyRing, create_app
from branchmem.testing import BackendConformance
from branchmem.testing.differential import ReadView
from test_server_harness import LiveService


class CurrentMemory:
    """Stands in for the ``Memory`` an app serves; ``target`` is the test's fresh one."""

    def __init__(self) -> None:
        self.target: Memory | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)


class Service:
    """One live server with a strict and a compat app, and one key both accept."""

    def __init__(self) -> None:
        self.live = LiveService().start()
        self.current = {mode: CurrentMemory() for mode in ("strict", "compat")}
        self.urls = {
            mode: self.live.mount(create_app(proxy))  # type: ignore[arg-type]
            for mode, proxy in self.current.items()
        }
        self.key_row: Any = None
        self.api_key = ""

    def fresh(self, mode: str) -> str:
        """Point the ``mode`` app at a fresh memory holding the key; return the app's URL."""
        memory = Memory(mode)
        if self.key_row is None:
            self.api_key, grant = KeyRing(memory).create("conformance", ["*"])
            self.key_row = memory.store.get_api_key(grant.key_id)
        else:
            memory.store.add_api_key(self.key_row, lambda stored: None)  # type: ignore[attr-defined]
        previous = self.current[mode].target
        self.current[mode].target = memory
        if previous is not None:
            previous.close()
        return self.urls[mode]


@pytest.fixture(scope="module")
def service() -> Iterator[Service]:
    made = Service()
    yield made
    made.live.stop()


class RemoteDecision:
    """What ``differential.compare`` reads off a decision, answered by the service."""

    def __init__(self, view: RemoteView, record_id: str) -> None:
        self.view = view
        self.record_id = record_id
        self.reason = view.explained(False, False)[record_id].reason

    def returned(self, include_superseded: bool, include_stale: bool) -> bool:
        return self.view.explained(include_superseded, include_stale)[self.record_id].visible


class RemoteView:
    def __init__(
        self,
        client: Client,
        namespace: str,
        anchor: str | None,
        cross_tree: bool,
        mode: str,
        as_of: int | None,
    ) -> None:
        self.client = client
        self.args: dict[str, Any] = {
            "cross_tree": cross_tree, "mode": mode, "as_of": as_of, "namespace": namespace,
        }  # fmt: skip
        self.anchor = anchor
        self.cache: dict[tuple[bool, bool], dict[str, Any]] = {}

    def explained(self, include_superseded: bool, include_stale: bool) -> dict[str, Any]:
        flags = (include_superseded, include_stale)
        if flags not in self.cache:
            found = self.client.explanations(
                self.anchor, include_superseded=include_superseded,
                include_stale=include_stale, **self.args,
            )  # fmt: skip
            self.cache[flags] = {e.record_id: e for e in found}
        return self.cache[flags]

    def decide(self, record_id: str) -> RemoteDecision:
        return RemoteDecision(self, record_id)


def remote_views(client: Memory) -> ReadView:
    """How the differential test reads a view's decisions over HTTP: ``explanations``."""

    def read(
        namespace: str, anchor: str | None, cross_tree: bool, mode: str, as_of: int | None
    ) -> RemoteView:
        return RemoteView(client, namespace, anchor, cross_tree, mode, as_of)  # type: ignore[arg-type]

    return read


class TestClient(BackendConformance):
    differential_trees = 4
    differential_chunks = 2
    read_views = staticmethod(remote_views)

    @pytest.fixture(params=range(differential_chunks))
    def chunk(self, request: pytest.FixtureRequest) -> int:
        return int(request.param)

    @pytest.fixture(autouse=True)
    def _service(self, service: Service) -> Iterator[None]:
        self.service = service
        self.clients: list[Client] = []
        yield
        for client in self.clients:
            client.close()

    def make_memory(self, mode: str = "strict") -> Memory:
        client = Client(self.service.fresh(mode), self.service.api_key)
        self.clients.append(client)
        return client  # type: ignore[return-value]
