"""Where the data is: ``Memory.namespaces`` on the command line and over HTTP, and the hint
an empty namespace gives (an import with ``-n alice`` is not in ``default``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.cli import main


@pytest.fixture
def store(tmp_path: Path) -> str:
    path = str(tmp_path / "m.db")
    with Memory.open(path) as mem:
        mem.add_event("a1", content="I live in Chengdu", namespace="alice")
        mem.add_event("b1", content="I live in Hangzhou", namespace="bob")
    return path


def test_the_command_lists_the_namespaces_holding_data(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["namespaces", "--db", store]) == 0
    assert capsys.readouterr().out.split() == ["alice", "bob"]
    assert main(["namespaces", "--db", store, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == ["alice", "bob"]


def test_an_empty_namespace_says_where_the_data_is(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["conversations", "--db", store]) == 0
    said = capsys.readouterr().err
    assert "namespace 'default' has no conversations; data is in 'alice', 'bob'" in said
    assert main(["conversations", "--db", store, "-n", "alice"]) == 0
    assert "data is in" not in capsys.readouterr().err


def test_over_http_a_key_sees_only_the_namespaces_it_may_read(store: str) -> None:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from fastapi.testclient import TestClient

    from branchmem.server import KeyRing, create_app

    with Memory.open(store) as mem:
        alice, _ = KeyRing(mem).create("me", ["alice"])
        everyone, _ = KeyRing(mem).create("me", ["*"])
        http = TestClient(create_app(mem), raise_server_exceptions=False)
        listed = {
            key: http.get("/v1/namespaces", headers={"Authorization": f"Bearer {key}"})
            for key in (alice, everyone)
        }
        assert listed[alice].json() == {"namespaces": ["alice"]}
        assert listed[everyone].json() == {"namespaces": ["alice", "bob"]}
        assert http.get("/v1/namespaces").status_code == 401
