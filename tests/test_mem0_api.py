"""``BranchMem0`` mirrors the installed Mem0's public ``Memory`` API, and each call maps to a
gated branchmem operation (update -> revision, delete -> branch-scope retraction, ...)."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import os
from typing import Any

import pytest

if importlib.util.find_spec("mem0") is None:
    pytest.skip("mem0ai is not installed (extra: branchmem[mem0])", allow_module_level=True)

os.environ.setdefault("MEM0_TELEMETRY", "False")  # before mem0 reads it on import

import mem0

from branchmem import InvalidInput, Memory
from branchmem.integrations.mem0 import AsyncBranchMem0, BranchMem0, MemoryNotVisible
from branchmem.integrations.mem0.offline import AnnotatedFact, offline_memory

USER = "alice"
FACTS = {
    "I live in Paris.": [AnnotatedFact("city", "User lives in Paris")],
    "I have a cat.": [AnnotatedFact("pet", "User has a cat")],
    "I like tea.": [AnnotatedFact("drink", "User likes tea")],
}


def public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, callable)
        if not name.startswith("_")
    }


def accepts(ours: inspect.Signature, theirs: inspect.Signature) -> list[str]:
    """Mem0 parameters our method would refuse, or take differently (positional or not)."""
    own = ours.parameters
    catch_all = any(p.kind is p.VAR_KEYWORD for p in own.values())
    problems = []
    for name, param in theirs.parameters.items():
        if name == "self" or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        mine = own.get(name)
        if mine is None:
            if not catch_all or param.kind is param.POSITIONAL_OR_KEYWORD:
                problems.append(f"{name}: missing")
            continue
        positional = (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD)
        if param.kind in positional and mine.kind not in positional:
            problems.append(f"{name}: keyword-only here, positional in mem0")
    return problems


@pytest.mark.parametrize(
    ("ours", "theirs"), [(BranchMem0, mem0.Memory), (AsyncBranchMem0, mem0.AsyncMemory)]
)
def test_every_public_method_of_the_installed_mem0_is_mirrored(ours: type, theirs: type) -> None:
    mine = public_methods(ours)
    missing = sorted(set(public_methods(theirs)) - set(mine))
    assert not missing, f"{ours.__name__} lacks {missing} (mem0 {mem0.__version__})"
    refused = {
        name: problems
        for name, signature in public_methods(theirs).items()
        if name != "add" or ours is BranchMem0  # AsyncMemory.add's `llm` goes to **kwargs
        if (problems := accepts(mine[name], signature))
    }
    assert not refused, refused


def test_async_methods_are_coroutines_with_the_sync_signature() -> None:
    for name in ("add", "search", "get_all", "get", "update", "delete", "delete_all"):
        method = getattr(AsyncBranchMem0, name)
        assert inspect.iscoroutinefunction(method), name
        assert inspect.signature(method) == inspect.signature(getattr(BranchMem0, name))


class Chat:
    """A tree: s0 -> paris -> {cat, tea}; the head follows the last message."""

    def __init__(self) -> None:
        self.mem0 = offline_memory()
        for content, facts in FACTS.items():
            self.mem0.llm.annotate(content, facts)
        self.store = Memory()
        self.wrapped = BranchMem0(self.mem0, self.store, tree="chat")

    def say(self, event_id: str, parent: str | None, content: str) -> None:
        self.store.add_event(event_id, parent, tree="chat", role="user", content=content)
        self.store.set_head(event_id)
        self.wrapped.add(content, user_id=USER)  # sourced at the head: no event ids

    def texts(self, anchor: str) -> set[str]:
        found = self.wrapped.get_all(filters={"user_id": USER}, anchor=anchor)["results"]
        return {str(m["memory"]) for m in found}

    def memory_id(self, text: str, anchor: str) -> str:
        found = self.wrapped.get_all(filters={"user_id": USER}, anchor=anchor)["results"]
        return next(str(m["id"]) for m in found if m["memory"] == text)


@pytest.fixture
def chat() -> Chat:
    built = Chat()
    built.say("paris", None, "I live in Paris.")
    built.say("cat", "paris", "I have a cat.")
    built.say("tea", "paris", "I like tea.")  # a sibling of "cat": the head moves here
    return built


def test_the_bound_tree_head_is_the_anchor_and_the_source(chat: Chat) -> None:
    head = chat.wrapped.get_all(filters={"user_id": USER})["results"]
    assert {m["memory"] for m in head} == {"User lives in Paris", "User likes tea"}
    assert chat.texts("cat") == {"User lives in Paris", "User has a cat"}
    on_cat = chat.wrapped.at("cat")
    assert {m["memory"] for m in on_cat.search("cat", filters={"user_id": USER})["results"]} >= {
        "User has a cat"
    }


def test_with_follow_off_a_call_without_an_anchor_is_refused() -> None:
    wrapped = BranchMem0(offline_memory(), Memory(), follow=False)
    with pytest.raises(InvalidInput, match="no anchor"):
        wrapped.get_all(filters={"user_id": USER})
    with pytest.raises(InvalidInput, match="no anchor"):
        wrapped.add("I like tea.", user_id=USER)


def test_get_is_gated(chat: Chat) -> None:
    cat = chat.memory_id("User has a cat", "cat")
    assert chat.wrapped.get(cat, anchor="cat")["memory"] == "User has a cat"  # type: ignore[index]
    assert chat.wrapped.get(cat, anchor="tea") is None
    assert chat.wrapped.get(cat) is None  # the head is "tea"


def test_update_is_a_revision_that_holds_below_the_call_only(chat: Chat) -> None:
    paris = chat.memory_id("User lives in Paris", "tea")
    chat.store.add_event("moved", "cat", tree="chat", role="user", content="I moved to Lyon.")
    chat.wrapped.at("moved").update(paris, text="User lives in Lyon")
    assert "User lives in Lyon" in chat.texts("moved")
    assert "User lives in Paris" not in chat.texts("moved")
    assert "User lives in Paris" in chat.texts("tea")  # archived text, still this branch's
    rows = chat.wrapped.history(paris, provenance=True)
    assert [(r["event"], r["new_memory"]) for r in rows] == [
        ("ADD", "User lives in Paris"),
        ("UPDATE", "User lives in Lyon"),
    ]
    assert rows[1]["old_memory"] == "User lives in Paris" and "moved" in rows[1]["sources"]


def test_update_of_a_memory_not_visible_here_is_refused(chat: Chat) -> None:
    cat = chat.memory_id("User has a cat", "cat")
    with pytest.raises(MemoryNotVisible, match=cat):
        chat.wrapped.at("tea").update(cat, text="User has two cats")
    with pytest.raises(ValueError):  # what mem0 raises for an unknown id
        chat.wrapped.update("no-such-id", text="x")


def test_delete_is_a_branch_retraction(chat: Chat) -> None:
    paris = chat.memory_id("User lives in Paris", "tea")
    chat.wrapped.delete(paris)  # at the head: "tea"
    assert "User lives in Paris" not in chat.texts("tea")
    assert "User lives in Paris" in chat.texts("cat")
    assert chat.mem0.get(paris) is not None  # Mem0 keeps it: the cat branch still has it
    assert [r["event"] for r in chat.wrapped.history(paris)] == ["ADD", "DELETE"]
    with pytest.raises(MemoryNotVisible):
        chat.wrapped.delete(paris)


def test_delete_all_retracts_what_is_visible_here(chat: Chat) -> None:
    chat.wrapped.at("cat").delete_all(user_id=USER)
    assert chat.texts("cat") == set()
    assert chat.texts("tea") == {"User lives in Paris", "User likes tea"}
    with pytest.raises(InvalidInput, match="user_id"):
        chat.wrapped.delete_all()


def test_reset_empties_mem0_and_withdraws_every_record(chat: Chat) -> None:
    chat.wrapped.reset()
    assert chat.texts("cat") == set() and chat.texts("tea") == set()
    if chat.wrapped.filters_api:  # mem0 2.x
        left = chat.mem0.get_all(filters={"user_id": USER})
    else:
        left = chat.mem0.get_all(user_id=USER)
    assert left["results"] == []


def test_async_wrapper_runs_the_same_calls() -> None:
    async def run() -> tuple[set[str], set[str]]:
        mem = offline_memory()
        for content, facts in FACTS.items():
            mem.llm.annotate(content, facts)
        store = Memory()
        store.add_event("a", None, role="user", content="I live in Paris.")
        store.add_event("b", None, role="user", content="I like tea.")
        wrapped = AsyncBranchMem0(mem, store)
        await wrapped.at("a").add("I live in Paris.", user_id=USER)
        await wrapped.at("b").add("I like tea.", user_id=USER)
        found_a = await wrapped.at("a").get_all(filters={"user_id": USER})
        found_b = await wrapped.get_all(filters={"user_id": USER}, anchor="b")
        return (
            {m["memory"] for m in found_a["results"]},
            {m["memory"] for m in found_b["results"]},
        )

    on_a, on_b = asyncio.run(run())
    assert on_a == {"User lives in Paris"}
    assert on_b == {"User likes tea"}


def test_kwargs_of_mem0_pass_through(chat: Chat) -> None:
    found: Any = chat.wrapped.search("Paris", filters={"user_id": USER}, top_k=1, rerank=False)
    assert len(found["results"]) == 1
