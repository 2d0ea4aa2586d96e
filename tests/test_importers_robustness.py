"""Malformed exports fail one conversation with an error naming it and the JSON path."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from branchmem.errors import InvalidInput
from branchmem.importers import ConversationPlan, ImportFormatError, load

FIXTURES = Path(__file__).parent / "fixtures" / "importers"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def failure(plan: ConversationPlan) -> ImportFormatError:
    assert isinstance(plan.error, ImportFormatError), plan
    assert plan.events == ()
    return plan.error


def test_missing_parent_fails_only_that_conversation() -> None:
    export = fixture("chatgpt-conversations.json")
    node = export[1]["mapping"]["00000000-0000-4000-a001-000000000012"]
    node["parent"] = "00000000-0000-4000-a001-999999999999"
    good, bad = load(export)
    assert good.error is None
    error = failure(bad)
    assert error.conversation == "'6a1f0c2e-8d3b-4c1a-9e5f-0b7d2a4c6e82' ('Budget')"
    assert error.path == '$[1].mapping["00000000-0000-4000-a001-000000000012"]'
    assert "999999999999" in str(error) and "Budget" in str(error)
    assert isinstance(error, InvalidInput)


def test_parent_cycle_is_reported() -> None:
    export = fixture("openwebui-export.json")
    messages = export[0]["chat"]["history"]["messages"]
    first = "00000000-0000-4000-a002-000000000002"
    messages[first]["parentId"] = "00000000-0000-4000-a002-000000000008"
    (plan,) = load(export)
    assert "cycle" in str(failure(plan))


def test_duplicate_id_with_different_content_is_refused_identical_one_is_merged() -> None:
    export = fixture("librechat-export.json")
    export["messages"].append(dict(export["messages"][3]))
    (plan,) = load(export)
    assert plan.error is None and len(plan.events) == 7
    export["messages"].append({**export["messages"][3], "text": "something else"})
    (plan,) = load(export)
    error = failure(plan)
    assert error.path == "$.messages[8]"
    assert "duplicate message id" in str(error) and "$.messages[3]" in str(error)


@pytest.mark.parametrize(
    ("name", "mutate", "path"),
    [
        (
            "openwebui-export.json",
            lambda e: e[0]["chat"]["history"]["messages"][
                "00000000-0000-4000-a002-000000000003"
            ].update(role=5),
            '$[0].chat.history.messages["00000000-0000-4000-a002-000000000003"].role',
        ),
        (
            "chatgpt-conversations.json",
            lambda e: e[0].update(mapping=[]),
            "$[0].mapping",
        ),
        (
            "claude-tree.json",
            lambda e: e["chat_messages"][2].update(uuid=None),
            "$.chat_messages[2].uuid",
        ),
        (
            "librechat-export.json",
            lambda e: e["messages"][1].update(isCreatedByUser="yes"),
            "$.messages[1].isCreatedByUser",
        ),
        (
            "chatgpt-conversations.json",
            lambda e: e[1].update(current_node="nowhere"),
            "$[1].current_node",
        ),
    ],
)
def test_wrong_types_name_the_json_path(name: str, mutate: Any, path: str) -> None:
    export = copy.deepcopy(fixture(name))
    mutate(export)
    plans = list(load(export))
    errors = [plan.error for plan in plans if plan.error is not None]
    assert len(errors) == 1
    assert isinstance(errors[0], ImportFormatError)
    assert errors[0].path == path
    assert path in str(errors[0])


def test_sillytavern_swipe_id_out_of_range(tmp_path: Path) -> None:
    lines = (FIXTURES / "Aria - 2025-3-14@10h00m00s.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    last["swipe_id"] = 7
    broken = tmp_path / "Aria - broken.jsonl"
    broken.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
    (plan,) = load(broken)
    error = failure(plan)
    assert error.path == "$[3].swipe_id" and error.conversation == "'Aria - broken'"


def test_truncated_file_keeps_the_complete_conversations(tmp_path: Path) -> None:
    text = (FIXTURES / "chatgpt-conversations.json").read_text()
    cut = tmp_path / "conversations.json"
    cut.write_text(text[: text.index('"title": "Budget"') + 40])
    good, bad = load(cut)
    assert good.error is None and len(good.events) == 9
    error = failure(bad)
    assert error.path == "$[1]" and error.conversation == "#1"
    assert "truncated" in str(error)


def test_syntax_error_inside_an_element_is_located(tmp_path: Path) -> None:
    broken = tmp_path / "conversations.json"
    broken.write_text('[{"mapping": {}, "id": "a"}, {"mapping": {}, "id": "b",, }]')
    first, second = load(broken)
    assert first.error is None and first.events == ()
    assert "invalid JSON" in str(failure(second)) and failure(second).path == "$[1]"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "starts with nothing"),
        (b"hello", "not a JSON export"),
        (b'{"a": 1} 5', "unexpected data"),
        (b'{"mapping": {', "truncated"),
        (b"[\xff]", "not UTF-8"),
    ],
)
def test_unreadable_files_raise_import_format_error(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "export.json"
    path.write_bytes(content)
    with pytest.raises(ImportFormatError, match=message):
        for _ in load(path):
            pass


def test_empty_export_is_an_empty_plan(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(" [ ] ")
    plan = load(path)
    assert plan.format == "none" and list(plan) == []


def test_unknown_format_name_is_refused() -> None:
    with pytest.raises(ImportFormatError, match="unknown format 'gemini'"):
        load([], "gemini")


def test_deeply_nested_librechat_export_is_read() -> None:
    """Recursive exports nest two JSON levels per message; 2,000 messages must still load."""
    depth = 2000
    ids = [f"00000000-0000-4000-b000-{n:012d}" for n in range(depth)]
    text = ""
    for n in reversed(range(depth)):
        children = f"[{text}]" if text else "[]"
        text = (
            json.dumps({"messageId": ids[n], "isCreatedByUser": n % 2 == 0, "text": f"m{n}"})[:-1]
            + f', "children": {children}}}'
        )
    export = f'{{"conversationId": "deep", "messages": [{text}]}}'
    from branchmem.importers.jsonstream import loads

    (plan,) = load(loads(export))
    assert plan.error is None and len(plan.events) == depth and plan.head == ids[-1]


def test_deep_nesting_off_the_main_thread_is_an_error_not_a_crash() -> None:
    import threading

    from branchmem.importers.jsonstream import loads

    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            loads('{"messages": ' + "[" * 5000 + "]" * 5000 + "}")
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    worker = threading.Thread(target=read)
    worker.start()
    worker.join()
    assert isinstance(outcome[0], ImportFormatError) and "nested too deeply" in str(outcome[0])


@pytest.mark.parametrize("path", ["\x00", "/nonexistent/conversations.json", "."])
def test_unopenable_paths_raise_import_format_error(path: str) -> None:
    with pytest.raises(ImportFormatError, match="cannot read"):
        load(path)
