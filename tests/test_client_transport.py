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
import typing
from collections.abc import Iterator

import pytest

pytest.importorskip("httpx", reason="the client needs the 'client' extra")

import httpx

from branchmem.client import Client
from branchmem.errors import InvalidInput, Unavailable
from branchmem.keepalive import Connections
from timing import scaled

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
def servers() -> Iterator[list[Scripted | Canned]]:
    """The test's loopback servers, closed after it."""
    made: list[Scripted | Canned] = []
    yield made
    for server in made:
        server.close()


def serve(made: list[Scripted | Canned], *script: str) -> Scripted:
    server = Scripted(*script)
    made.append(server)
    return server


def test_calls_share_one_kept_alive_connection(servers: list[Scripted | Canned]) -> None:
    server = serve(servers)
    with Client(server.url, "bm_k_s") as client:
        assert client.heads() == {"t1": "u1"}
        assert client.heads() == {"t1": "u1"}
    assert (server.requests, server.connections) == (["GET", "GET"], 1)


def test_a_connection_the_server_closed_is_not_reused(servers: list[Scripted | Canned]) -> None:
    """As when a worker ends a kept-alive connection that sat idle past its timeout."""
    server = serve(servers, "close")
    with Client(server.url, "bm_k_s", retries=1) as client:
        client.heads()
        assert server.closed.wait(5)
        client.heads()  # retries=1 and one worker: a stale connection would fail this call
    assert (server.requests, server.connections) == (["GET", "GET"], 2)


def test_a_read_whose_connection_breaks_is_sent_again(servers: list[Scripted | Canned]) -> None:
    server = serve(servers, "drop")
    with Client(server.url, "bm_k_s") as client:
        assert client.heads() == {"t1": "u1"}
    assert server.requests == ["GET", "GET"]


def test_a_write_whose_connection_breaks_is_not_sent_again(
    servers: list[Scripted | Canned],
) -> None:
    server = serve(servers, "drop")
    with (
        Client(server.url, "bm_k_s") as client,
        pytest.raises(Unavailable, match="may or may not have been applied"),
    ):
        client.supersede("f2", "f1")
    assert server.requests == ["POST"]


def test_a_worker_that_refuses_connections_is_skipped(servers: list[Scripted | Canned]) -> None:
    dead = serve(servers)
    dead.close()  # nothing listens on its port any more
    live = serve(servers)
    with Client([dead.url, live.url], "bm_k_s") as client:
        client.supersede("f2", "f1")  # never reached the dead one: safe to send on
        assert client.failovers == 1
    assert live.requests == ["POST"]


