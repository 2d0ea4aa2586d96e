"""``branchmem serve``'s HTTP protocol (``server/protocol.py``) writes what uvicorn writes.

Two live servers over one store: one with the protocol that answers direct reads before
any ASGI task, one with uvicorn's own httptools protocol. Each request is sent to both as
raw bytes on a kept-alive connection; the answers must be the same bytes (the ``date``
header aside), and the protocol must have answered exactly the requests it is meant to.
"""

from __future__ import annotations

import logging
import re
import select
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
pytest.importorskip("httptools", reason="the protocol extends uvicorn's httptools protocol")

from branchmem import Memory
from branchmem.server import KeyRing, create_app, keys
from branchmem.server.protocol import direct_protocol
from branchmem.testing.conformance import chengdu
from test_server_harness import LiveService
from timing import deadline, scaled

NS = "/v1/ns/default"
DATE = re.compile(rb"\r\ndate: [^\r]*")


class Servers:
    """The store behind the direct protocol and behind uvicorn's own; ``answered`` lists,
    per request the protocol saw, whether it answered it itself."""

    def __init__(self) -> None:
        self.memory = Memory()
        self.key, _ = KeyRing(self.memory).create("acme", ["default"])
        chengdu(self.memory)
        self.answered: list[bool] = []
        app = create_app(self.memory)
        self.reader = app.state.direct_reader
        protocol = direct_protocol(app)
        assert protocol is not None, "the installed uvicorn has no protocol to extend"
        answered = self.answered

        class Recording(protocol):  # type: ignore[valid-type,misc]
            def _answered(self, cycle: Any) -> bool:
                answered.append(super()._answered(cycle))
                return answered[-1]

        self.direct = LiveService(app, http=Recording).start()
        self.reference = LiveService(create_app(self.memory), http="httptools").start()
        self.sockets = [self.connect(self.direct), self.connect(self.reference)]

    @staticmethod
    def connect(service: LiveService) -> socket.socket:
        return socket.create_connection(("127.0.0.1", service.port), timeout=scaled(10))

    def request(self, target: str, *, key: str | None = "", extra: bytes = b"") -> bytes:
        key = self.key if key == "" else key
        auth = f"Authorization: Bearer {key}\r\n".encode() if key else b""
        return f"GET {target} HTTP/1.1\r\nHost: t\r\n".encode() + auth + extra + b"\r\n"

    def both(self, raw: bytes, answers: int = 1) -> bytes:
        """Send ``raw`` to both servers; the one answer (``answers`` responses) both gave."""
        got = [read_responses(sock, raw, answers) for sock in self.sockets]
        assert got[0] == got[1]
        return got[0]

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()
        self.direct.stop()
        self.reference.stop()
        self.memory.close()


def read_responses(sock: socket.socket, raw: bytes, answers: int) -> bytes:
    """The ``answers`` responses to ``raw``, read by their Content-Length, dates blanked."""
    sock.sendall(raw)
    data = b""
    out = []
    while len(out) < answers:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, "the server closed the connection"
            data += chunk
        head, _, data = data.partition(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))  # type: ignore[union-attr]
        while len(data) < length:
            data += sock.recv(65536)
        out.append(DATE.sub(b"", head) + b"\r\n\r\n" + data[:length])
        data = data[length:]
    return b"".join(out)


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[Servers]:
    monkeypatch.setattr(keys, "CACHE_SECONDS", 3600.0)  # however slow the machine is today
    made = Servers()
    made.both(made.request(f"{NS}/heads"))  # the first request reads the key's row
    made.answered.clear()
    for sock in made.sockets:  # fresh connections: an idle one closes after 5 s (uvicorn's
        sock.close()  # keep-alive timeout), which a loaded machine can reach during setup
    made.sockets = [made.connect(made.direct), made.connect(made.reference)]
    yield made
    made.close()


