"""``Client`` reads answers through orjson where it reads them as ``json`` does.

``client.loads`` takes orjson's faster path only when it gives the same value; each body
below is read by both and must come back identical, type for type (``2**70`` as an int, not
the float orjson would make of it), or fail with the same error. The end-to-end test reads
integers at and beyond the 64-bit edges back through a live server.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("httpx", reason="the client needs the 'client' extra")
pytest.importorskip("uvicorn", reason="the service needs the 'server' extra")

from branchmem import Memory
from branchmem.client import Client, loads
from branchmem.server import KeyRing, create_app
from test_server_harness import LiveService

EDGES = [2**70, 2**64 - 1, 2**64, 2**63, -(2**63), -(2**63) - 1, 10**18, 10**19]

BODIES = [
    b'{"items": [{"id": "r1", "revision": 1, "meta": {"x": 0.00001}}], "next_cursor": null}',
    *(json.dumps({"n": n}).encode() for n in EDGES),
    b"[1180591620717411303424, 0.1]",
    b'{"f": 1234567890123456789.5}',  # a long run of digits in a float: json reads it
    b'"1180591620717411303424"',  # a long run of digits in text: json reads it, the same
    b'{"a": 1, "a": 2}',
    b"[NaN, Infinity, -Infinity]",
    b"1e400",
    b'"\\ud800"',  # a lone surrogate: json keeps it
    b"\xef\xbb\xbf[1]",  # a UTF-8 byte order mark
    b"[-0.0, 1E2, 5e-324]",
    b"[" * 2000 + b"]" * 2000,  # past orjson's nesting limit
    b'"\xff"',  # not UTF-8
    b"{",
    b"",
]


def outcome(read: Callable[[bytes], Any], body: bytes) -> str:
    """The value read, as its repr (an int and an equal float differ), or the error's class."""
    try:
        return repr(read(body))
    except Exception as error:
        return type(error).__name__


@pytest.mark.parametrize("body", BODIES, ids=lambda body: repr(body[:40]))
def test_an_answer_reads_as_json_reads_it(body: bytes) -> None:
    assert outcome(loads, body) == outcome(json.loads, body)


@pytest.fixture
def served() -> Iterator[tuple[str, str]]:
    memory = Memory()
    key, _ = KeyRing(memory).create("acme", ["default"])
    memory.add_event("u1", role="user", content="hello")
    memory.add_record("r-edges", sources=["u1"], meta={"n": EDGES})
    live = LiveService(create_app(memory)).start()
    try:
        yield live.url, key
    finally:
        live.stop()
        memory.close()


def test_integers_beyond_64_bits_come_back_as_integers(served: tuple[str, str]) -> None:
    url, key = served
    with Client(url, key) as client:
        record = client.get_record("r-edges")
        assert [type(n) for n in record.meta["n"]] == [int] * len(EDGES)
        assert record.meta["n"] == EDGES
        assert client.visible("u1") == [record]
