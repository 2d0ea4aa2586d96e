"""Listing conversations: one entry per tree, with its root, head, title and size."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from branchmem import Conversation, InvalidInput, Memory
from branchmem.importers import import_file

FIXTURES = Path(__file__).parent / "fixtures" / "importers"


@pytest.fixture(params=["memory", "sqlite"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    mem = Memory() if request.param == "memory" else Memory.open(tmp_path / "conversations.db")
    with mem:
        yield mem


def test_an_empty_namespace_has_no_conversations(memory: Memory) -> None:
    assert memory.conversations() == []


def test_one_entry_per_tree_most_recently_active_first(memory: Memory) -> None:
    memory.add_event("a1", content="first conversation", meta={"title": "Moving"})
    memory.add_event("a2", "a1", role="assistant", content="where to?")
    memory.add_event("b1", content="second conversation")
    memory.add_event("a3", "a2", content="Hangzhou")  # the first one is active again
    memory.set_head("a3")

    latest_a, latest_b = memory.get_event("a3").seq, memory.get_event("b1").seq

    assert memory.conversations() == [
        Conversation("a1", root="a1", head="a3", title="Moving", events=3, updated_seq=latest_a),
        Conversation("b1", root="b1", head=None, title=None, events=1, updated_seq=latest_b),
    ]


def test_a_conversation_whose_root_has_not_arrived_has_no_root(memory: Memory) -> None:
    memory.add_event("c2", "c1", tree="chat", content="a reply before its question")
    memory.add_event("orphan", "missing", content="tree unknown yet")  # belongs to none yet

    (chat,) = memory.conversations()

    assert (chat.tree, chat.root, chat.events, chat.title) == ("chat", None, 1, None)
    memory.add_event("c1", tree="chat", content="the question", meta={"title": "Late"})
    (chat,) = memory.conversations()
    assert (chat.root, chat.events, chat.title) == ("c1", 2, "Late")


def test_namespaces_are_listed_apart(memory: Memory) -> None:
    memory.add_event("x1", namespace="alice")
    memory.add_event("y1", namespace="bob")

    assert [c.tree for c in memory.conversations(namespace="alice")] == ["x1"]
    assert [c.tree for c in memory.conversations(namespace="bob")] == ["y1"]
    assert memory.conversations() == []
    with pytest.raises(InvalidInput, match="namespace"):
        memory.conversations(namespace="")


def test_an_import_lists_its_conversations_by_title(memory: Memory) -> None:
    summary = import_file(FIXTURES / "chatgpt-conversations.json", memory)
    assert summary.failed == 0

    listed = memory.conversations()

    assert sorted((c.title, c.tree) for c in listed) == [
        ("Budget", "6a1f0c2e-8d3b-4c1a-9e5f-0b7d2a4c6e82"),
        ("Moving plans", "6a1f0c2e-8d3b-4c1a-9e5f-0b7d2a4c6e81"),
    ]
    for conversation in listed:
        assert conversation.head == memory.head(conversation.tree)
        assert conversation.root is not None
        assert memory.path(conversation.head)[0].id == conversation.root  # type: ignore[arg-type]
        in_tree = [n for n in memory.store.iter_events("default") if n.tree == conversation.tree]
        assert conversation.events == len(in_tree)
    assert [c.updated_seq for c in listed] == sorted((c.updated_seq for c in listed), reverse=True)
    assert listed[0].tree == "6a1f0c2e-8d3b-4c1a-9e5f-0b7d2a4c6e82"  # imported last
