"""Each format's fixture (an edit and a regenerate) plans the expected tree, head and transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from branchmem.importers import ConversationPlan, load

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "fixtures"

HANGZHOU_TRANSCRIPT = [
    ("user", "Hi! I need help planning a move."),
    ("assistant", "Happy to help. Where are you moving?"),
    ("user", "I'm moving to Hangzhou next month."),
    ("assistant", "Hangzhou is a great choice; West Lake is beautiful."),
]


def only(path: Path, format: str = "auto") -> ConversationPlan:
    conversations = list(load(path, format))
    assert len(conversations) == 1
    assert conversations[0].error is None, conversations[0].error
    return conversations[0]


def uid(group: int, n: int) -> str:
    return f"00000000-0000-4000-a00{group}-{n:012d}"


def children_of(plan: ConversationPlan) -> dict[str | None, list[str]]:
    out: dict[str | None, list[str]] = {}
    for event in plan.events:
        out.setdefault(event["parent"], []).append(event["id"])
    return out


def assert_parent_before_child(events: tuple[dict[str, Any], ...]) -> None:
    seen: set[str] = set()
    for event in events:
        assert event["parent"] is None or event["parent"] in seen, event["id"]
        seen.add(event["id"])


def assert_edit_and_regenerate(plan: ConversationPlan, group: int) -> None:
    """The shared story: message 2 edited (Chengdu -> Hangzhou), its reply regenerated."""
    kids = children_of(plan)
    assert kids[uid(group, 3)] == [uid(group, 4), uid(group, 6)]  # the edit: sibling users
    assert kids[uid(group, 6)] == [uid(group, 7), uid(group, 8)]  # the regenerate
    assert plan.head == uid(group, 8)
    assert plan.branches == 3
    assert_parent_before_child(plan.events)
    assert {event["tree"] for event in plan.events} == {plan.tree}


def test_chatgpt_tree_head_and_hidden_nodes() -> None:
    plans = list(load(FIXTURES / "chatgpt-conversations.json"))
    moving, budget = plans
    assert load(FIXTURES / "chatgpt-conversations.json").format == "chatgpt"
    assert moving.tree == "6a1f0c2e-8d3b-4c1a-9e5f-0b7d2a4c6e81"
    assert_edit_and_regenerate(moving, 1)
    assert moving.head_reason == "current_node"
    # The shared root id is not unique across conversations, so it is prefixed.
    root = moving.events[0]
    assert root["id"] == f"{moving.tree}:client-created-root"
    assert root["meta"] == {
        "source_id": "client-created-root",
        "hidden": True,
        "title": "Moving plans",
    }
    assert moving.events[1]["meta"]["hidden"] is True  # the hidden system message
    assert moving.transcript() == [
        ("user", "[image]\nHi! Here is my new flat. I need help planning a move."),
        *HANGZHOU_TRANSCRIPT[1:],
    ]
    assert budget.transcript() == [
        ("user", "My budget is 3000 a month."),
        ("assistant", "Noted: 3000 a month."),
    ]


def test_openwebui_tree_in_children_order_whatever_the_dict_order() -> None:
    plan = only(FIXTURES / "openwebui-export.json")
    assert plan.format == "openwebui"
    assert_edit_and_regenerate(plan, 2)
    assert plan.head_reason == "currentId"
    assert plan.transcript() == HANGZHOU_TRANSCRIPT


def test_librechat_head_is_latest_leaf_and_edit_is_kept_in_place() -> None:
    plan = only(FIXTURES / "librechat-export.json")
    assert_edit_and_regenerate(plan, 3)
    assert "latest leaf by timestamp" in plan.head_reason
    edited = next(event for event in plan.events if event["id"] == uid(3, 3))
    assert edited["meta"]["edited"] is True
    assert edited["content"] == "Happy to help! Where are you moving?"
    assert plan.transcript()[1] == ("assistant", "Happy to help! Where are you moving?")


def test_claude_official_export_is_linear() -> None:
    plan = only(FIXTURES / "claude-conversations.json")
    assert [event["parent"] for event in plan.events] == [
        None,
        uid(4, 2),
        uid(4, 3),
        uid(4, 6),
    ]
    assert plan.head == uid(4, 8)
    assert plan.transcript()[:3] == HANGZHOU_TRANSCRIPT[:3]
    assert plan.transcript()[3] == (
        "assistant",
        "Hangzhou is a great choice; West Lake is beautiful.\n\n[tool_use]",
    )


def test_claude_web_tree_uses_parent_uuid_and_current_leaf() -> None:
    plan = only(FIXTURES / "claude-tree.json")
    assert_edit_and_regenerate(plan, 5)
    assert plan.events[0]["parent"] is None  # the nil-UUID sentinel is "no parent"
    assert plan.head_reason == "current_leaf_message_uuid"
    assert plan.transcript() == HANGZHOU_TRANSCRIPT


def test_sillytavern_swipes_are_siblings_and_swipe_id_picks_the_head() -> None:
    plan = only(FIXTURES / "Aria - 2025-3-14@10h00m00s.jsonl")
    assert plan.tree == "Aria - 2025-3-14@10h00m00s"
    kids = children_of(plan)
    user_turn = kids[plan.events[0]["id"]]
    assert len(user_turn) == 1
    swipes = kids[user_turn[0]]
    assert [next(e for e in plan.events if e["id"] == s)["content"] for s in swipes] == [
        "Chengdu! Great food.",
        "Chengdu is lovely; pack for humid summers.",
    ]
    assert plan.head == swipes[1]
    assert plan.transcript() == [
        ("assistant", "Hello! I'm Aria. What brings you here?"),
        ("user", "I'm moving to Chengdu next month."),
        ("assistant", "Chengdu is lovely; pack for humid summers."),
    ]


def test_sillytavern_ids_are_stable_and_a_branch_file_shares_the_prefix() -> None:
    main = only(FIXTURES / "Aria - 2025-3-14@10h00m00s.jsonl")
    again = only(FIXTURES / "Aria - 2025-3-14@10h00m00s.jsonl")
    branch = only(FIXTURES / "Branch #1 - 2025-3-14@10h05m00s.jsonl")
    assert [e["id"] for e in main.events] == [e["id"] for e in again.events]
    assert branch.tree == main.tree
    assert branch.events[0] == main.events[0]  # the greeting both files hold
    assert branch.events[1]["parent"] == main.events[0]["id"]
    assert branch.events[1]["id"] != main.events[1]["id"]  # the edited message forks


def test_sillytavern_value_needs_a_name_or_a_header_date() -> None:
    lines = [{"name": "Aria", "is_user": False, "mes": "Hi"}]
    (nameless,) = load(lines)
    assert nameless.error is not None
    (named,) = load(lines, name="Aria - chat")
    assert named.tree == "Aria - chat"


def test_format_can_be_forced_and_unknown_shapes_are_refused(tmp_path: Path) -> None:
    assert load(FIXTURES / "claude-tree.json", "claude").format_reason == "given"
    odd = tmp_path / "odd.json"
    odd.write_text('[{"hello": 1}]')
    with pytest.raises(Exception, match=r"\$\[0\].*no known chat export"):
        load(odd)


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared sample exports not present")
def test_real_chatgpt_export_with_edit_and_regenerate() -> None:
    plan = only(SHARED / "chatgpt-tree.json")
    kids = children_of(plan)
    assert kids["bda8a275-886d-4f59-b38c-d7037144f0d5"] == [
        "aaa24023-b02f-4d49-b568-5856b41750c0",
        "aaa236a3-cdfc-4eb1-b5c5-790c6641f880",
    ]
    assert kids["aaa20127-b9e3-44f6-afbe-a2475838625a"] == [
        "d0d2a7df-d2fc-4df9-bf0a-1c5121e227ae",
        "f63b8e17-aa5c-4ca6-a1bf-d4d285e269b8",
    ]
    assert plan.head == "f63b8e17-aa5c-4ca6-a1bf-d4d285e269b8"
    assert_parent_before_child(plan.events)
    transcript = plan.transcript()
    assert [text for _, text in transcript[:5]] == [
        "hi there",
        "Hello! How can I assist you today?",
        "hi again",
        "Hey! Welcome back. What's on your mind?",
        "tell me a joke",
    ]
    assert [role for role, _ in transcript] == ["user", "assistant"] * 3
    interrupted = next(e for e in plan.events if e["id"].startswith("ada93f81"))
    assert interrupted["meta"]["status"] == "in_progress"


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared sample exports not present")
def test_real_librechat_recursive_export() -> None:
    plan = only(SHARED / "librechat-tree.json")
    assert plan.format == "librechat"
    kids = children_of(plan)
    assert len(plan.events) == 9
    assert len(kids["4c395510-fdfd-4556-b034-f9440f025e91"]) == 2  # edited user message
    assert len(kids["6e4c95ca-fcb1-4869-adc3-b4bcec83a270"]) == 2  # regenerated reply
    assert plan.branches == 3
    # No head in the format: the newest sibling at each fork, which LibreChat displays.
    assert plan.head == "1f062c99-ff0a-4cf4-a1cf-7150261a24e2"
    assert [text for _, text in plan.transcript()][2] == "lol"


def test_zipped_export_is_read_from_its_conversations_json(tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("chat.html", "<html></html>")
        out.write(FIXTURES / "chatgpt-conversations.json", "conversations.json")
    plan = load(archive)
    assert plan.format == "chatgpt" and plan.source.endswith("!conversations.json")
    assert [c.head for c in plan] == [c.head for c in load(FIXTURES / "chatgpt-conversations.json")]

    ambiguous = tmp_path / "two.zip"
    with zipfile.ZipFile(ambiguous, "w") as out:
        out.writestr("a.json", "[]")
        out.writestr("b.json", "[]")
    with pytest.raises(Exception, match=r"found 2 \(a.json, b.json\)"):
        load(ambiguous)
