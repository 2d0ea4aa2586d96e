"""A live service for the tests: uvicorn on a loopback port, in a thread, many apps at once.

``LiveService`` serves one ASGI router on a random 127.0.0.1 port; each ``mount(app)`` adds
an app under a fresh ``/m<n>`` prefix and returns its base URL, so a test suite that needs a
fresh store per test (the conformance suite) pays for one server, not one per test.
"""

from __future__ import annotations

import itertools
import socket
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn

from timing import deadline, scaled

Scope = MutableMapping[str, Any]
App = Callable[[Scope, Any, Any], Awaitable[None]]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Router:
    """Dispatch ``/m<n>/...`` to the n-th mounted app (the prefix is stripped)."""

    def __init__(self) -> None:
        self.apps: dict[str, App] = {}

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        prefix, _, rest = scope["path"].lstrip("/").partition("/")
        app = self.apps.get(prefix)
        if app is None:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"no such mount"})
            return
        inner = dict(scope)
        inner["path"] = "/" + rest
        raw = scope.get("raw_path") or b""
        inner["raw_path"] = b"/" + raw.lstrip(b"/").partition(b"/")[2]
        await app(inner, receive, send)


class LiveService:
    """uvicorn serving a ``Router`` in a daemon thread."""

    def __init__(self, app: App | None = None) -> None:
        """Serve ``app`` at the root, or (without one) a ``Router`` to ``mount`` apps on."""
        self.router = Router()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._names = itertools.count(1)
        config = uvicorn.Config(
            app or self.router, host="127.0.0.1", port=self.port, log_level="warning",
            lifespan="on" if app is None else "off",
        )  # fmt: skip
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> LiveService:
        self.thread.start()
        until = deadline(20)
        while not self.server.started:
            if time.monotonic() > until or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def mount(self, app: App) -> str:
        name = f"m{next(self._names)}"
        self.router.apps[name] = app
        return f"http://127.0.0.1:{self.port}/{name}"

    def unmount(self, url: str) -> None:
        self.router.apps.pop(url.rsplit("/", 1)[1], None)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=scaled(10))
