"""A class swap works: ``BranchMem0`` in place of ``mem0.Memory`` in Mem0's own README
snippets, with no anchor anywhere, records the chat and stands at its head; a fork nobody
chose between is refused in strict mode and counted in compat mode; ``history`` never
answers a silent ``[]`` (docs/mem0.md, "Following the conversation")."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import os
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("mem0") is None:
    pytest.skip("mem0ai is not installed (extra: branchmem[mem0])", allow_module_level=True)

os.environ.setdefault("MEM0_TELEMETRY", "False")  # before mem0 reads it on import

from branchmem import Memory
from branchmem.integrations.mem0 import (
    DEFAULT_TREE,
    AmbiguousHead,
    AsyncBranchMem0,
    BranchMem0,
    UnknownMemory,
)
from branchmem.integrations.mem0.offline import (
    AnnotatedFact,
    offline_async_memory,
    offline_memory,
)

FACTS = {
    "I am vegetarian and allergic to nuts.": [
        AnnotatedFact("diet", "User is vegetarian"),
        AnnotatedFact("allergy", "User is allergic to nuts"),
    ],
    "I live in Paris.": [AnnotatedFact("city", "User lives in Paris")],
    "I moved to Lyon.": [AnnotatedFact("city", "User lives in Lyon")],
    "I like tea.": [AnnotatedFact("drink", "User likes tea")],
}


def scripted() -> Any:
    memory = offline_memory()
    for content, facts in FACTS.items():
        memory.llm.annotate(content, facts)
    return memory


def texts(found: dict[str, Any]) -> set[str]:
    return {str(m["memory"]) for m in found["results"]}


def readme_chat(memory: Any) -> list[list[str]]:
    """Mem0's README "Basic Usage" loop over three turns: search the user's memories,
    answer, add the turn; what each turn's search showed. In the installed Mem0's dialect
    (1.0.x's README passes ``user_id=`` and ``limit=``)."""
    mem0 = memory.memory if isinstance(memory, BranchMem0) else memory
    dialect_2x = "top_k" in inspect.signature(mem0.search).parameters

    def chat_with_memories(message: str, user_id: str = "default_user") -> list[str]:
        if dialect_2x:
            relevant = memory.search(query=message, filters={"user_id": user_id}, top_k=3)
        else:
            relevant = memory.search(query=message, user_id=user_id, limit=3)
        shown = [entry["memory"] for entry in relevant["results"]]
        system_prompt = "User Memories:\n" + "\n".join(f"- {m}" for m in shown)
        messages = [
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": message},
            {"role": "assistant", "content": "Noted."},
        ]
        memory.add(messages, user_id=user_id)
        return shown

    return [chat_with_memories(m) for m in ("I live in Paris.", "I like tea.", "Paris?")]


def test_mem0s_readme_chat_loop_answers_as_mem0_with_the_class_swapped() -> None:
    swapped = BranchMem0(scripted())  # was: Memory()
    shown = readme_chat(swapped)
    assert shown == readme_chat(scripted())
    assert "User lives in Paris" in shown[2]
    path = swapped.store.path(swapped.head() or "")
    assert [e.role for e in path] == ["system", "user", "assistant"] * 3
    assert {e.tree for e in path} == {DEFAULT_TREE}


def test_mem0s_quickstart_calls_run_with_the_class_swapped() -> None:
    """Mem0's quickstart: add with metadata, search, get_all, get, update, history,
    delete, delete_all, reset, in that order, none of them naming an anchor."""
    m = BranchMem0(scripted())
    messages = [{"role": "user", "content": "I am vegetarian and allergic to nuts."}]
    added = m.add(messages, user_id="alice", metadata={"category": "food"})
    assert {r["memory"] for r in added["results"]} == {
        "User is vegetarian",
        "User is allergic to nuts",
    }
    found = m.search("What can the user eat?", filters={"user_id": "alice"})
    assert texts(found) == {"User is vegetarian", "User is allergic to nuts"}
    listed = m.get_all(filters={"user_id": "alice"})
    nuts = next(r["id"] for r in listed["results"] if "nuts" in r["memory"])
    assert m.get(nuts)["memory"] == "User is allergic to nuts"  # type: ignore[index]
    m.update(memory_id=nuts, text="User is allergic to peanuts")
    rows = m.history(memory_id=nuts)
    assert [(r["event"], r["new_memory"]) for r in rows] == [
        ("ADD", "User is allergic to nuts"),
        ("UPDATE", "User is allergic to peanuts"),
    ]
    m.delete(memory_id=nuts)
    assert texts(m.get_all(filters={"user_id": "alice"})) == {"User is vegetarian"}
    m.delete_all(user_id="alice")
    assert texts(m.get_all(filters={"user_id": "alice"})) == set()
    m.reset()
    assert [r["event"] for r in m.history(nuts)] == ["ADD", "UPDATE", "DELETE", "DELETE"]


def test_mem0s_async_snippet_runs_with_the_class_swapped() -> None:
    async def run() -> set[str]:
        inner = offline_async_memory()
        inner.llm.annotate("I like tea.", FACTS["I like tea."])
        memory = AsyncBranchMem0(inner)  # was: AsyncMemory()
        await memory.add([{"role": "user", "content": "I like tea."}], user_id="alice")
        return texts(await memory.search("tea", filters={"user_id": "alice"}))

    assert asyncio.run(run()) == {"User likes tea"}


def edited(memory: BranchMem0) -> tuple[str, str]:
    """An edit: the application moves the head back to the message before the edited one
    and adds the new text; the wrapper records it there (a fork) and stands on it. Returns
    the message before the edit and the abandoned one; the branch now holds Lyon, not tea."""
    memory.add("I live in Paris.", user_id="alice")
    first = memory.head()
    assert first is not None
    memory.add("I like tea.", user_id="alice")
    tea = memory.head()
    assert tea is not None
    memory.store.set_head(first)  # "I like tea." is being edited
    memory.add("I moved to Lyon.", user_id="alice")
    now = texts(memory.get_all(filters={"user_id": "alice"}))
    assert "User lives in Lyon" in now and "User likes tea" not in now
    assert "User likes tea" in texts(memory.get_all(filters={"user_id": "alice"}, anchor=tea))
    return first, tea


def test_the_wrapper_follows_a_branch_the_application_switches_to() -> None:
    memory = BranchMem0(scripted())
    first, _ = edited(memory)
    assert memory.store.get_event(memory.head() or "").parent == first


def forked(mode: str) -> BranchMem0:
    """The application records a chat with a fork and sets no head."""
    store = Memory(mode)
    store.add_event("root", None, tree="chat", role="user", content="I live in Paris.")
    store.add_event("left", "root", role="user", content="I like tea.")
    store.add_event("right", "root", role="user", content="I moved to Lyon.")
    memory = BranchMem0(scripted(), store, tree="chat")
    memory.at("root").add("I live in Paris.", user_id="alice")
    memory.at("left").add("I like tea.", user_id="alice")
    memory.at("right").add("I moved to Lyon.", user_id="alice")
    return memory


def test_strict_mode_refuses_a_fork_with_no_head_naming_the_tree_and_leaves() -> None:
    memory = forked("strict")
    with pytest.raises(AmbiguousHead, match="'chat'") as raised:
        memory.get_all(filters={"user_id": "alice"})
    assert raised.value.tree == "chat" and raised.value.candidates == ("left", "right")
    with pytest.raises(AmbiguousHead):
        memory.add("I like tea.", user_id="alice")
    memory.store.set_head("left")  # the application says where it is: no guess needed
    assert texts(memory.get_all(filters={"user_id": "alice"})) == {
        "User lives in Paris",
        "User likes tea",
    }


def test_compat_mode_takes_the_latest_leaf_and_counts_it() -> None:
    memory = forked("compat")
    assert memory.head() == "right"
    assert "User lives in Lyon" in texts(memory.get_all(filters={"user_id": "alice"}))
    assert memory.report()["mem0"]["head_picked"] == {"latest_leaf": 2}


def test_one_leaf_without_a_head_is_the_head() -> None:
    store = Memory()
    store.add_event("a", None, tree="chat", role="user", content="I live in Paris.")
    store.add_event("b", "a", role="user", content="I like tea.")
    assert BranchMem0(scripted(), store, tree="chat").head() == "b"
    assert BranchMem0(scripted(), store, tree="nowhere").head() is None


def test_history_of_an_id_never_written_through_the_wrapper_is_an_error_naming_it() -> None:
    memory = BranchMem0(scripted())
    with pytest.raises(UnknownMemory, match=r"no-such-id.*neither the store nor Mem0"):
        memory.history("no-such-id")
    behind = memory.memory.add("I like tea.", user_id="alice")["results"][0]["id"]
    with pytest.raises(UnknownMemory, match=rf"{behind}.*Mem0 itself holds 1 history rows"):
        memory.history(behind)
    with pytest.raises(ValueError):  # what Mem0 code catching unknown ids expects
        memory.history("no-such-id")


def test_the_add_benchmark_runs_at_a_tiny_size(tmp_path: Path) -> None:
    """bench/mem0_add.py (its figures are in docs/scaling.md's block) still runs end to end;
    its JSON goes to the test's own folder, never over the last real run's."""
    from test_bench_scripts import run  # exits 0, or fails with the script's stderr

    out = tmp_path / "mem0_add.json"
    printed = run(
        "mem0_add.py", "--sizes", "20,40", "--adds", "2", "--stores", "qdrant", "--out", str(out)
    )
    assert "qdrant t(40)/t(20): Mem0 add" in printed and "wrapper own" in printed
    assert out.exists()
