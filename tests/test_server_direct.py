"""The direct reads (``server/direct.py``) answer exactly what the FastAPI routes answer.

Two apps serve one store: one as built (plainly valid reads answered directly), one with
``direct_reads=False`` (every request through its FastAPI route). Each request goes to both;
status, headers and body must be the same bytes, and the direct app must have answered the
plainly valid ones itself and handed every other one on.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")

from fastapi.testclient import TestClient

from branchmem import Memory
from branchmem.server import KeyRing, create_app, keys
from branchmem.server.direct import reads, reads_by_last_segment
from branchmem.testing.conformance import chengdu
from timing import scaled

NS = "/v1/ns/default"


class Pair:
    """The same store behind a direct app and a FastAPI-only app, with one key."""

    def __init__(self) -> None:
        self.memory = Memory()
        ring = KeyRing(self.memory)
        self.key, _ = ring.create("acme", ["default"])
        self.other, _ = ring.create("globex", ["globex"])
        chengdu(self.memory)
        self.memory.context("a2b", session="s1")
        self.direct = create_app(self.memory)
        self.reference = create_app(self.memory, direct_reads=False)
        self.clients = [
            TestClient(app, raise_server_exceptions=False) for app in (self.direct, self.reference)
        ]

    @property
    def served(self) -> int:
        return sum(self.direct.state.direct_reads.values())

    def both(self, path: str, key: str | None = "", **given: Any) -> tuple[int, bytes]:
        """The one answer both apps gave (status, body); fails when they differ."""
        key = self.key if key == "" else key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        answers = [client.get(path, headers=headers, **given) for client in self.clients]
        direct, reference = answers
        assert direct.status_code == reference.status_code, (direct.text, reference.text)
        assert direct.headers.items() == reference.headers.items()
        assert direct.content == reference.content
        return direct.status_code, direct.content


@pytest.fixture
def pair(monkeypatch: pytest.MonkeyPatch) -> Iterator[Pair]:
    monkeypatch.setattr(keys, "CACHE_SECONDS", 3600.0)  # however slow the machine is today
    made = Pair()
    made.both(f"{NS}/heads")  # the first request reads the key's row; later ones hit the cache
    yield made
    made.memory.close()


PLAIN: list[tuple[str, dict[str, str]]] = [
    ("/visible", {"anchor": "a2b"}),
    ("/visible", {"anchor": "a2b", "cross_tree": "false", "include_superseded": "true",
                  "include_stale": "false", "limit": "1000"}),
    ("/visible", {"anchor": "a2", "limit": "1"}),
    ("/visible", {"anchor": "a2", "mode": "compat", "kind": "fact"}),
    ("/visible", {}),
    ("/search", {"query": "moving", "anchor": "a2b", "k": "3"}),
    ("/records/f-chengdu/explain", {"anchor": "a2b"}),
    ("/current", {"key": "city", "anchor": "a2b"}),
    ("/current", {"key": "nothing", "anchor": "a2b"}),
    ("/stale", {"anchor": "a2b"}),
    ("/diff", {"anchor_a": "a2", "anchor_b": "a2b"}),
    ("/diff", {"anchor_a": "a2", "anchor_b": "a2b", "mode": "compat", "include_stale": "true"}),
    ("/events/u2", {}),
    ("/events/a2b/path", {}),
    ("/heads", {}),
    ("/heads/u1", {}),
    ("/records/f-chengdu", {}),
    ("/records/f-chengdu", {"revision": "1"}),
    ("/items/u2/dependents", {}),
    ("/deliveries", {"session": "s1"}),
    ("/stale-deliveries", {"session": "s1", "anchor": "a2"}),
    ("/blame", {"session": "s1", "delivery": "19"}),  # the context given at setup
    ("/blame", {"session": "s1", "delivery": "19", "line": "1"}),
    ("/blame", {"session": "s1", "delivery": "999999"}),  # none: the same problem document
    ("/repair-queue", {}),
    ("/audit", {}),
    ("/report", {}),
    ("/conversations", {}),
    ("/records/f-chengdu/history", {}),
    ("/trees", {}),
    ("/trees/u1", {}),
    ("/explanations", {"anchor": "a2", "tree": "u1"}),
    ("/explanations", {"anchor": "a2b", "cross_tree": "true", "limit": "2"}),
    ("/events/nope", {}),  # the library refuses: the same problem document
    ("/visible", {"anchor": "nope"}),
]  # fmt: skip


@pytest.mark.parametrize(("path", "query"), PLAIN, ids=lambda v: str(v))
def test_a_plainly_valid_read_is_answered_directly_and_alike(
    pair: Pair, path: str, query: dict[str, str]
) -> None:
    before = pair.served
    pair.both(NS + path, params=query)
    assert pair.served == before + 1


HANDED_ON: list[tuple[str, str | None, dict[str, str]]] = [
    ("/visible", None, {"anchor": "a2b"}),  # no key
    ("/visible", "bm_nothere_secret", {"anchor": "a2b"}),  # an unknown key: read, then 401
    ("/visible", "not-a-key", {"anchor": "a2b"}),
    ("/visible", "other", {"anchor": "a2b"}),  # a key of another tenant: 403
    ("/visible", "", {"anchor": ""}),
    ("/visible", "", {"anchor": "x" * 513}),
    ("/visible", "", {"anchor": "a2b", "cross_tree": "1"}),  # pydantic reads it as true
    ("/visible", "", {"anchor": "a2b", "cross_tree": "maybe"}),
    ("/visible", "", {"anchor": "a2b", "mode": "lenient"}),
    ("/visible", "", {"anchor": "a2b", "limit": "0"}),
    ("/visible", "", {"anchor": "a2b", "limit": "1001"}),
    ("/visible", "", {"anchor": "a2b", "limit": "010"}),
    ("/visible", "", {"anchor": "a2b", "cursor": "bogus"}),
    ("/visible", "", {"anchor": "a2b", "unknown": "1"}),
    ("/search", "", {"anchor": "a2b"}),  # query is required
    ("/search", "", {"query": "moving", "anchor": "a2b", "k": "-1"}),
    ("/audit", "", {"since": "1.5"}),  # not read directly
]


@pytest.mark.parametrize(("path", "key", "query"), HANDED_ON, ids=lambda v: str(v))
def test_any_other_read_is_answered_by_its_fastapi_route(
    pair: Pair, path: str, key: str | None, query: dict[str, str]
) -> None:
    before = pair.served
    pair.both(NS + path, key=pair.other if key == "other" else key, params=query)
    assert pair.served == before


def test_a_namespace_or_id_that_is_not_one_segment_is_handed_on(pair: Pair) -> None:
    before = pair.served
    for path in (f"{NS}/events/" + "x" * 1537, f"{NS}/events/", "/v1/ns/de%2Efault/heads"):
        pair.both(path)
    assert pair.served == before


def test_the_cursor_a_direct_page_hands_out_reads_the_next_page(pair: Pair) -> None:
    status, first = pair.both(f"{NS}/visible", params={"anchor": "a2b", "limit": "1"})
    cursor = json.loads(first)["next_cursor"]
    assert status == 200 and cursor
    before = pair.served
    pair.both(f"{NS}/visible", params={"anchor": "a2b", "limit": "1", "cursor": cursor})
    assert pair.served == before + 1


def test_every_read_of_the_table_is_answered_directly(pair: Pair) -> None:
    for path, query in PLAIN:
        pair.both(NS + path, params=query)
    assert set(pair.direct.state.direct_reads) == {read.op.name for read in reads()}


def test_a_read_while_a_write_holds_the_store_waits_in_a_thread(pair: Pair) -> None:
    """The event loop never blocks on the store's lock: the read takes a thread."""
    answered: list[int] = []

    def read() -> None:
        response = client.get(
            f"{NS}/visible", params={"anchor": "a2b"},
            headers={"Authorization": f"Bearer {pair.key}"},
        )  # fmt: skip
        answered.append(response.status_code)

    with TestClient(pair.direct) as client:  # one event loop for every request
        with pair.memory._lock:
            reader = threading.Thread(target=read)
            reader.start()
            time.sleep(0.2)
            assert answered == []  # it cannot be answered while the lock is held
            assert client.get("/healthz").status_code == 200  # and the loop still serves
        reader.join(timeout=scaled(10))
    assert answered == [200]


