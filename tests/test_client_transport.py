"""How ``Client`` reaches workers: kept-alive connections, and what a broken one means.

A scripted loopback server answers each request as the test says: answer and keep the
connection, answer and close it, or read the request and drop the connection unanswered
(the worker died mid-call). A read is sent again; a write that may have been applied is not.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator

import pytest

pytest.importorskip("httpx", reason="the client needs the 'client' extra")

import httpx

from branchmem.client import Client, Connections
from branchmem.errors import Unavailable

HEADS = json.dumps({"heads": {"t1": "u1"}}).encode()


class Scripted:
    """A loopback HTTP/1.1 server; ``script`` says how to treat each request, in order:
    ``keep`` (answer, keep the connection), ``close`` (answer, then close) or ``drop``
    (close without answering). Later requests are kept."""

    def __init__(self, *script: str) -> None:
        self.script = list(script)
        self.requests: list[str] = []
        self.connections = 0
        self.closed = threading.Event()  # set when the server ends a connection
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            self._answer(connection)
        finally:
            connection.close()
            self.closed.set()

    def _answer(self, connection: socket.socket) -> None:
        with connection.makefile("rb") as incoming:
            while True:
                line = incoming.readline()
                if not line:
                    return
                length = 0
                while (header := incoming.readline()) not in (b"\r\n", b""):
                    name, _, value = header.decode("latin-1").partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                incoming.read(length)
                self.requests.append(line.decode("latin-1").split()[0])
                how = self.script.pop(0) if self.script else "keep"
                if how == "drop":
                    return
                status = b"204 No Content" if line.startswith(b"POST") else b"200 OK"
                body = b"" if line.startswith(b"POST") else HEADS
                connection.sendall(
                    b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\n"
                    b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
                )
                if how == "close":
                    return

    def close(self) -> None:
        with contextlib.suppress(OSError):  # wakes the accepting thread, so the port closes
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()


@pytest.fixture
def scripted() -> Iterator[list[Scripted]]:
    made: list[Scripted] = []
    yield made
    for server in made:
        server.close()


def serve(made: list[Scripted], *script: str) -> Scripted:
    made.append(Scripted(*script))
    return made[-1]


def test_calls_share_one_kept_alive_connection(scripted: list[Scripted]) -> None:
    server = serve(scripted)
    with Client(server.url, "bm_k_s") as client:
        assert client.heads() == {"t1": "u1"}
        assert client.heads() == {"t1": "u1"}
    assert (server.requests, server.connections) == (["GET", "GET"], 1)


def test_a_connection_the_server_closed_is_not_reused(scripted: list[Scripted]) -> None:
    """As when a worker ends a kept-alive connection that sat idle past its timeout."""
    server = serve(scripted, "close")
    with Client(server.url, "bm_k_s", retries=1) as client:
        client.heads()
        assert server.closed.wait(5)
        client.heads()  # retries=1 and one worker: a stale connection would fail this call
    assert (server.requests, server.connections) == (["GET", "GET"], 2)


def test_a_read_whose_connection_breaks_is_sent_again(scripted: list[Scripted]) -> None:
    server = serve(scripted, "drop")
    with Client(server.url, "bm_k_s") as client:
        assert client.heads() == {"t1": "u1"}
    assert server.requests == ["GET", "GET"]


def test_a_write_whose_connection_breaks_is_not_sent_again(scripted: list[Scripted]) -> None:
    server = serve(scripted, "drop")
    with (
        Client(server.url, "bm_k_s") as client,
        pytest.raises(Unavailable, match="may or may not have been applied"),
    ):
        client.supersede("f2", "f1")
    assert server.requests == ["POST"]


def test_a_worker_that_refuses_connections_is_skipped(scripted: list[Scripted]) -> None:
    dead = serve(scripted)
    dead.close()  # nothing listens on its port any more
    live = serve(scripted)
    with Client([dead.url, live.url], "bm_k_s") as client:
        client.supersede("f2", "f1")  # never reached the dead one: safe to send on
        assert client.failovers == 1
    assert live.requests == ["POST"]


def test_tls_a_proxy_or_a_given_transport_go_through_httpx(
    monkeypatch: pytest.MonkeyPatch, scripted: list[Scripted]
) -> None:
    assert Connections.serves("http://127.0.0.1:8765/prefix")
    assert not Connections.serves("https://127.0.0.1:8765")
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    assert not Connections.serves("http://127.0.0.1:8765")
    monkeypatch.delenv("HTTP_PROXY")
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, content=HEADS)

    server = serve(scripted)
    with Client(server.url, "bm_k_s", transport=httpx.MockTransport(answer)) as client:
        assert client.heads(namespace="a/b") == {"t1": "u1"}
    assert seen == [f"{server.url}/v1/ns/a%2Fb/heads"] and server.requests == []
