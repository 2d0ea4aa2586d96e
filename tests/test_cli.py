"""The command line calls the API it is named after; errors become one-line messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.cli import app, main

COMMANDS = [
    "migrate", "import", "demo", "serve", "mcp", "visible", "explain",
    "current", "stale", "search", "context", "retract", "supersede", "withdraw", "restore",
    "erase", "report", "audit", "history", "tree", "events add", "records add",
    "records revise", "keys create", "keys list", "keys delete",
]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command.split(), "--help"]) == 0
    shown = capsys.readouterr().out
    assert "Usage: branchmem " + command in " ".join(shown.split())


def test_every_registered_command_is_listed_here() -> None:
    import typer.main

    group = typer.main.get_command(app)
    names = set()
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        sub = getattr(command, "commands", None)
        names.update(f"{name} {s}" for s in sub) if sub else names.add(name)
    assert names == set(COMMANDS)


def test_migrate_creates_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", str(tmp_path / "new.db")]) == 0
    assert "schema version" in capsys.readouterr().out


def test_import_prints_a_summary_and_the_head_path_is_the_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = {
        "id": "chat-1",
        "title": "moving",
        "chat": {
            "history": {
                "currentId": "m3b",
                "messages": {
                    "m1": {"id": "m1", "parentId": None, "childrenIds": ["m2"], "role": "user",
                           "content": "I'm moving", "timestamp": 1},
                    "m2": {"id": "m2", "parentId": "m1", "childrenIds": ["m3", "m3b"],
                           "role": "assistant", "content": "Where to?", "timestamp": 2},
                    "m3": {"id": "m3", "parentId": "m2", "childrenIds": [], "role": "user",
                           "content": "Chengdu", "timestamp": 3},
                    "m3b": {"id": "m3b", "parentId": "m2", "childrenIds": [], "role": "user",
                            "content": "Hangzhou", "timestamp": 4},
                },
            }
        },
    }  # fmt: skip
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(export))
    db = str(tmp_path / "mem.db")
    assert main(["import", str(path), "--db", db, "--namespace", "alice"]) == 0
    assert "conversations: 1" in capsys.readouterr().out
    with Memory.open(db) as mem:
        head = mem.head("chat-1", namespace="alice")
        assert head is not None
        assert [e.content for e in mem.path(head, namespace="alice")][-1] == "Hangzhou"


def test_a_library_error_is_a_one_line_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    assert main(["import", str(bad), "--db", str(tmp_path / "m.db")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("branchmem: error:") and err.count("\n") == 1


def test_demo_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    assert "Hangzhou" in capsys.readouterr().out


def test_the_story_through_the_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--db", str(tmp_path / "m.db")]
    for argv in (
        ["events", "add", "u1", "--content", "planning a move"],
        ["events", "add", "u2", "--parent", "u1", "--content", "moving to Chengdu"],
        ["events", "add", "u2b", "--parent", "u1", "--content", "moving to Hangzhou"],
        ["records", "add", "f1", "-s", "u2", "--content", "moving to Chengdu", "--key", "city"],
        ["records", "add", "f2", "-s", "u2b", "--content", "moving to Hangzhou", "--key", "city"],
    ):
        assert main([*argv, *db]) == 0
    capsys.readouterr()
    assert main(["visible", "u2b", "--json", *db]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ["f2"]
    assert main(["explain", "f1", "u2b", *db]) == 0
    assert "hidden (off_path); source u2, paths part at u1" in capsys.readouterr().out
    assert main(["search", "Hangzhou", "--anchor", "u2b", "--json", *db]) == 0
    assert [h["record"]["id"] for h in json.loads(capsys.readouterr().out)] == ["f2"]
    assert main(["context", "u2b", "--budget", "200", *db]) == 0
    assert "moving to Hangzhou" in capsys.readouterr().out
    assert main(["retract", "x1", "-s", "u2b", "-t", "f2", "--reason", "asked", *db]) == 0
    assert main(["current", "city", "u2b", "--json", *db]) == 0
    capsys.readouterr()
    assert main(["tree", "u1", "--anchor", "u2", *db]) == 0
    shown = capsys.readouterr().out
    assert "u2 [user] moving to Chengdu ◀ anchor" in shown
    assert "f2" in shown and "off_path" in shown
    assert main(["erase", "u2", "--json", *db]) == 0
    assert json.loads(capsys.readouterr().out) == ["f1", "u2"]
    assert main(["audit", "--json", *db]) == 0
    assert [e["op"] for e in json.loads(capsys.readouterr().out)][-2:] == ["retract", "erase"]


def test_keys_are_created_listed_and_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", str(tmp_path / "keys.db")]
    assert main(["keys", "create", "--tenant", "acme", "-n", "acme/*", *db]) == 0
    secret = capsys.readouterr().out.strip()
    assert secret.startswith("bm_")
    assert main(["keys", "list", "--json", *db]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(k["tenant"], k["namespaces"]) for k in listed] == [("acme", ["acme/*"])]
    assert secret.rsplit("_", 1)[1] not in json.dumps(listed)
    assert main(["keys", "create", "--tenant", "globex", "-n", "acme/bob", *db]) == 2
    assert "overlaps" in capsys.readouterr().err
    assert main(["keys", "delete", listed[0]["key_id"], *db]) == 0
    assert main(["keys", "delete", listed[0]["key_id"], *db]) == 2


def test_no_store_given_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["visible", "u1"]) == 2
    assert "--db" in capsys.readouterr().err


def test_serve_refuses_no_auth_beyond_loopback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "--db", str(tmp_path / "s.db"), "--no-auth", "--host", "0.0.0.0"]
    assert main(argv) == 2
    assert "loopback" in capsys.readouterr().err


def test_commands_work_through_the_service_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from branchmem.server import KeyRing, create_app
    from test_server_harness import LiveService

    memory = Memory()
    api_key, _ = KeyRing(memory).create("cli", ["alice"])
    live = LiveService(create_app(memory)).start()
    try:
        remote = ["--url", live.url, "--api-key", api_key, "-n", "alice"]
        export = tmp_path / "chat.jsonl"
        export.write_text(
            json.dumps({"user_name": "u", "character_name": "c"}) + "\n"
            + json.dumps({"name": "u", "is_user": True, "mes": "hello", "send_date": 1}) + "\n"
        )  # fmt: skip
        assert main(["events", "add", "u1", "--content", "hi", *remote]) == 0
        assert main(["records", "add", "f1", "-s", "u1", "--content", "greets", *remote]) == 0
        capsys.readouterr()
        assert main(["visible", "u1", "--json", *remote]) == 0
        assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ["f1"]
        assert main(["tree", "u1", *remote]) == 0
        assert "f1" in capsys.readouterr().out
        assert main(["import", str(export), "--format", "sillytavern", *remote]) == 0
        assert "conversations: 1" in capsys.readouterr().out
        assert main(["visible", "u1", "--url", live.url, "--api-key", api_key]) == 2
        assert "not bound to namespace 'default'" in capsys.readouterr().err
    finally:
        live.stop()
        memory.close()
