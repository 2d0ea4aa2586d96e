"""Text no store can keep (a lone surrogate, NUL) is replaced by U+FFFD and reported.

Each format's fixture gets one message poisoned with ``\\ud800`` and ``\\u0000`` (JSON
escapes, as a cut emoji leaves them); the import finishes on every backend, writes the
same text everywhere, and the summary names the event it changed.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from branchmem import Memory
from branchmem.importers import ImportFormatError, load
from branchmem.importers.storable import storable_text

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
ALL_FIXTURES = sorted(FIXTURES.iterdir())
POISON = "\ud800 then \x00"


@pytest.fixture(scope="module", params=["memory", "sqlite", "postgres"])
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """A factory of empty memories on one backend."""
    if request.param == "memory":
        yield Memory
        return
    if request.param == "sqlite":
        folder = tmp_path_factory.mktemp("storable")
        made = iter(range(1_000))
        yield lambda: Memory.open(folder / f"{next(made)}.db")
        return
    import psycopg

    from pg import with_database

    dsn = request.getfixturevalue("pg_dsn")
    admin = psycopg.connect(dsn, autocommit=True)
    names: list[str] = []

    def fresh() -> Memory:
        names.append(f"bm_storable_{os.getpid()}_{uuid.uuid4().hex[:6]}")
        admin.execute(f'CREATE DATABASE "{names[-1]}"')
        return Memory.open(with_database(dsn, names[-1]), migrate=True)

    yield fresh
    for name in names:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.close()


def read_export(path: Path) -> tuple[Any, bool]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()], True
    return json.loads(text), False


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)


def replaced(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return new if value == old else value
    if isinstance(value, list):
        return [replaced(item, old, new) for item in value]
    if isinstance(value, dict):
        return {key: replaced(item, old, new) for key, item in value.items()}
    return value


def poisoned(path: Path, folder: Path) -> tuple[Path, str]:
    """A copy of ``path`` whose first message text also holds POISON, and that text."""
    export, lines = read_export(path)
    contents = {e["content"] for c in load(path) for e in c.events if len(e["content"]) > 3}
    target = next(text for text in strings(export) if text in contents)
    export = replaced(export, target, target + POISON)
    out = folder / path.name
    if lines:  # json.dumps writes the surrogate and NUL as \\ud800 and \\u0000 escapes
        out.write_text("\n".join(json.dumps(line) for line in export) + "\n")
    else:
        out.write_text(json.dumps(export))
    assert "\\ud800" in out.read_text() and "\\u0000" in out.read_text()
    return out, target + POISON


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=[p.name for p in ALL_FIXTURES])
def test_unstorable_text_is_replaced_and_reported(path: Path, backend: Any, tmp_path: Path) -> None:
    crafted, text = poisoned(path, tmp_path)
    clean = load(path).apply(Memory())
    memory = backend()
    try:
        summary = load(crafted).apply(memory)
        assert summary.failed == 0 and summary.errors == [], summary
        assert summary.imported == clean.imported
        assert summary.events_added == clean.events_added
        expected = storable_text(text)[0]
        assert expected.endswith("\ufffd then \ufffd")
        changed = [
            event
            for tree in memory.heads()
            for event in memory.path(memory.heads()[tree])
            if "\ufffd" in event.content
        ]
        assert changed and all(event.content == expected for event in changed)
        assert len(summary.replaced) >= 1
        assert all("content (2)" in note for note in summary.replaced)
        assert {note.split("event ")[1].split(":")[0] for note in summary.replaced} >= {
            repr(event.id) for event in changed
        }
        assert "U+FFFD" in str(summary) and f"{len(summary.replaced)} events" in str(summary)
    finally:
        memory.close()


def test_a_surrogate_in_an_id_is_replaced_consistently(tmp_path: Path) -> None:
    export = json.loads((FIXTURES / "openwebui-export.json").read_text())
    chat = export[0] if isinstance(export, list) else export
    messages = chat["chat"]["history"]["messages"]
    old = next(iter(messages))
    new = "m\ud800"
    crafted = json.loads(json.dumps(export).replace(json.dumps(old), json.dumps(new)))
    plan = load(crafted)
    conversation = next(iter(plan))
    assert conversation.error is None
    ids = {event["id"] for event in conversation.events}
    parents = {event["parent"] for event in conversation.events} - {None}
    assert any(id.endswith(":m\ufffd") for id in ids) and parents <= ids
    summary = plan.apply(Memory())
    assert summary.failed == 0 and any("id (1)" in note for note in summary.replaced)


def test_ids_that_collide_once_replaced_fail_only_their_conversation() -> None:
    chat = {
        "uuid": "c1",
        "name": "twins",
        "chat_messages": [
            {"uuid": "a\ud800", "sender": "human", "text": "one"},
            {"uuid": "a\udbff", "sender": "assistant", "text": "two"},
        ],
    }
    other = {"uuid": "c2", "chat_messages": [{"uuid": "b", "sender": "human", "text": "ok"}]}
    twins, fine = load([chat, other], "claude")
    assert isinstance(twins.error, ImportFormatError)
    assert "differ only" in str(twins.error) and "'c1'" in str(twins.error)
    summary = load([chat, other], "claude").apply(Memory())
    assert (summary.imported, summary.failed) == (1, 1) and fine.error is None
