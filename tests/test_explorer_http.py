"""The explorer's service side: the local session's token, one conversation's records with
their sources on the tree, conversation titles, and /docs with no network."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service needs the 'server' extra")

from fastapi.testclient import TestClient

from branchmem import Memory
from branchmem.server import KeyRing, create_app
from branchmem.server.explorer import LocalSession
from branchmem.testing.conformance import chengdu
from test_server_harness import free_port
from timing import deadline, scaled


@pytest.fixture
def memory() -> Iterator[Memory]:
    mem = Memory()
    chengdu(mem)  # tree u1
    mem.set_head("a2b")
    mem.add_record("s-move", sources=["f-chengdu", "a2"], content="summary: moving to Chengdu")
    mem.add_event("k1", content="Two weeks in Kyoto?", meta={"title": "Trip to Kyoto"})
    mem.add_record("f-kyoto", sources=["k1"], content="trip to Kyoto")
    mem.add_record("f-legacy", sources=None, content="no sources")
    yield mem
    mem.close()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_local_token_reads_every_namespace_and_writes_nothing(memory: Memory) -> None:
    local = LocalSession()
    http = TestClient(create_app(memory, local=local), raise_server_exceptions=False)
    assert http.get("/v1/ns/default/trees", headers=bearer(local.token)).status_code == 200
    assert http.get("/v1/ns/elsewhere/heads", headers=bearer(local.token)).status_code == 200
    write = http.post(
        "/v1/ns/default/events", json={"id": "x1", "content": "hi"}, headers=bearer(local.token)
    )
    assert (write.status_code, write.json()["code"]) == (401, "unauthorized")
    wrong = http.get("/v1/ns/default/trees", headers=bearer(local.token + "x"))
    assert wrong.status_code == 401
    assert http.get("/v1/ns/default/trees").status_code == 401
    with pytest.raises(Exception, match="x1"):
        memory.get_event("x1")  # nothing was written


def test_a_key_still_works_and_no_token_is_accepted_without_a_local_session(
    memory: Memory,
) -> None:
    key, _ = KeyRing(memory).create("me", ["default"])
    http = TestClient(create_app(memory), raise_server_exceptions=False)
    assert http.get("/v1/ns/default/trees", headers=bearer(key)).status_code == 200
    other = LocalSession()  # a token from some other process
    assert http.get("/v1/ns/default/trees", headers=bearer(other.token)).status_code == 401


def test_explanations_of_one_conversation_carry_their_sources_in_it(memory: Memory) -> None:
    http = TestClient(create_app(memory, auth=False))
    views = http.get("/v1/ns/default/explanations", params={"anchor": "a2", "tree": "u1"})
    found = {v["explanation"]["record_id"]: v for v in views.json()["items"]}
    assert set(found) == {"f-chengdu", "f-hangzhou", "f-planning", "s-move"}
    assert found["f-chengdu"]["tree_sources"] == ["u2"]
    assert found["f-hangzhou"]["tree_sources"] == ["u2b"]
    # a summary built from a record and a message: the message and the frontier (a2 is below
    # u2, so a2 stands for the record's source too)
    assert found["s-move"]["tree_sources"] == ["a2"]
    assert found["s-move"]["explanation"]["visible"] is True
    assert found["f-hangzhou"]["explanation"]["reason"] == "off_path"
    everything = http.get("/v1/ns/default/explanations", params={"anchor": "a2"}).json()["items"]
    assert {v["explanation"]["record_id"] for v in everything} == set(found) | {
        "f-kyoto",
        "f-legacy",
    }
    assert all(v["tree_sources"] == [] for v in everything)


def test_conversations_are_listed_by_title_latest_first(memory: Memory) -> None:
    http = TestClient(create_app(memory, auth=False))
    listed = http.get("/v1/ns/default/conversations").json()["items"]
    assert [(c["tree"], c["title"], c["root"], c["head"], c["events"]) for c in listed] == [
        ("k1", "Trip to Kyoto", "k1", None, 1),
        ("u1", None, "u1", "a2b", 6),  # built by hand: no title
    ]
    assert listed[0]["updated_seq"] > listed[1]["updated_seq"]


def test_docs_load_only_local_assets(memory: Memory) -> None:
    pytest.importorskip("fastapi_offline", reason="the docs assets are in the 'server' extra")
    http = TestClient(create_app(memory, auth=False))
    for page in ("/docs", "/redoc"):
        html = http.get(page)
        assert html.status_code == 200 and "text/html" in html.headers["content-type"]
        assets = re.findall(r'(?:src|href)=["\']([^"\']+)["\']', html.text)
        assert assets and all(a.startswith("/docs/assets/") for a in assets), assets
        assert "cdn." not in html.text and "fonts.googleapis" not in html.text
        for asset in assets:
            loaded = http.get(asset)
            assert loaded.status_code == 200 and len(loaded.content) > 1000, asset
    assert http.get("/docs/assets/swagger-ui.css").headers["content-type"].startswith("text/css")
    redoc = http.get("/docs/assets/redoc.standalone.js")  # its footer logo came from a CDN
    assert redoc.headers["content-type"].startswith("text/javascript")
    assert len(redoc.content) > 100_000 and b"https://cdn." not in redoc.content
    assert '"validatorUrl": null' in http.get("/docs").text  # no badge from validator.swagger.io
    assert http.get("/docs/assets/../app.py").status_code == 404
    assert http.get("/openapi.json").json()["info"]["title"] == "branchmem"


def test_serve_prints_a_link_that_opens_the_explorer(tmp_path: Path) -> None:
    import httpx

    port = free_port()
    db = tmp_path / "served.db"
    Memory.open(str(db)).close()
    serve = subprocess.Popen(
        [sys.executable, "-m", "branchmem.cli", "serve", "--db", str(db), "--port", str(port),
         "--log-level", "warning"],
        stderr=subprocess.PIPE, text=True, env=dict(os.environ),
    )  # fmt: skip
    try:
        assert serve.stderr is not None
        line = serve.stderr.readline()
        match = re.fullmatch(rf"explorer: (http://127\.0\.0\.1:{port}/ui)#token=(\S+)\n", line)
        assert match, line
        until = deadline(30)
        while True:
            try:
                answer = httpx.get(
                    f"http://127.0.0.1:{port}/v1/ns/default/trees",
                    headers=bearer(match[2]),
                    timeout=scaled(10),
                )
                break
            except httpx.TransportError:
                assert time.monotonic() < until, "the server did not start"
                time.sleep(0.2)
        assert answer.status_code == 200
        assert httpx.get(match[1], timeout=scaled(10)).status_code == 200
    finally:
        serve.terminate()
        serve.wait(timeout=scaled(20))
