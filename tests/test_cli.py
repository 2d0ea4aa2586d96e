"""The command line calls the API it is named after; errors become one-line messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.cli import main, parser


@pytest.mark.parametrize("command", ["migrate", "import", "demo"])
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    listed = parser().format_help()
    assert command in listed
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    assert "usage: branchmem " + command in capsys.readouterr().out


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
    assert capsys.readouterr().err.startswith("branchmem: error:")
