"""Applying a plan: path to the head is the app's transcript; re-import is idempotent."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from branchmem import Memory
from branchmem.importers import ImportPlan, import_file, load

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
ALL_FIXTURES = sorted(FIXTURES.iterdir())


def shown(memory: Memory, head: str, namespace: str = "default") -> list[tuple[str, str]]:
    """What the app displays: the path to the head without hidden messages."""
    return [
        (event.role, event.content)
        for event in memory.path(head, namespace=namespace)
        if not event.meta.get("hidden")
    ]


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=[p.name for p in ALL_FIXTURES])
def test_path_to_head_is_the_transcript(path: Path) -> None:
    memory = Memory()
    plan = load(path)
    summary = plan.apply(memory)
    assert summary.failed == 0 and summary.errors == []
    for conversation in plan:
        assert conversation.tree is not None and conversation.head is not None
        assert memory.head(conversation.tree) == conversation.head
        assert shown(memory, conversation.head) == conversation.transcript()
        assert len(conversation.transcript()) >= 2


def test_every_fixture_shares_one_namespace_without_collisions() -> None:
    memory = Memory()
    for path in ALL_FIXTURES:
        summary = import_file(path, memory, namespace="alice")
        assert summary.failed == 0, summary
    assert len(memory.heads(namespace="alice")) == 7  # two SillyTavern files, one tree


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared sample exports not present")
@pytest.mark.parametrize("name", ["chatgpt-tree.json", "librechat-tree.json"])
def test_real_exports_apply(name: str) -> None:
    memory = Memory()
    plan = load(SHARED / name)
    summary = plan.apply(memory)
    (conversation,) = plan
    assert summary.failed == 0 and summary.events_added == len(conversation.events)
    assert conversation.head is not None
    assert shown(memory, conversation.head) == conversation.transcript()


def test_reimport_is_idempotent() -> None:
    memory = Memory()
    path = FIXTURES / "chatgpt-conversations.json"
    first = import_file(path, memory)
    second = import_file(path, memory)
    assert first.events_added == 12 and first.heads_moved == 2
    assert second.events_added == 0 and second.events_existing == 12
    assert second.heads_moved == 0 and second.heads_unchanged == 2


def test_newer_export_adds_only_new_events_and_moves_the_head() -> None:
    older = json.loads((FIXTURES / "openwebui-export.json").read_text())
    newer = copy.deepcopy(older)
    history = newer[0]["chat"]["history"]
    head = history["currentId"]
    follow_up = "00000000-0000-4000-a002-000000000009"
    history["messages"][head]["childrenIds"] = [follow_up]
    history["messages"][follow_up] = {
        "id": follow_up,
        "parentId": head,
        "childrenIds": [],
        "role": "user",
        "content": "What about the budget?",
        "timestamp": 1741946409,
    }
    history["currentId"] = follow_up
    memory = Memory()
    load(older).apply(memory)
    summary = load(newer).apply(memory)
    assert summary.events_added == 1 and summary.events_existing == 7
    assert summary.heads_moved == 1
    assert memory.head(newer[0]["id"]) == follow_up
    assert shown(memory, follow_up)[-1] == ("user", "What about the budget?")


def test_in_place_edit_after_import_keeps_stored_text_and_is_reported() -> None:
    export = json.loads((FIXTURES / "librechat-export.json").read_text())
    memory = Memory()
    load(export).apply(memory)
    edited = copy.deepcopy(export)
    edited["messages"][3]["text"] = "Chengdu is lovely; bring an umbrella."
    edited["messages"][3]["isEdited"] = True
    summary = load(edited).apply(memory)
    assert summary.failed == 0 and summary.events_added == 0
    assert len(summary.kept_stored) == 1 and export["messages"][3]["messageId"] in str(summary)
    stored = memory.get_event(export["messages"][3]["messageId"])
    assert stored.content == "Chengdu is lovely; spicy food ahead!"


def test_a_moved_message_fails_its_conversation_and_nothing_of_it_is_written() -> None:
    export = json.loads((FIXTURES / "chatgpt-conversations.json").read_text())
    memory = Memory()
    load(export).apply(memory)
    changed = copy.deepcopy(export)
    mapping = changed[0]["mapping"]
    moved = "00000000-0000-4000-a001-000000000007"
    fresh = "00000000-0000-4000-a001-000000000010"
    mapping[moved]["parent"] = "00000000-0000-4000-a001-000000000004"
    mapping[fresh] = {
        "id": fresh,
        "parent": moved,
        "children": [],
        "message": {"author": {"role": "user"}, "content": {"parts": ["new"]}},
    }
    summary = load(changed).apply(memory)
    assert summary.failed == 1 and summary.imported == 1
    assert moved in summary.errors[0] and "Moving plans" in summary.errors[0]
    with pytest.raises(Exception, match="not found"):
        memory.get_event(fresh)


def test_malformed_conversation_is_skipped_others_imported(tmp_path: Path) -> None:
    export = json.loads((FIXTURES / "chatgpt-conversations.json").read_text())
    del export[0]["mapping"]["00000000-0000-4000-a001-000000000003"]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export))
    memory = Memory()
    summary = import_file(path, memory)
    assert (summary.conversations, summary.imported, summary.failed) == (2, 1, 1)
    assert "$[0].mapping" in summary.errors[0]
    assert memory.head("6a1f0c2e-8d3b-4c1a-9e5f-0b7d2a4c6e81") is None
    assert memory.head("6a1f0c2e-8d3b-4c1a-9e5f-0b7d2a4c6e82") is not None
    text = str(summary)
    for line in ("format: chatgpt", "conversations: 2 (1 imported, 1 failed)", "heads: 1 set"):
        assert line in text


def test_sillytavern_branch_file_joins_the_main_chat_tree() -> None:
    memory = Memory()
    main = import_file(FIXTURES / "Aria - 2025-3-14@10h00m00s.jsonl", memory)
    branch = import_file(FIXTURES / "Branch #1 - 2025-3-14@10h05m00s.jsonl", memory)
    assert main.events_added == 4
    assert branch.events_added == 3 and branch.events_existing == 1  # the shared greeting
    head = memory.head("Aria - 2025-3-14@10h00m00s")
    assert head is not None
    assert shown(memory, head)[1] == ("user", "I'm moving to Hangzhou next month.")


def test_summary_counts_branches_and_names_the_format() -> None:
    memory = Memory()
    plan: ImportPlan = load(FIXTURES / "claude-tree.json")
    summary = plan.apply(memory, namespace="bob")
    assert (summary.branches, summary.events_added, summary.heads_moved) == (3, 7, 1)
    assert "format: claude (auto: $ is an object with 'chat_messages')" in str(summary)
    assert "namespace 'bob'" in str(summary)


def test_progress_callback_counts_conversations_of_a_value() -> None:
    seen: list[Any] = []
    export = json.loads((FIXTURES / "chatgpt-conversations.json").read_text())
    load(export).apply(Memory(), progress=seen.append)
    assert [(p.done, p.total, p.unit) for p in seen] == [
        (1, 2, "conversations"),
        (2, 2, "conversations"),
    ]


def test_sqlite_store_keeps_conversations_atomic_and_reimport_idempotent(tmp_path: Path) -> None:
    export = json.loads((FIXTURES / "chatgpt-conversations.json").read_text())
    del export[1]["mapping"]["00000000-0000-4000-a001-000000000011"]  # orphans the reply
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export))
    with Memory.open(tmp_path / "memory.db") as memory:
        summary = import_file(path, memory)
        assert (summary.imported, summary.failed, summary.events_added) == (1, 1, 9)
        with pytest.raises(Exception, match="not found"):
            memory.get_event("00000000-0000-4000-a001-000000000012")
    with Memory.open(tmp_path / "memory.db") as memory:
        again = import_file(path, memory)
        assert (again.events_added, again.events_existing, again.heads_unchanged) == (0, 9, 1)
        head = memory.head("6a1f0c2e-8d3b-4c1a-9e5f-0b7d2a4c6e81")
        assert head is not None
        (moving, _) = load(path)
        assert shown(memory, head) == moving.transcript()