ANSWERED = [
    f"{NS}/visible?anchor=a2b",
    f"{NS}/visible?anchor=a2b&limit=1",
    f"{NS}/visible?anchor=nope",  # the library's refusal, as the same problem document
    f"{NS}/search?query=moving&anchor=a2b&k=3",
    f"{NS}/records/f-chengdu/explain?anchor=a2b",
    f"{NS}/current?key=city&anchor=a2b",
    f"{NS}/events/u2",
    f"{NS}/records/f-chengdu",
    f"{NS}/heads/u1",
]


@pytest.mark.parametrize("target", ANSWERED)
def test_a_direct_read_is_answered_in_the_protocol_with_uvicorns_bytes(
    servers: Servers, target: str
) -> None:
    answer = servers.both(servers.request(target))
    assert answer.startswith(b"HTTP/1.1 ") and b"\r\nserver: uvicorn\r\n" in answer
    assert servers.answered == [True]


HANDED_ON: list[tuple[str, str | None, bytes]] = [
    (f"{NS}/visible?anchor=a2b", None, b""),  # no key
    (f"{NS}/visible?anchor=a2b&unknown=1", "", b""),  # FastAPI names the parameter
    (f"{NS}/visible?anchor=a2b&anchor=a2", "", b""),  # Guard refuses a repeated parameter
    (f"{NS}/visible?anchor=a%002b", "", b""),  # Guard refuses a NUL
    (f"{NS}/events/a2b/path", "", b""),  # a list that grows with history: a thread
    (f"{NS}/visible?anchor=a2b", "", b"Content-Length: 0\r\n"),  # a body: Guard counts it
    (f"{NS}/visible?anchor=a2b", "", b"Expect: 100-continue\r\n"),
    (f"{NS}/visible?anchor=a2b", "", b"X-Forwarded-For: 10.1.2.3\r\n"),  # logged as sent
    ("/healthz", None, b""),
]


@pytest.mark.parametrize(("target", "key", "extra"), HANDED_ON, ids=lambda v: str(v))
def test_any_other_request_goes_through_the_app_unchanged(
    servers: Servers, target: str, key: str | None, extra: bytes, caplog: Any
) -> None:
    with caplog.at_level(logging.INFO, logger="uvicorn.access"):
        servers.both(servers.request(target, key=key, extra=extra))
    assert True not in servers.answered


def test_a_closing_connection_goes_through_the_app(servers: Servers) -> None:
    for service in (servers.direct, servers.reference):
        with Servers.connect(service) as sock:
            raw = servers.request(f"{NS}/visible?anchor=a2b", extra=b"Connection: close\r\n")
            answer = read_responses(sock, raw, 1)
            assert b"\r\nconnection: close\r\n" in answer and sock.recv(1) == b""
    assert servers.answered == [False]


def test_pipelined_requests_are_answered_in_order(servers: Servers) -> None:
    """A read that takes a thread, then direct reads: the direct answers wait their turn."""
    raw = b"".join(
        servers.request(target)
        for target in (f"{NS}/events/a2b/path", f"{NS}/visible?anchor=a2b", f"{NS}/events/u2")
    )
    answer = servers.both(raw, answers=3)
    assert answer.count(b"HTTP/1.1 200 OK") == 3
    assert servers.answered == [False, True, True]


def test_the_access_log_names_a_direct_read_as_uvicorn_does(servers: Servers, caplog: Any) -> None:
    target = f"{NS}/visible?anchor=a2b&limit=1"
    lines = []
    for sock in servers.sockets:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="uvicorn.access"):
            read_responses(sock, servers.request(target), 1)
        lines.append([re.sub(r":\d+ - ", ":<port> - ", r.getMessage()) for r in caplog.records])
    assert lines[0] == lines[1] == [f'127.0.0.1:<port> - "GET {target} HTTP/1.1" 200']
    assert servers.answered == [True]


