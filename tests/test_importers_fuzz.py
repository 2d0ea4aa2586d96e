"""Fuzzing every parser: whatever the input, only the project's own errors come out.

Three sources of bad input: arbitrary JSON given as a format, real-shaped fixtures with
one value replaced or removed anywhere, and fixture files cut or corrupted at any byte.
Plans that parse are also applied, which must never raise either.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from branchmem import Memory
from branchmem.errors import BranchmemError
from branchmem.importers import FORMATS, load

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
SCALE = int(os.environ.get("BRANCHMEM_BENCH_SCALE", "0") or 0)
EXAMPLES = 300 * max(SCALE, 1)  # make bench sets 10: thousands per parser
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

SAMPLES = {
    "chatgpt": "chatgpt-conversations.json",
    "openwebui": "openwebui-export.json",
    "librechat": "librechat-export.json",
    "claude": "claude-tree.json",
    "claude-linear": "claude-conversations.json",
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["", "user", "00000000-0000-0000-0000-000000000000", "client-created-root"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)


def read_sillytavern() -> list[Any]:
    text = (FIXTURES / "Aria - 2025-3-14@10h00m00s.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def exercise(source: Any, format: str = "auto", *, name: str | None = None) -> None:
    """Plan and apply; anything but a BranchmemError at planning time is a bug."""
    try:
        plan = load(source, format, name=name)
        conversations = list(plan)
    except BranchmemError:
        return
    for conversation in conversations:  # a failed conversation plans nothing
        assert conversation.error is None or conversation.events == ()
    summary = plan.apply(Memory())  # per-conversation failures are reported, never raised
    assert summary.conversations == len(conversations)
    assert summary.imported + summary.failed == len(conversations)


def locations(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON value (keys and indexes)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found.extend(locations(child, (*prefix, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(locations(child, (*prefix, index)))
    return found


def mutate(value: Any, where: tuple[Any, ...], replacement: Any, delete: bool) -> Any:
    if not where:
        return replacement
    document = copy.deepcopy(value)
    holder = document
    for step in where[:-1]:
        holder = holder[step]
    if delete:
        del holder[where[-1]]
    else:
        holder[where[-1]] = replacement
    return document


@FUZZ
@given(st.sampled_from((*FORMATS, "auto")), json_values)
def test_arbitrary_json_under_any_format(format: str, value: Any) -> None:
    exercise(value, format, name="fuzz")


@FUZZ
@given(st.sampled_from(sorted(SAMPLES)), st.data())
def test_one_value_replaced_or_removed_anywhere(sample: str, data: st.DataObject) -> None:
    document = json.loads((FIXTURES / SAMPLES[sample]).read_text())
    paths = locations(document)
    where = data.draw(st.sampled_from(paths))
    replacement = data.draw(json_values)
    delete = bool(where) and data.draw(st.booleans())
    exercise(mutate(document, where, replacement, delete))


@FUZZ
@given(st.data())
def test_sillytavern_lines_mutated(data: st.DataObject) -> None:
    lines = read_sillytavern()
    where = data.draw(st.sampled_from(locations(lines)[1:]))
    mutated = mutate(lines, where, data.draw(json_values), data.draw(st.booleans()))
    exercise(mutated, "sillytavern", name="Aria - fuzz")


FILES = sorted(FIXTURES.iterdir())


@settings(FUZZ, max_examples=max(EXAMPLES // 2, 60))
@given(st.sampled_from(FILES), st.data())
def test_files_cut_or_corrupted_at_any_byte(
    tmp_path_factory: Any, path: Path, data: st.DataObject
) -> None:
    raw = path.read_bytes()
    cut = data.draw(st.integers(0, len(raw)))
    mode = data.draw(st.sampled_from(["truncate", "flip", "insert"]))
    if mode == "truncate":
        broken = raw[:cut]
    elif mode == "flip":
        broken = raw[:cut] + bytes([data.draw(st.integers(0, 255))]) + raw[cut + 1 :]
    else:
        broken = raw[:cut] + data.draw(st.binary(min_size=1, max_size=4)) + raw[cut:]
    target = tmp_path_factory.mktemp("fuzz") / path.name
    target.write_bytes(broken)
    exercise(target)


# -- round trip: any tree written in a format comes back as the same tree -----------------


def uuid_of(n: int) -> str:
    return f"00000000-0000-4000-9000-{n:012d}"


def render(format: str, parents: list[int | None], head: int, nested: bool) -> Any:
    """Write the tree ``parents`` (message i's parent index) in ``format``."""
    ids = [uuid_of(n) for n in range(len(parents))]
    role = ["user" if n % 2 == 0 else "assistant" for n in range(len(parents))]
    text = [f"message {n}" for n in range(len(parents))]
    children: dict[int | None, list[int]] = {}
    for n, parent in enumerate(parents):
        children.setdefault(parent, []).append(n)
    if format == "chatgpt":
        mapping = {
            ids[n]: {
                "id": ids[n],
                "parent": None if parents[n] is None else ids[parents[n]],  # type: ignore[index]
                "children": [ids[c] for c in children.get(n, [])],
                "message": {"author": {"role": role[n]}, "content": {"parts": [text[n]]}},
            }
            for n in reversed(range(len(parents)))  # the mapping order must not matter
        }
        return [{"id": "conv", "current_node": ids[head], "mapping": mapping}]
    if format == "openwebui":
        messages = {
            ids[n]: {
                "id": ids[n],
                "parentId": None if parents[n] is None else ids[parents[n]],  # type: ignore[index]
                "childrenIds": [ids[c] for c in children.get(n, [])],
                "role": role[n],
                "content": text[n],
            }
            for n in reversed(range(len(parents)))
        }
        return {"id": "conv", "chat": {"history": {"currentId": ids[head], "messages": messages}}}
    if format == "claude":
        return {
            "uuid": "conv",
            "current_leaf_message_uuid": ids[head],
            "chat_messages": [
                {
                    "uuid": ids[n],
                    "parent_message_uuid": "00000000-0000-4000-8000-000000000000"
                    if parents[n] is None
                    else ids[parents[n]],  # type: ignore[index]
                    "sender": "human" if role[n] == "user" else "assistant",
                    "text": text[n],
                }
                for n in range(len(parents))
            ],
        }

    def librechat(n: int) -> dict[str, Any]:
        message: dict[str, Any] = {
            "messageId": ids[n],
            "parentMessageId": "00000000-0000-0000-0000-000000000000"
            if parents[n] is None
            else ids[parents[n]],  # type: ignore[index]
            "isCreatedByUser": role[n] == "user",
            "text": text[n],
        }
        if nested:
            message["children"] = [librechat(c) for c in children.get(n, [])]
        return message

    roots = children[None] if nested else range(len(parents))
    return {"conversationId": "conv", "messages": [librechat(n) for n in roots]}


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[int | None], int]:
    size = draw(st.integers(1, 25))
    parents: list[int | None] = [None]
    for n in range(1, size):
        parents.append(
            draw(st.none() | st.integers(0, n - 1)) if n < 3 else draw(st.integers(0, n - 1))
        )
    leaves = [n for n in range(size) if n not in parents]
    return parents, draw(st.sampled_from(leaves))


