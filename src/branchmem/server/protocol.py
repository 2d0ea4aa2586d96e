"""``branchmem serve``'s HTTP protocol: the direct reads answered before any ASGI task.

A read an agent makes every turn (``visible``, ``search`` ...) costs the server, beyond the
call itself, uvicorn's task and request cycle, the ASGI layers around the app (uvicorn's
proxy headers, FastAPI's and Starlette's, ``Guard``, ``DirectReads``) and a socket write for
the head and another for the body: ~0.12-0.23 ms of server CPU per 40-record ``visible``
beyond what this protocol pays, measured side by side (docs/scaling.md). When the direct path
would answer a request on the event loop (``direct.py``: a plainly valid read, a cached
key, the store free), this protocol asks it as soon as the request's head is parsed, writes
the bytes uvicorn would write for that answer in one write, and makes no task.

Everything else goes to the ASGI app unchanged: a request with a body, ``Expect`` or a
closing connection; one ``Guard`` would refuse; one met by uvicorn's concurrency limit or by
backpressure; forwarded headers while the access log is on (the log names the forwarded
client); any answer the direct path does not give on the loop. An unexpected error in the
direct path sends the request there too (a read changes nothing, so running it again there
is safe, and the error is reported as any other). ``tests/test_server_protocol.py`` holds
the bytes and the log lines to uvicorn's own.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .direct import PLANNED, DirectReader
from .guard import refusal

FORWARDED = frozenset({b"x-forwarded-for", b"x-forwarded-proto"})
WITH_A_BODY = frozenset({b"content-length", b"transfer-encoding"})


def direct_protocol(app: Any) -> type[asyncio.Protocol] | None:
    """uvicorn's httptools protocol, answering ``app``'s direct reads itself; None when the
    app has no direct path (``create_app(direct_reads=False)``) or this uvicorn has no
    httptools protocol to extend (``uvicorn.run`` then picks its own)."""
    found: DirectReader | None = getattr(app.state, "direct_reader", None)
    if found is None:
        return None
    reader = found
    try:
        from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
        from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string
    except ImportError:
        return None
    if not hasattr(HttpToolsProtocol, "_start_asgi_task"):  # an older or newer uvicorn
        return None

    class DirectReadProtocol(HttpToolsProtocol):
        def _start_asgi_task(self, cycle: Any, app: Any) -> None:
            if app is self.app and self._answered(cycle):
                return
            super()._start_asgi_task(cycle, app)

        def _answered(self, cycle: Any) -> bool:
            """Whether the direct path answered the request (its bytes are written)."""
            scope = cycle.scope
            logged = self.access_log and self.access_logger.isEnabledFor(logging.INFO)
            if (
                scope["method"] != "GET"
                or not scope["path"].startswith("/v1/ns/")  # the API's reads alone
                or not cycle.keep_alive
                or cycle.waiting_for_100_continue
                or self.flow.write_paused
            ):
                return False
            for name, _ in scope["headers"]:
                if name in WITH_A_BODY or (logged and name in FORWARDED):
                    return False
            if refusal(scope) is not None:
                return False
            planned = reader.plan(scope)
            if planned is None:
                return False
            try:
                response = reader.on_loop(*planned)
            except Exception:  # the ASGI app runs the read again and reports the error
                return False
            if response is None:  # not called: the app's thread answers it, planned once
                scope[PLANNED] = planned
                return False
            if response.background is not None or not any(
                name == b"content-length" for name, _ in response.raw_headers
            ):
                return False  # uvicorn would chunk it or run a task after it: left to uvicorn
            head: list[bytes | memoryview] = [STATUS_LINE[response.status_code]]
            for name, value in (*self.server_state.default_headers, *response.raw_headers):
                head += (name.lower(), b": ", value, b"\r\n")
            reader.served[planned[0]] += 1
            if logged:
                self.access_logger.info(
                    '%s - "%s %s HTTP/%s" %d',
                    get_client_addr(scope),
                    scope["method"],
                    get_path_with_query_string(scope),
                    scope["http_version"],
                    response.status_code,
                )
            head += (b"\r\n", response.body)
            self.transport.write(b"".join(head))
            cycle.response_complete = True
            self.on_response_complete()
            return True

    return DirectReadProtocol
