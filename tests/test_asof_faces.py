"""``as_of`` on the faces the conformance suite does not drive: the command line (text in,
like every option) and raw HTTP query strings (a seq and a time both arrive as text)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import pytest

from branchmem import Memory
from branchmem.cli import main
from branchmem.testing.asof_conformance import move


def withdrawn_later(mem: Memory) -> int:
    """The Chengdu story with the Chengdu fact withdrawn after it; the seq before that."""
    move(mem)
    written = mem.audit()[-1].seq
    mem.withdraw("f-chengdu")
    return written


def test_the_cli_reads_as_of_as_a_seq_or_a_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "m.db")
    with Memory.open(db) as mem:
        written = withdrawn_later(mem)
        stamped = datetime.fromtimestamp(mem.audit()[-2].time, UTC).isoformat()
    capsys.readouterr()
    assert main(["visible", "u2", "--db", db, "--json", "--as-of", str(written)]) == 0
    assert '"f-chengdu"' in capsys.readouterr().out
    assert main(["visible", "u2", "--db", db, "--json", "--as-of", stamped]) == 0
    assert '"f-chengdu"' in capsys.readouterr().out
    assert main(["visible", "u2", "--db", db, "--json"]) == 0
    assert '"f-chengdu"' not in capsys.readouterr().out
    assert main(["search", "moving", "u2", "--db", db, "--json", "--as-of", str(written)]) == 0
    assert '"f-chengdu"' in capsys.readouterr().out
    assert main(["search", "moving", "u2", "--db", db, "--json"]) == 0
    assert '"f-chengdu"' not in capsys.readouterr().out
    assert main(["current", "city", "u2", "--db", db, "--as-of", "yesterday"]) != 0
    assert "as_of" in capsys.readouterr().err


def test_http_reads_as_of_from_the_query_string() -> None:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from fastapi.testclient import TestClient

    from branchmem.server import KeyRing, create_app

    mem = Memory()
    key, _ = KeyRing(mem).create("me", ["default"])
    written = withdrawn_later(mem)
    stamped = datetime.fromtimestamp(mem.audit()[-2].time, UTC).isoformat()
    http = TestClient(create_app(mem), raise_server_exceptions=False)
    headers = {"Authorization": f"Bearer {key}"}
    base = "/v1/ns/default/visible?anchor=u2"
    for as_of in (str(written), quote(stamped)):
        found = http.get(f"{base}&as_of={as_of}", headers=headers).json()
        assert [r["id"] for r in found["items"]] == ["f-chengdu"], found
    assert http.get(base, headers=headers).json()["items"] == []
    refused = http.get(f"{base}&as_of=yesterday", headers=headers)
    assert refused.status_code == 422 and "as_of" in refused.text
    mem.close()