def test_a_read_while_a_write_holds_the_store_goes_through_the_app(servers: Servers) -> None:
    """The protocol never waits for the store's lock: the app's route takes a thread, and
    nothing is answered before the lock is released (on a connection of its own, so no
    keep-alive timeout can close it meanwhile)."""
    with Servers.connect(servers.direct) as sock:
        with servers.memory._lock:
            sock.sendall(servers.request(f"{NS}/visible?anchor=a2b"))
            readable, _, _ = select.select([sock], [], [], 0.3)
            early = sock.recv(65536) if readable else b""
        assert early == b"", early
        assert read_responses(sock, b"", 1).startswith(b"HTTP/1.1 200 OK")
    assert servers.answered == [False]


def test_no_protocol_for_an_app_without_direct_reads() -> None:
    with Memory() as memory:
        assert direct_protocol(create_app(memory, direct_reads=False)) is None


def test_an_unexpected_error_goes_through_the_app_and_is_its_500(
    servers: Servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read changes nothing: the app runs it again and answers its own problem document."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(servers.memory, "visible", broken)
    answer = servers.both(servers.request(f"{NS}/visible?anchor=a2b"))
    assert answer.startswith(b"HTTP/1.1 500 ")
    assert servers.answered == [False]


def test_a_read_the_protocol_hands_to_a_thread_is_planned_once(
    servers: Servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The protocol leaves its plan in the scope; the app's direct layer answers from it."""
    planned: list[str] = []
    plan = servers.reader.plan

    def counted(scope: Any) -> Any:
        planned.append(scope["path"])
        return plan(scope)

    monkeypatch.setattr(servers.reader, "plan", counted)
    answer = servers.both(servers.request(f"{NS}/events/a2b/path"))
    assert answer.startswith(b"HTTP/1.1 200 OK")
    assert servers.answered == [False]
    # once, by the protocol: the reference app has a reader of its own
    assert planned == [f"{NS}/events/a2b/path"]


def test_a_key_in_use_is_read_again_on_the_loop_and_a_deleted_one_stops_working(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The service's own ring (``AfterTheAnswer``) through the protocol: a key's row is read
    again on the event loop's thread while every request is answered directly, and a key
    another worker deletes is refused once the copy is read again (by the refresh alone:
    the copy never ages out here, however long a loaded machine takes between requests)."""
    monkeypatch.setattr(keys, "CACHE_SECONDS", 3600.0)
    monkeypatch.setattr(keys, "REFRESH_SECONDS", 0.2)
    memory = Memory()
    chengdu(memory)
    app = create_app(memory)
    ring = app.state.keys
    key, grant = ring.create("acme", ["default"])
    readers: list[int] = []
    refresh = ring._refresh

    def recorded(key_id: str) -> None:
        readers.append(threading.get_ident())
        refresh(key_id)

    monkeypatch.setattr(ring, "_refresh", recorded)
    service = LiveService(app, http=direct_protocol(app)).start()
    raw = f"GET {NS}/visible?anchor=a2b HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\n\r\n"
    try:
        with socket.create_connection(("127.0.0.1", service.port), timeout=scaled(10)) as sock:
            first = read_responses(sock, raw.encode(), 1)  # reads the row: through the app
            assert first.startswith(b"HTTP/1.1 200 ")
            until = deadline(30)
            sent = 0
            while len(readers) < 3 and time.monotonic() < until:
                assert read_responses(sock, raw.encode(), 1).startswith(b"HTTP/1.1 200 ")
                sent += 1
                time.sleep(0.02)
            assert len(readers) >= 3, "the row was not read again"
            assert set(readers) == {service.thread.ident}  # on the loop, not in a thread
            assert app.state.direct_reads["visible"] == sent  # none waited for the store
            KeyRing(memory).delete(grant.key_id)  # another worker
            status = b""
            while time.monotonic() < until:
                status = read_responses(sock, raw.encode(), 1)[:12]
                if status != b"HTTP/1.1 200":
                    break
                time.sleep(0.02)
            assert status == b"HTTP/1.1 401"
    finally:
        service.stop()
        memory.close()