def test_tls_a_proxy_or_a_given_transport_go_through_httpx(
    monkeypatch: pytest.MonkeyPatch, servers: list[Scripted | Canned]
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

    server = serve(servers)
    with Client(server.url, "bm_k_s", transport=httpx.MockTransport(answer)) as client:
        assert client.heads(namespace="a/b") == {"t1": "u1"}
    assert seen == [f"{server.url}/v1/ns/a%2Fb/heads"] and server.requests == []


class Canned:
    """A loopback server that reads each request's head (and its ``Content-Length`` body)
    and writes the next of ``answers`` byte for byte (``None``: closes the connection
    instead), on one kept-alive connection unless ``keep`` is False; once they are all
    written it stops listening."""

    def __init__(self, *answers: bytes | None, keep: bool = True) -> None:
        self.answers = list(answers)
        self.keep = keep
        self.connections = 0
        self.heads: list[bytes] = []
        self.bodies: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with self.listener:
            while self.answers:
                connection, _ = self.listener.accept()
                self.connections += 1
                with connection, connection.makefile("rb") as incoming:
                    self._answer(connection, incoming)

    def _answer(self, connection: socket.socket, incoming: typing.BinaryIO) -> None:
        while self.answers:
            head = b""
            while (line := incoming.readline()) not in (b"\r\n", b""):
                head += line
            if not head:
                return
            self.heads.append(head)
            length = next(
                (int(h.split(b":")[1]) for h in head.split(b"\r\n")
                 if h.lower().startswith(b"content-length:")),
                0,
            )  # fmt: skip
            self.bodies.append(incoming.read(length))
            answer = self.answers.pop(0)
            if answer is None:
                return
            connection.sendall(answer)
            if not self.keep:
                return

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.close()


def test_answers_are_read_by_their_framing(servers: list[Scripted | Canned]) -> None:
    """By length, by chunks (with an extension and a trailer), with no body (204), after an
    interim 100, and to the end of the connection when neither length nor chunks: each
    answer whole, and the kept-alive connection ready for the next."""
    server = Canned(
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3;note=x\r\nabc\r\n2\r\nde\r\n0\r\nTrailer-Field: 1\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\nX-A: 1\r\nX-A: 2\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok",
        b"HTTP/1.0 200 OK\r\n\r\nto the end",
    )
    servers.append(server)
    connections = Connections(scaled(5), {"Authorization": "Bearer k"})
    got = [connections.send(server.url, "GET", f"/r{i}", None, {}) for i in range(4)]
    assert got == [(200, b"hello"), (200, b"abcde"), (204, b""), (201, b"ok")]
    assert connections.send(server.url, "POST", "/w", b"{}", {"X-B": "2"}) == (200, b"to the end")
    assert [h.split(b"\r\n")[0] for h in server.heads] == [
        b"GET /r0 HTTP/1.1", b"GET /r1 HTTP/1.1", b"GET /r2 HTTP/1.1", b"GET /r3 HTTP/1.1",
        b"POST /w HTTP/1.1",
    ]  # fmt: skip
    assert b"Host: " + server.url[7:].encode() in server.heads[0]
    assert b"Authorization: Bearer k" in server.heads[0] and b"X-B: 2" in server.heads[4]
    assert server.bodies[4] == b"{}"
    connections.close()


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/2 200 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        None,
    ],
    ids=["version", "length", "framing", "chunk-size", "header", "cut-short", "dropped"],
)
def test_an_answer_that_is_not_http_1_1_breaks_the_call(
    servers: list[Scripted | Canned], answer: bytes | None
) -> None:
    """A read is then sent again (here to a worker that answers), as for a dropped one."""
    server = Canned(answer, answer, answer, keep=False)  # each connection that asks
    servers.append(server)
    good = Canned(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(HEADS), HEADS))
    servers.append(good)
    connections = Connections(scaled(5), {})
    with pytest.raises(Exception) as failed:
        connections.send(server.url, "GET", "/r", None, {})
    assert type(failed.value).__name__ == "Broken"
    with Client([server.url, good.url], "bm_k_s", retries=2, timeout=scaled(5)) as client:
        assert client.heads() == {"t1": "u1"}  # the preferred worker twice, then the next
        assert client.failovers == 1
    connections.close()


@pytest.mark.parametrize(
    ("target", "headers"),
    [("/r x", {}), ("/r\n", {}), ("/r", {"X-A": "v\r\nInjected: 1"}), ("/r", {"X:A": "v"})],
)
def test_a_request_that_would_split_is_refused_before_sending(
    servers: list[Scripted | Canned], target: str, headers: dict[str, str]
) -> None:
    server = Canned(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    servers.append(server)
    connections = Connections(scaled(5), {})
    with pytest.raises(InvalidInput):
        connections.send(server.url, "GET", target, None, headers)
    assert connections.send(server.url, "GET", "/ok", None, {}) == (200, b"")
    assert len(server.heads) == 1
    connections.close()


def test_a_large_answer_is_read_whole(servers: list[Scripted | Canned]) -> None:
    """Megabytes by length and by chunks (a page of long records), each byte in place."""
    body = bytes(range(256)) * (12 * 1024)  # 3 MiB
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:1], body[1:]))
    server = Canned(
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%s0\r\n\r\n" % chunks,
    )
    servers.append(server)
    connections = Connections(scaled(5), {})
    assert connections.send(server.url, "GET", "/a", None, {}) == (200, body)
    assert connections.send(server.url, "GET", "/b", None, {}) == (200, body)
    assert server.connections == 1
    connections.close()


@pytest.mark.parametrize(
    ("first", "got"),
    [
        (  # no request here asks for an upgrade; what would follow one is not HTTP/1.1
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: other\r\nConnection: Upgrade\r\n\r\n",
            (101, b""),
        ),
        (  # bytes no request asked for would be read as the next answer
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n",
            (200, b"ok"),
        ),
    ],
    ids=["switched-protocols", "bytes-past-the-answer"],
)
def test_a_connection_its_answer_left_unusable_is_not_reused(
    servers: list[Scripted | Canned], first: bytes, got: tuple[int, bytes]
) -> None:
    """The next request opens another connection."""
    server = Canned(first, b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nyes")
    servers.append(server)
    connections = Connections(scaled(5), {})
    assert connections.send(server.url, "GET", "/a", None, {}) == got
    assert connections.send(server.url, "GET", "/b", None, {}) == (200, b"yes")
    assert server.connections == 2
    connections.close()
