"""A real Mem0 (scripted LLM, hashing embedder, local Qdrant) wrapped by ``BranchMem0``.

Each test drives one branch operation through Mem0's own pipeline, shows what plain Mem0
answers at an anchor (the same instance, read without the wrapper) and what the wrapper
answers. Mem0 1.0.x and 2.x differ (UPDATE/DELETE vs additive with hash dedup); where they
do, the test states each version's plain behaviour.
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("mem0") is None:
    pytest.skip("mem0ai is not installed (extra: branchmem[mem0])", allow_module_level=True)

from branchmem import Memory
from branchmem.errors import InvalidInput, NotFoundError
from branchmem.integrations.mem0 import SCOPE_CHANGE_KIND, BranchMem0, record_id_for
from branchmem.integrations.mem0.offline import AnnotatedFact, offline_memory

USER = "alice"

CITY = {
    "I am moving to Chengdu next month.": [AnnotatedFact("city", "User is moving to Chengdu")],
    "I am moving to Hangzhou next month.": [AnnotatedFact("city", "User is moving to Hangzhou")],
    "I have a cat named Mimi.": [AnnotatedFact("pet", "User has a cat named Mimi")],
    "We gave the cat away, I no longer have a cat.": [
        AnnotatedFact("pet", "User no longer has a cat named Mimi", op="retract")
    ],
    "I work as a teacher.": [AnnotatedFact("job", "User works as a teacher")],
    "I am allergic to peanuts.": [AnnotatedFact("allergy", "User is allergic to peanuts")],
    "Peanuts give me hives, I am allergic to peanuts.": [
        AnnotatedFact("allergy", "User is allergic to peanuts")
    ],
    "I am allergic to shrimp.": [AnnotatedFact("allergy", "User is allergic to shrimp")],
}


class Chat:
    """A conversation tree recorded in the store and fed to the wrapped Mem0 message by
    message, as a chat app would (every branch, in arrival order)."""

    def __init__(self, wrapped: BranchMem0) -> None:
        self.wrapped = wrapped
        self.store = wrapped.store

    def say(self, event_id: str, parent: str | None, content: str, role: str = "user") -> Any:
        self.store.add_event(event_id, parent, role=role, content=content)
        message = {"role": role, "content": content}
        return self.wrapped.add([message], event_ids=[event_id], user_id=USER)

    def wrapped_texts(self, anchor: str) -> set[str]:
        found = self.wrapped.get_all(anchor=anchor, user_id=USER)["results"]
        return {str(m["memory"]) for m in found}

    def plain_texts(self) -> set[str]:
        memory = self.wrapped.memory
        if self.wrapped.filters_api:
            found = memory.get_all(filters={"user_id": USER})
        else:
            found = memory.get_all(user_id=USER)
        return {str(m["memory"]) for m in found["results"]}


@pytest.fixture
def mem0_memory(tmp_path: Path) -> Iterator[Any]:
    memory = offline_memory(tmp_path / "mem0")
    for content, facts in CITY.items():
        memory.llm.annotate(content, facts)
    yield memory
    close = getattr(memory, "close", None)
    if callable(close):
        close()


@pytest.fixture
def chat(mem0_memory: Any) -> Chat:
    store = Memory(mode="strict")
    chat = Chat(BranchMem0(mem0_memory, store=store))
    store.add_event("s0", None, role="system", content="You are a helpful assistant.")
    return chat


def is_additive(chat: Chat) -> bool:
    """Mem0 2.x: ADD-only pipeline with hash dedup (1.0.x resolves ADD/UPDATE/DELETE/NONE)."""
    return "top_k" in inspect.signature(chat.wrapped.memory.search).parameters


def test_fork_by_edit_keeps_each_branch_to_its_own_city(chat: Chat) -> None:
    chat.say("u1", "s0", "I am moving to Chengdu next month.")
    chat.say("u1b", "s0", "I am moving to Hangzhou next month.")  # the user edited u1

    plain = chat.plain_texts()
    if is_additive(chat):
        assert plain == {"User is moving to Chengdu", "User is moving to Hangzhou"}
    else:  # 1.x UPDATEd the Chengdu memory in place: branch u1 lost its fact
        assert plain == {"User is moving to Hangzhou"}
    assert chat.wrapped_texts("u1b") == {"User is moving to Hangzhou"}
    assert chat.wrapped_texts("u1") == {"User is moving to Chengdu"}


def test_update_across_branches_is_a_revision_visible_only_below_the_update(chat: Chat) -> None:
    chat.say("u1", "s0", "I am moving to Chengdu next month.")
    chat.say("a1", "u1", "Noted, Chengdu it is.", role="assistant")
    chat.say("u2", "a1", "I work as a teacher.")  # branch A continues
    result = chat.say("u3", "a1", "I am moving to Hangzhou next month.")  # fork at a1

    if is_additive(chat):
        assert result["branchmem"]["added"] and not result["branchmem"]["revised"]
        assert "User is moving to Hangzhou" in chat.plain_texts()
    else:
        (updated,) = result["branchmem"]["revised"]
        assert chat.plain_texts() == {"User is moving to Hangzhou", "User works as a teacher"}
        revision = chat.store.get_record(record_id_for(updated))
        assert set(revision.sources or ()) == {"u1", "u3"}  # prior sources + the update
    # Plain Mem0 tells branch A the user moves to Hangzhou; the wrapper does not.
    assert chat.wrapped_texts("u2") == {"User is moving to Chengdu", "User works as a teacher"}
    below_fork = {"User is moving to Hangzhou"}
    if is_additive(chat):  # 2.x never supersedes: the shared prefix's Chengdu stays too
        below_fork.add("User is moving to Chengdu")
    assert chat.wrapped_texts("u3") == below_fork


def test_delete_across_branches_hides_only_below_the_deleting_message(chat: Chat) -> None:
    chat.say("u1", "s0", "I have a cat named Mimi.")
    chat.say("a1", "u1", "Mimi is a lovely name.", role="assistant")
    chat.say("u2", "a1", "I work as a teacher.")
    result = chat.say("u3", "a1", "We gave the cat away, I no longer have a cat.")

    if is_additive(chat):
        assert "User no longer has a cat named Mimi" in chat.plain_texts()  # shown on A too
        assert chat.wrapped_texts("u3") == {
            "User has a cat named Mimi",
            "User no longer has a cat named Mimi",
        }
    else:
        (deleted,) = result["branchmem"]["retracted"]
        assert "User has a cat named Mimi" not in chat.plain_texts()  # gone for every branch
        assert chat.wrapped_texts("u3") == set()
        assert chat.wrapped.explain(deleted, "u3").visible is False
    # Branch A never gave the cat away: nothing is lost there.
    assert chat.wrapped_texts("u2") == {"User has a cat named Mimi", "User works as a teacher"}


def test_duplicate_skipped_because_a_sibling_had_it_is_attested_on_this_branch(
    chat: Chat,
) -> None:
    chat.say("u1", "s0", "I am allergic to peanuts.")
    result = chat.say("u1b", "s0", "Peanuts give me hives, I am allergic to peanuts.")
    chat.store.add_event("u1c", "s0", content="What should I cook tonight?")  # a third edit

    assert result["results"] == []  # Mem0 stored nothing new: the sibling's copy matched
    (attested,) = result["branchmem"]["attested"]
    assert chat.plain_texts() == {"User is allergic to peanuts"}
    assert chat.wrapped_texts("u1b") == {"User is allergic to peanuts"}
    assert chat.wrapped_texts("u1") == {"User is allergic to peanuts"}
    # Plain Mem0 gives the allergy to a branch that never mentioned it; the wrapper does not.
    assert chat.wrapped_texts("u1c") == set()
    assert chat.wrapped.explain(attested, "u1c").visible is False


def test_switch_back_does_not_merge_the_two_branches_allergies(chat: Chat) -> None:
    chat.say("u1", "s0", "I am allergic to peanuts.")
    chat.say("a1", "u1", "I will avoid peanuts.", role="assistant")
    chat.say("u1b", "s0", "I am allergic to shrimp.")
    chat.say("a1b", "u1b", "I will avoid shrimp.", role="assistant")
    chat.say("u2", "a1", "Suggest a dinner for tonight.")  # back on the peanut branch

    plain = chat.plain_texts()
    if is_additive(chat):
        assert plain == {"User is allergic to peanuts", "User is allergic to shrimp"}
    else:
        assert plain == {"User is allergic to shrimp"}
    assert chat.wrapped_texts("u2") == {"User is allergic to peanuts"}
    assert chat.wrapped_texts("a1b") == {"User is allergic to shrimp"}


def test_mem0_shows_the_sibling_branch_to_its_llm_which_the_wrapper_cannot_undo(
    chat: Chat,
) -> None:
    chat.say("u1", "s0", "I am moving to Chengdu next month.")
    start = len(chat.wrapped.memory.llm.prompts)
    chat.say("u1b", "s0", "I am moving to Hangzhou next month.")

    prompts = list(chat.wrapped.memory.llm.prompts)[start:]
    # 2.x: the scope's last messages; 1.x: the neighbour memories to resolve against
    assert any("Chengdu" in prompt for prompt in prompts)
    assert chat.wrapped_texts("u1b") == {"User is moving to Hangzhou"}


def test_search_ranks_by_mem0_and_returns_only_visible_hits(chat: Chat) -> None:
    chat.say("u1", "s0", "I am moving to Chengdu next month.")
    chat.say("u1b", "s0", "I am moving to Hangzhou next month.")

    found = chat.wrapped.search("Where is the user moving?", anchor="u1", user_id=USER, limit=5)
    assert [m["memory"] for m in found["results"]] == ["User is moving to Chengdu"]
    assert found["results"][0]["score"] > 0
    # 1.x overwrote the Chengdu text: the wrapper ranks its kept revision itself
    assert found["results"][0].get("archived", False) is not is_additive(chat)
    assert chat.wrapped.search("moving", anchor=None, user_id=USER)["results"] == []


def test_search_fetches_past_sibling_hits_until_limit_is_met(mem0_memory: Any) -> None:
    store = Memory(mode="strict")
    wrapped = BranchMem0(mem0_memory, store=store, overfetch=1)
    store.add_event("root", None, role="system", content="start")
    store.add_event("mine", "root", content="I have a dog.")
    mem0_memory.llm.annotate("I have a dog.", [AnnotatedFact("pet", "User has a dog")])
    wrapped.add("I have a dog.", event_ids=["mine"], user_id=USER)
    for i in range(24):  # a sibling branch full of closer matches
        content = f"I have a dog called Rex number {i}."
        mem0_memory.llm.annotate(content, [AnnotatedFact(f"dog{i}", f"User has dog Rex {i}")])
        store.add_event(f"other{i}", "root", content=content)
        wrapped.add(content, event_ids=[f"other{i}"], user_id=USER)

    found = wrapped.search("User has dog Rex", anchor="mine", user_id=USER, limit=1)
    assert [m["memory"] for m in found["results"]] == ["User has a dog"]


def test_add_requires_known_events_on_one_path(chat: Chat) -> None:
    chat.store.add_event("x1", "s0", content="hello")
    chat.store.add_event("x2", "s0", content="hi")
    message = [{"role": "user", "content": "hello"}]
    with pytest.raises(NotFoundError, match="nope"):
        chat.wrapped.add(message, event_ids=["nope"], user_id=USER)
    with pytest.raises(InvalidInput, match="one root path"):
        chat.wrapped.add(message * 2, event_ids=["x1", "x2"], user_id=USER)
    with pytest.raises(InvalidInput, match="one id per message"):
        chat.wrapped.add(message, event_ids=["x1", "x2"], user_id=USER)
    with pytest.raises(InvalidInput, match="empty"):
        chat.wrapped.add(message, event_ids=[], user_id=USER)


def test_a_none_that_moves_a_memory_to_another_run_is_recorded(
    mem0_memory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Memory(mode="strict")
    wrapped = BranchMem0(mem0_memory, store=store)
    if wrapped.filters_api:
        pytest.skip("Mem0 2.x never rewrites a stored memory's scope")
    # Qdrant filters run_id exactly, so 1.x's NONE only meets another run's memory on a
    # store that ignores the filter (the notes list FAISS and Chroma); simulate that store.
    search = mem0_memory.vector_store.search

    def search_ignoring_run(*args: Any, filters: dict[str, Any], **kwargs: Any) -> Any:
        return search(*args, filters={k: v for k, v in filters.items() if k != "run_id"}, **kwargs)

    monkeypatch.setattr(mem0_memory.vector_store, "search", search_ignoring_run)
    store.add_event("c1", None, content="I have a cat named Mimi.")
    store.add_event("c2", "c1", content="I have a cat named Mimi.")
    first = wrapped.add("I have a cat named Mimi.", event_ids=["c1"], user_id=USER, run_id="r1")
    second = wrapped.add("I have a cat named Mimi.", event_ids=["c2"], user_id=USER, run_id="r2")

    (moved,) = second["branchmem"]["scope_changes"]
    assert moved == first["branchmem"]["added"][0]
    assert mem0_memory.get(moved)["run_id"] == "r2"
    (change,) = store.visible("c2", kind=SCOPE_CHANGE_KIND)
    assert change.sources == ("c2",)
    assert change.meta["mem0_id"] == moved
    assert store.visible("c1", kind=SCOPE_CHANGE_KIND) == []


def test_verbatim_add_sources_each_memory_on_its_own_message(chat: Chat) -> None:
    chat.store.add_event("v1", "s0", content="Remember: the wifi password is tulip.")
    chat.store.add_event("v2", "v1", role="assistant", content="Saved the wifi password.")
    messages = [
        {"role": "user", "content": "Remember: the wifi password is tulip."},
        {"role": "assistant", "content": "Saved the wifi password."},
    ]
    result = chat.wrapped.add(messages, event_ids=["v1", "v2"], user_id=USER, infer=False)

    first, second = result["branchmem"]["added"]
    assert chat.store.get_record(record_id_for(first)).sources == ("v1",)
    assert chat.store.get_record(record_id_for(second)).sources == ("v2",)
    assert chat.wrapped_texts("v1") == {"Remember: the wifi password is tulip."}


def test_a_delete_the_user_meant_everywhere_hides_the_memory_on_every_branch(
    chat: Chat,
) -> None:
    if is_additive(chat):
        pytest.skip("Mem0 2.x never deletes during add")
    chat.say("u1", "s0", "I have a cat named Mimi.")
    chat.say("u2", "u1", "I work as a teacher.")
    chat.store.add_event("u3", "u1", content="We gave the cat away, I no longer have a cat.")
    message = {"role": "user", "content": "We gave the cat away, I no longer have a cat."}
    result = chat.wrapped.add([message], event_ids=["u3"], user_id=USER, delete_scope="tree")

    (deleted,) = result["branchmem"]["retracted"]
    assert chat.wrapped_texts("u2") == {"User works as a teacher"}
    assert chat.wrapped.explain(deleted, "u2").reason == "retracted"
    with pytest.raises(InvalidInput, match="delete_scope"):
        chat.wrapped.add([message], event_ids=["u3"], user_id=USER, delete_scope="global")
