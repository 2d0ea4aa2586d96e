"""Whose words (``search.voice``, docs/retrieval.md): a record citing only the assistant's
messages keeps ASSISTANT_SHARE of its score, and newest first never moves the assistant's
record into the place of the user's. The differential suite (tests/test_search.py) compares
both with the naive reference on every backend; these tests hold the rule's cases."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from branchmem import Memory
from branchmem.search import voice
from branchmem.search.voice import ASSISTANT_SHARE, weighed
from search_reference import ASSISTANT_SHARE as REFERENCE_SHARE


def test_the_reference_uses_the_library_constant() -> None:
    assert REFERENCE_SHARE == ASSISTANT_SHARE
    assert 0 < ASSISTANT_SHARE < 1


def test_only_a_record_citing_nothing_but_assistant_messages_is_quieter() -> None:
    assert voice.voice(["assistant"]) == ASSISTANT_SHARE
    assert voice.voice(["assistant", "assistant"]) == ASSISTANT_SHARE
    assert voice.voice(["assistant", "user"]) == 1.0
    assert voice.voice(["tool"]) == 1.0
    assert voice.voice([]) == 1.0
    assert voice.voice(None) == 1.0


def chat(mem: Memory, *, roles: bool = True) -> None:
    """The user states a budget; the assistant restates it at length; the user updates it;
    the assistant restates the update (``roles=False``: every turn is the user's)."""
    turns = [
        ("u1", "user", "My grocery budget is $500 a month."),
        ("a1", "assistant", "Great: a grocery budget of $500 a month, your monthly grocery "
         "budget, leaves room in the grocery budget for bulk buying."),
        ("u2", "user", "The grocery budget went up to $550."),
        ("a2", "assistant", "With the grocery budget at $550 a month, the grocery budget "
         "covers your grocery budget goals."),
    ]  # fmt: skip
    parent = None
    for event_id, role, text in turns:
        mem.add_event(event_id, parent, role=role if roles else "user", content=text)
        mem.add_record(f"r-{event_id}", sources=[event_id], content=text)
        parent = event_id


def test_the_users_update_ranks_above_the_assistants_restatements() -> None:
    mem = Memory()
    chat(mem)
    hits = mem.search("grocery budget", "a2", k=4)
    ids = [h.record.id for h in hits]
    assert ids[0] == "r-u2", [(h.record.id, h.why) for h in hits]
    assert ids.index("r-u1") < ids.index("r-a1")
    quiet = {h.record.id: h.why for h in hits if "the assistant's words" in h.why}
    assert set(quiet) == {"r-a1", "r-a2"}


def test_without_roles_the_rule_changes_nothing() -> None:
    """The same chat with every turn the user's ranks by relevance and newest first only."""
    unlabelled = Memory()
    chat(unlabelled, roles=False)
    ranked = unlabelled.search("grocery budget", "a2", k=4)
    assert not any("the assistant's words" in h.why for h in ranked)
    # the assistant's long restatement is the best BM25 hit once nobody's words count less
    assert ranked[0].record.id == "r-a2"


def test_a_record_citing_the_user_too_keeps_its_score() -> None:
    mem = Memory()
    chat(mem)
    mem.add_record("both", sources=["u2", "a2"], content="grocery budget $550")
    mem.add_record("digest", sources=["r-a2"], content="grocery budget restated")
    hits = {h.record.id: h.why for h in mem.search("grocery budget", "a2", k=10)}
    assert "the assistant's words" not in hits["both"]
    assert "the assistant's words" not in hits["digest"]


@pytest.mark.parametrize(
    ("earlier", "later", "expected"),
    [
        # the assistant's later reply states the same thing: it does not take the user's place
        ("user", "assistant", ["first", "second"]),
        # the user's later update takes the place of the assistant's earlier statement
        ("assistant", "user", ["second", "first"]),
    ],
)
def test_newest_first_moves_a_hit_only_into_a_place_of_no_stronger_voice(
    earlier: str, later: str, expected: list[str]
) -> None:
    mem = Memory()
    mem.add_event("t1", role=earlier, content="The budget is $500.")
    mem.add_record("first", sources=["t1"], content="budget budget $500")
    mem.add_event("t2", "t1", role=later, content="The budget is $550 now.")
    mem.add_record("second", sources=["t2"], content="budget budget $550 now")
    hits = mem.search("budget", "t2", k=2)
    assert [h.record.id for h in hits] == expected, [(h.record.id, h.why) for h in hits]


def long_chat() -> Memory:
    """90 turns, two of every three the assistant's, whose records are longer and repeat
    their words: they lead the raw BM25 ranking."""
    rng = random.Random(11)
    words = ("apple", "pear", "plum", "fig", "kiwi", "lime", "date", "tea")
    mem = Memory()
    mem.add_events(
        {
            "id": f"e{i}",
            "parent": None if i == 0 else f"e{i - 1}",
            "role": "assistant" if i % 3 else "user",
            "content": "t",
        }
        for i in range(90)
    )
    mem.add_records(
        {
            "id": f"r{i:02}",
            "sources": [f"e{i}"],
            "content": " ".join(rng.sample(words, 3) * (3 if i % 3 else 1)),
        }
        for i in range(90)
    )
    return mem


def test_a_kept_view_ranks_as_the_full_ranking_does_when_the_assistant_leads() -> None:
    """A kept view's term index scores only the best hits; when the assistant's records
    lead the raw ranking, their lowered scores must send it further down (_engine/retrieval.py
    ranks more until ``voice.weighed`` decides). A Memory's first search ranks every
    candidate; later ones at the same anchor read the kept view's index: both must agree."""
    kept = long_chat()
    kept.search("warm", "e89")
    kept.search("warm", "e89")  # the view is kept and indexed from here on
    for query in ("apple", "pear plum", "fig kiwi lime", "date tea apple"):
        for k in (1, 3, 10, 25):
            full = [(h.record.id, h.score, h.why) for h in long_chat().search(query, "e89", k=k)]
            indexed = [(h.record.id, h.score, h.why) for h in kept.search(query, "e89", k=k)]
            assert indexed == full, (query, k)
        assert any("the assistant's words" in why for _, _, why in full), query


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=0, max_value=40),
    st.integers(min_value=1, max_value=12),
)
def test_weighed_is_the_first_of_the_full_reordering(seed: int, size: int, want: int) -> None:
    """Given every candidate, ``weighed`` equals sorting them all by their weighed score
    (ties in the old order) and taking the first ``want``; given a prefix and a bound on the
    rest, it answers only when the rest cannot reach the first ``want``."""
    rng = random.Random(seed)
    scores = (0.0, 0.5, 1.0, 1.0, 2.0, rng.random())  # ties on purpose
    found = sorted(
        ((f"r{i:02}", rng.choice(scores), f"w{i}") for i in range(size)),
        key=lambda hit: -hit[1],
    )
    quiet = {doc_id for doc_id, _, _ in found if rng.random() < 0.5}
    asked: list[list[str]] = []

    def voices_of(ids: list[str]) -> dict[str, float]:
        asked.append(list(ids))
        return {d: ASSISTANT_SHARE if d in quiet else 1.0 for d in ids}

    full = sorted(
        enumerate(found),
        key=lambda item: (-item[1][1] * (ASSISTANT_SHARE if item[1][0] in quiet else 1.0), item[0]),
    )
    expected = [doc_id for _, (doc_id, _, _) in full[:want]]
    got = weighed(found, voices_of, want)
    assert got is not None
    assert [doc_id for doc_id, _, _ in got] == expected
    assert all(len(set(ids)) == len(ids) for ids in asked)  # each id asked once
    # the same candidates cut after a prefix, with the cut's best score as the bound
    cut = rng.randrange(len(found) + 1)
    partial = weighed(
        found[:cut], voices_of, want, beyond=found[cut][1] if cut < len(found) else None
    )
    if partial is not None:
        assert [doc_id for doc_id, _, _ in partial] == expected