@FUZZ
@given(st.sampled_from(["chatgpt", "openwebui", "claude", "librechat"]), trees(), st.booleans())
def test_round_trip_restores_tree_head_and_path(
    format: str, tree: tuple[list[int | None], int], nested: bool
) -> None:
    parents, head = tree
    plan = load(render(format, parents, head, nested), format)
    (conversation,) = plan
    assert conversation.error is None, conversation.error
    expected = {
        uuid_of(n): None if parent is None else uuid_of(parent) for n, parent in enumerate(parents)
    }
    assert {e["id"]: e["parent"] for e in conversation.events} == expected
    if format == "librechat":  # no head in the format: the newest sibling at each fork
        tip = max(n for n, parent in enumerate(parents) if parent is None)
        while any(parent == tip for parent in parents):
            tip = max(n for n, parent in enumerate(parents) if parent == tip)
        assert conversation.head == uuid_of(tip)
    else:
        assert conversation.head == uuid_of(head)
    memory = Memory()
    plan.apply(memory)
    assert conversation.head is not None
    path = [(e.role, e.content) for e in memory.path(conversation.head)]
    assert path == conversation.transcript()
    chain: list[str] = []
    current: int | None = int(conversation.head[-12:])
    while current is not None:
        chain.append(f"message {current}")
        current = parents[current]
    assert [text for _, text in path] == chain[::-1]
