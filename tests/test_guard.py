"""The request guard: what a JSON body may hold, whatever the letter case of its type.

Each hostile body is sent to a service over a real SQLite file and a real PostgreSQL
database: the answer is a 422 problem, never a 200 (stored) or a 500 (a driver error),
and nothing is stored.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")

from fastapi.testclient import TestClient

from branchmem import Memory, NotFoundError
from branchmem.server import create_app
from branchmem.server.guard import is_json, query_pairs

CONTENT_TYPES = [
    "application/json",
    "Application/JSON",
    "APPLICATION/JSON; charset=UTF-8",
    "application/Problem+JSON",
    " application/json ;charset=utf-8",
]

# (what, request body): each must be refused with 422 invalid_input
HOSTILE = [
    ("NUL in content", b'{"id": "h", "content": "a\\u0000b"}'),
    ("lone surrogate in content", b'{"id": "h", "content": "a\\ud800"}'),
    ("lone low surrogate in a meta key", b'{"id": "h", "content": "x", "meta": {"\\udc00": 1}}'),
    ("NUL in a meta value", b'{"id": "h", "content": "x", "meta": {"k": ["\\u0000"]}}'),
    ("invalid UTF-8", b'{"id": "h", "content": "caf\xe9"}'),
    ("5,000-digit integer", b'{"id": "h", "content": "x", "meta": {"n": ' + b"7" * 5000 + b"}}"),
    ("NaN", b'{"id": "h", "content": "x", "meta": {"n": NaN}}'),
    ("Infinity", b'{"id": "h", "content": "x", "meta": {"n": -Infinity}}'),
    ("float out of range", b'{"id": "h", "content": "x", "meta": {"n": 1e400}}'),
    ("duplicate key", b'{"id": "h", "content": "x", "content": "y"}'),
    ("duplicate nested key", b'{"id": "h", "content": "x", "meta": {"a": 1, "a": 2}}'),
]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    if request.param == "sqlite":
        memory = Memory.open(tmp_path_factory.mktemp("guard") / "guard.db")
        admin = None
    else:
        import psycopg

        from pg import with_database

        dsn = request.getfixturevalue("pg_dsn")
        name = f"bm_guard_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        admin = psycopg.connect(dsn, autocommit=True)
        admin.execute(f'CREATE DATABASE "{name}"')
        memory = Memory.open(with_database(dsn, name), migrate=True)
    memory.add_event("root", content="root")
    try:
        yield TestClient(create_app(memory, auth=False), raise_server_exceptions=False)
    finally:
        memory.close()
        if admin is not None:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.close()


def post(client: TestClient, body: bytes, content_type: str) -> Any:
    return client.post(
        "/v1/ns/default/events", content=body, headers={"Content-Type": content_type}
    )


@pytest.mark.parametrize("content_type", CONTENT_TYPES)
@pytest.mark.parametrize(("what", "body"), HOSTILE, ids=[what for what, _ in HOSTILE])
def test_a_hostile_body_is_refused_whatever_the_case_of_its_type(
    service: TestClient, what: str, body: bytes, content_type: str
) -> None:
    response = post(service, body, content_type)
    assert response.status_code == 422, (what, response.status_code, response.text)
    problem = response.json()
    assert response.headers["content-type"] == "application/problem+json"
    assert problem["code"] == "invalid_input"
    memory = service.app.state.memory  # type: ignore[attr-defined]
    with pytest.raises(NotFoundError):
        memory.get_event("h")


def test_the_refusal_names_the_field(service: TestClient) -> None:
    by_what = dict(HOSTILE)
    details = {
        what: post(service, by_what[what], "Application/Json").json()["detail"]
        for what in ("lone surrogate in content", "NaN", "duplicate nested key", "invalid UTF-8")
    }
    assert "body.content" in details["lone surrogate in content"]
    assert "body.meta.n" in details["NaN"] and "NaN" in details["NaN"]
    assert (
        "body.meta" in details["duplicate nested key"] and "'a'" in details["duplicate nested key"]
    )
    assert "UTF-8" in details["invalid UTF-8"]


@pytest.mark.parametrize("content_type", CONTENT_TYPES)
def test_a_clean_body_is_stored_whatever_the_case_of_its_type(
    service: TestClient, content_type: str
) -> None:
    id = f"ok-{CONTENT_TYPES.index(content_type)}"
    text = b'"caf\xc3\xa9 \\ud83d\\ude00"'  # a surrogate *pair* is one character: fine
    body = b'{"id": "%s", "parent": "root", "content": %s, "meta": {"n": 1.5}}' % (
        id.encode(),
        text,
    )
    response = post(service, body, content_type)
    assert response.status_code == 200, response.text
    memory = service.app.state.memory  # type: ignore[attr-defined]
    stored = memory.get_event(id)
    assert stored.content == "café \U0001f600" and stored.meta == {"n": 1.5}


def test_malformed_json_stays_a_400_with_its_location(service: TestClient) -> None:
    response = post(service, b'{"id": "h", "content": ', "Application/JSON")
    assert response.status_code == 400 and response.json()["code"] == "malformed"


@pytest.mark.parametrize(
    ("content_type", "parsed"),
    [
        (b"application/json", True),
        (b"Application/JSON;charset=utf-8", True),
        (b"application/vnd.api+JSON", True),
        (b"", True),
        (None, True),
        (b"text/json", False),
        (b"application/octet-stream", False),
        (b"json", False),
        (b"application/jsonx", False),
    ],
)
def test_json_media_types_are_recognised_as_fastapi_does(
    content_type: bytes | None, parsed: bool
) -> None:
    assert is_json(content_type) is parsed


def test_an_import_upload_is_left_to_the_importer_which_repairs_its_text(
    service: TestClient,
) -> None:
    # an export is a file, not an API document: the importer replaces what no store keeps
    export = [
        {
            "uuid": "guard-chat",
            "name": "cut emoji",
            "chat_messages": [{"uuid": "guard-m1", "sender": "human", "text": "hi \ud83d"}],
        }
    ]
    response = service.post(
        "/v1/ns/default/import",
        params={"filename": "conversations.json"},
        content=json.dumps(export).encode(),
        headers={"Content-Type": "Application/JSON"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["imported"] == 1
    memory = service.app.state.memory  # type: ignore[attr-defined]
    assert memory.get_event("guard-chat:guard-m1").content == "hi \ufffd"


QUERY_PARTS = ["a", "b=1", "c=", "=d", "e=f=g", "", "h=%41", "i=x+y", "j=%00", "k=%ff", "l=é",
               "anchor=u2b", "mode=strict", "k=3", "m=%2B"]  # fmt: skip


@pytest.mark.parametrize("seed", range(200))
def test_the_query_is_split_as_parse_qsl_splits_it(seed: int) -> None:
    """Guard's split of a plain query (no escape, ASCII) against ``parse_qsl``'s, and any
    other query left to ``parse_qsl`` itself: the same pairs or the same error."""
    rng = random.Random(seed)
    query = "&".join(rng.choice(QUERY_PARTS) for _ in range(rng.randrange(0, 6)))

    def outcome(split: Any) -> Any:
        try:
            return split(query)
        except UnicodeDecodeError as error:
            return type(error)

    assert outcome(query_pairs) == outcome(
        lambda q: parse_qsl(q, keep_blank_values=True, errors="strict")
    ), query