def test_the_direct_path_reads_the_query_guard_parsed_and_checked(pair: Pair) -> None:
    """Guard parses the query string once and leaves the pairs in the scope; the direct path
    answers from them instead of parsing it again (here the raw query string is empty)."""
    from collections import Counter

    from branchmem.server.direct import DirectReader, DirectReads
    from branchmem.server.guard import QUERY_PAIRS

    async def handed_on(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("a plainly valid read was handed on")

    direct = DirectReads(handed_on, DirectReader(pair.direct.state, Counter()))
    scope = {
        "type": "http", "method": "GET", "path": f"{NS}/visible", "root_path": "",
        "query_string": b"", QUERY_PAIRS: [("anchor", "a2b"), ("limit", "1")],
        "headers": [(b"authorization", f"Bearer {pair.key}".encode())],
    }  # fmt: skip
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    pair.both(f"{NS}/visible", params={"anchor": "a2b"})  # the key is now cached
    asyncio.run(direct(scope, receive, send))
    page = json.loads(sent[1]["body"])
    assert sent[0]["status"] == 200 and len(page["items"]) == 1 and page["next_cursor"]


def test_a_key_in_use_is_read_again_on_the_loop_and_a_deleted_one_stops_working(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The service's own ring (``AfterTheAnswer``) under uvicorn: a key's row is read again
    on the event loop's thread while every request is answered directly, and a key another
    worker deletes is refused once the copy is read again (by the refresh alone: the copy
    never ages out here, however long a loaded machine takes between requests)."""
    pytest.importorskip("uvicorn", reason="the service needs the 'server' extra")
    import socket

    from test_server_harness import LiveService
    from timing import deadline

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
    service = LiveService(app).start()
    raw = f"GET {NS}/visible?anchor=a2b HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\n\r\n"

    def status(sock: socket.socket) -> bytes:
        """The status line of the answer to ``raw``, its body read by its length."""
        sock.sendall(raw.encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, "the server closed the connection"
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += sock.recv(65536)
        return head.split(b"\r\n", 1)[0][:12]

    try:
        with socket.create_connection(("127.0.0.1", service.port), timeout=scaled(10)) as sock:
            assert status(sock) == b"HTTP/1.1 200"  # reads the row: through the app
            answered = sum(app.state.direct_reads.values())
            until = deadline(30)
            sent = 0
            while len(readers) < 3 and time.monotonic() < until:
                assert status(sock) == b"HTTP/1.1 200"
                sent += 1
                time.sleep(0.02)
            assert len(readers) >= 3, "the row was not read again"
            assert set(readers) == {service.thread.ident}  # on the loop, not in a thread
            assert sum(app.state.direct_reads.values()) == answered + sent
            KeyRing(memory).delete(grant.key_id)  # another worker
            last = b""
            while time.monotonic() < until:
                last = status(sock)
                if last != b"HTTP/1.1 200":
                    break
                time.sleep(0.02)
            assert last == b"HTTP/1.1 401"
    finally:
        service.stop()
        memory.close()


def first_match(path: str) -> str | None:
    """The read the table's order picks for ``path`` (every pattern tried in turn)."""
    return next((read.op.name for read in reads() if read.pattern.match(path)), None)


def test_reads_indexed_by_their_last_segment_route_as_the_table_does() -> None:
    """Every route's own path, a path whose id is another route's name (``records/visible``)
    and paths no route serves pick the same read through the index as through the table."""
    found = reads()
    by_last = reads_by_last_segment(found)
    names = {read.op.path.rsplit("/", 1)[-1] for read in found} | {"x", "", "%2E"}
    paths = [f"/v1/ns/n{read.op.path}" for read in found]
    paths += [
        f"/v1/ns/n/{base}/{name}" for base in ("records", "events", "heads", "trees", "items")
        for name in names
    ]  # fmt: skip
    paths += [f"/v1/ns/n/records/{name}/explain" for name in names] + ["/v1/ns/n", "/v1/ns/n/"]
    for path in paths:
        indexed = by_last.get(path.rsplit("/", 1)[-1], by_last[""])
        picked = next((read.op.name for read in indexed if read.pattern.match(path)), None)
        assert picked == first_match(path), path
