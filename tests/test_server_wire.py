"""Routes write the codec's JSON themselves, unvalidated: it must be exactly what validating
against the documented response model and serialising it would have written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")

from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from branchmem import Memory
from branchmem.api.operations import operations
from branchmem.server import create_app
from branchmem.server.routes import json_response, response_model
from branchmem.testing.conformance import chengdu

PREFIX = "/v1/ns/default"

# one request per routed read, and the writes whose answer is a value
CALLS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("get_event", "GET", "/events/u2", {}),
    ("path", "GET", "/events/a2b/path", {}),
    ("heads", "GET", "/heads", {}),
    ("head", "GET", "/heads/u1", {}),
    ("conversations", "GET", "/conversations", {}),
    ("get_record", "GET", "/records/f-chengdu", {}),
    ("dependents", "GET", "/items/u2/dependents", {}),
    ("visible", "GET", "/visible", {"anchor": "a2b", "include_superseded": "true"}),
    ("visible", "GET", "/visible", {"anchor": "a2", "limit": "1"}),
    ("explain", "GET", "/records/f-chengdu/explain", {"anchor": "a2b"}),
    ("current", "GET", "/current", {"key": "city", "anchor": "a2b"}),
    ("current", "GET", "/current", {"key": "nothing", "anchor": "a2b"}),
    ("stale", "GET", "/stale", {"anchor": "a2b"}),
    ("report", "GET", "/report", {}),
    ("audit", "GET", "/audit", {}),
    ("history", "GET", "/records/f-chengdu/history", {}),
    ("repair_queue", "GET", "/repair-queue", {}),
    ("search", "GET", "/search", {"query": "moving", "anchor": "a2b"}),
    ("deliveries", "GET", "/deliveries", {"session": "s1"}),
    ("stale_deliveries", "GET", "/stale-deliveries", {"session": "s1", "anchor": "a2"}),
    ("add_event", "POST", "/events", {"id": "u9", "parent": "a2b", "content": "déjà vu 搬家"}),
    ("add_record", "POST", "/records", {"id": "r9", "sources": ["u9"], "meta": {"x": [1.5]}}),
    ("get_record", "GET", "/records/r-numbers", {}),  # numbers as pydantic writes them
    ("get_record", "GET", "/records/r-huge", {}),  # an int orjson refuses: the codec's path
    ("context", "POST", "/context", {"anchor": "a2b", "session": "s2"}),
    ("erase", "POST", "/items/u2/erase", {"reason": "asked"}),
]


@pytest.fixture
def http() -> Iterator[TestClient]:
    memory = Memory()
    chengdu(memory)
    memory.context("a2b", session="s1")
    memory.add_record("r-numbers", sources=["u1"], meta={"x": [1.5, 1e-05, 1e16, -0.0, 2**63]})
    memory.add_record("r-huge", sources=["u1"], meta={"x": [2**70, 1e-05]})
    with TestClient(create_app(memory, auth=False)) as client:
        yield client
    memory.close()


@pytest.mark.parametrize(("name", "verb", "path", "given"), CALLS, ids=lambda v: str(v))
def test_a_route_answers_what_its_documented_model_would_have_written(
    http: TestClient, name: str, verb: str, path: str, given: dict[str, Any]
) -> None:
    if verb == "GET":
        response = http.get(PREFIX + path, params=given)
    else:
        response = http.post(PREFIX + path, json=given)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    adapter: TypeAdapter[Any] = TypeAdapter(response_model(operations()[name]))
    validated = adapter.validate_json(response.content)  # it conforms to the schema
    assert adapter.dump_json(validated) == response.content  # byte for byte


def test_a_value_json_cannot_carry_is_written_as_pydantic_writes_it() -> None:
    documented = response_model(operations()["report"])
    response = json_response({"score": float("nan"), "ok": 1}, documented)
    assert json.loads(response.body) == {"score": None, "ok": 1}


def test_what_orjson_refuses_is_written_by_the_codec_and_pydantic() -> None:
    documented = response_model(operations()["report"])
    big = {"ids": {"b", "a"}, "big": 2**70, 7: (1, 2)}  # a set, beyond 64 bits, a key of 7
    response = json_response(big, documented)
    assert response.body == b'{"ids":["a","b"],"big":1180591620717411303424,"7":[1,2]}'
