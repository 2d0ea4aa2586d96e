"""The newest-first rule (branchmem.search.newest, docs/retrieval.md "Newest first").

``newest_first`` is compared with the naive reference of tests/test_search.py on random
rankings; ``Memory.search`` is checked on small stories: the later of two hits that state the
same thing comes first, a superseded record lends its rank to its visible superseder, and a
record off the anchor's path never changes a rank.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from branchmem import Memory
from branchmem.search import newest
from branchmem.search.newest import newest_first, same_thing
from search_reference import HEAVIER_SHARE, SAME_THING, WINDOW, naive_newest_first

TERMS = ("redis", "memory", "usage", "keys", "the", "what")


def test_the_reference_uses_the_library_constants() -> None:
    assert (SAME_THING, HEAVIER_SHARE, WINDOW) == (
        newest.SAME_THING,
        newest.HEAVIER_SHARE,
        newest.WINDOW,
    )


@settings(max_examples=400, deadline=None)
@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=0, max_value=25))
def test_newest_first_matches_the_naive_reference(seed: int, size: int) -> None:
    rng = random.Random(seed)
    ranking = [f"r{i:02}" for i in rng.sample(range(40), size)]
    depth: dict[str, int | None] = {
        doc_id: None if rng.random() < 0.15 else rng.randrange(8) for doc_id in ranking
    }
    matched = {doc_id: set(rng.sample(TERMS, rng.randint(0, 4))) for doc_id in ranking}
    weights = {term: rng.choice((0.0, 0.1, 0.5, 1.0, 2.5)) for term in TERMS}
    got = newest_first(ranking, depth, matched, weights)
    want = naive_newest_first(ranking, depth, matched, weights)
    assert [(p.record_id, p.displaced) for p in got] == want
    assert sorted(p.record_id for p in got) == sorted(ranking)  # a permutation
    assert [p.record_id for p in got[WINDOW:]] == ranking[WINDOW:]  # past the window: as is
    for slot, placed in enumerate(got):  # a hit without a path position never moves up
        if depth[placed.record_id] is None:
            assert slot >= ranking.index(placed.record_id)
        if placed.displaced:  # only a later hit that states the same thing moves up
            assert depth[placed.record_id] > depth[placed.displaced]  # type: ignore[operator]


def test_same_thing_weighs_the_terms_both_match_against_either_side() -> None:
    weights = {"redis": 2.0, "memory": 1.0, "the": 0.1, "next": 0.1, "month": 0.1}
    # a hit matching more terms still states it
    assert same_thing({"redis", "memory"}, {"redis", "memory", "the"}, weights)
    assert same_thing({"redis", "the"}, {"redis", "memory", "the"}, weights)  # 2.1 >= 0.3*3.1
    # only the common words in common: not the same thing, however heavy the lighter share
    assert not same_thing({"next", "month"}, {"redis", "next", "month"}, weights)
    assert not same_thing({"redis"}, {"memory"}, weights)
    assert not same_thing(set(), {"redis"}, weights)
    assert not same_thing({"the"}, {"the"}, {"the": 0.0})


def test_a_later_hit_that_states_the_same_thing_takes_the_slot_others_move_down() -> None:
    weights = dict.fromkeys(TERMS, 1.0)
    same = {"redis", "memory"}
    placed = newest_first(
        ["old", "other", "new", "newer"],
        {"old": 3, "other": 1, "new": 9, "newer": 12},
        {"old": same, "other": {"keys"}, "new": same, "newer": same | {"keys"}},
        weights,
    )
    # the best-ranked later one moves first; then the next later one above the old again
    assert [(p.record_id, p.displaced) for p in placed] == [
        ("new", "old"),
        ("newer", "old"),
        ("old", ""),
        ("other", ""),
    ]
    # equal depths keep the score order: arrival never decides
    tied = newest_first(["a", "b"], {"a": 4, "b": 4}, {"a": same, "b": same}, weights)
    assert [p.record_id for p in tied] == ["a", "b"]
    # below the threshold nothing moves
    apart = newest_first(["a", "b"], {"a": 1, "b": 4}, {"a": same, "b": {"keys"}}, weights)
    assert [p.record_id for p in apart] == ["a", "b"]


# -- through Memory.search ---------------------------------------------------------------
def redis_story(mem: Memory, *, fork: bool) -> None:
    mem.add_event("u1", content="set up redis")
    mem.add_record(
        "old", sources=["u1"], content="redis memory usage: redis uses 150MB memory, 10,000 keys"
    )
    mem.add_event("u2", "u1", content="chat about other things")
    mem.add_record("noise", sources=["u2"], content="the frontend uses react")
    mem.add_event("u3", "u2", content="update")
    mem.add_record(
        "new",
        sources=["u3"],
        content="after scaling up, redis memory usage is now 200MB with 15,000 keys in it",
    )
    if fork:  # an abandoned edit of u3 that states the same thing, deeper
        mem.add_event("x3", "u2", content="edit")
        mem.add_event("x4", "x3", content="edit")
        mem.add_record("elsewhere", sources=["x4"], content="redis memory usage is 999MB keys")


QUESTION = "What is the memory usage of my redis instance and how many keys?"


def test_the_update_ranks_above_the_original() -> None:
    mem = Memory()
    redis_story(mem, fork=False)
    from branchmem.search.lexical import rank

    visible = {r.id: r.content for r in mem.visible("u3")}
    assert next(h.doc_id for h in rank(QUESTION, visible, 10)) == "old"  # BM25 alone: stale
    hits = mem.search(QUESTION, "u3")
    assert [h.record.id for h in hits] == ["new", "old", "noise"]
    assert hits[0].why.endswith("; newest first: in the place of old")
    # newest first moves hits, it never changes a score: each is BM25 plus 0.3 of its best
    # path neighbour's (old at u1, noise at u2, new at u3)
    bm25 = {h.doc_id: h.score for h in rank(QUESTION, visible)}
    noise = bm25.get("noise", 0.0)
    assert {h.record.id: h.score for h in hits} == {
        "old": bm25["old"] + 0.3 * noise,
        "noise": noise + 0.3 * max(bm25["old"], bm25["new"]),
        "new": bm25["new"] + 0.3 * noise,
    }


def test_an_off_path_record_never_changes_a_rank() -> None:
    clean, noisy = Memory(), Memory()
    redis_story(clean, fork=False)
    redis_story(noisy, fork=True)
    for question in (QUESTION, "redis memory", "keys", "react"):
        for k in (1, 2, 10):
            want = [(h.record.id, h.score, h.why) for h in clean.search(question, "u3", k=k)]
            got = [(h.record.id, h.score, h.why) for h in noisy.search(question, "u3", k=k)]
            assert got == want, (question, k)
    # at the fork's anchor the deeper edit is on the path, and it is the newest
    assert next(h.record.id for h in noisy.search(QUESTION, "x4")) == "elsewhere"


def test_a_superseded_record_lends_its_rank_to_its_visible_superseder() -> None:
    mem = Memory()
    mem.add_event("u1", content="budget")
    mem.add_record("plan-a", sources=["u1"], content="trip budget 3000 for Chengdu")
    mem.add_event("u2", "u1", content="changed")
    mem.add_record("plan-b", sources=["u2"], content="we go to Hangzhou instead")
    mem.add_event("side", "u1", content="a sibling")
    # plan-b matches nothing: it stands beside plan-a on the path (docs/retrieval.md)
    assert [h.record.id for h in mem.search("Chengdu budget", "u2")] == ["plan-a", "plan-b"]
    mem.supersede("plan-b", "plan-a")
    (hit,) = mem.search("Chengdu budget", "u2")
    assert hit.record.id == "plan-b"
    assert hit.why.startswith("for plan-a (superseded): ")
    # where the superseder is not visible, the old record is not superseded: itself
    assert [h.record.id for h in mem.search("Chengdu budget", "side")] == ["plan-a"]


def test_keys_lend_too_and_the_top_k_is_a_prefix() -> None:
    mem = Memory()
    mem.add_event("u1", content="moving")
    mem.add_record("c1", sources=["u1"], content="moving to Chengdu next month", key="city")
    mem.add_event("u2", "u1", content="no, Hangzhou")
    mem.add_record("c2", sources=["u2"], content="moving to Hangzhou", key="city")
    for index in range(14):
        mem.add_event(f"n{index}", f"n{index - 1}" if index else "u2", content="chat")
        mem.add_record(f"m{index:02}", sources=[f"n{index}"], content=f"next month plan {index}")
    full = mem.search("Chengdu next month", f"n{13}", k=50)
    assert "c1" not in [h.record.id for h in full]
    assert full[0].record.id == "c2"  # the key's current value, in the place of c1
    for k in (1, 3, 10, 20):
        assert [h.record.id for h in mem.search("Chengdu next month", "n13", k=k)] == [
            h.record.id for h in full[:k]
        ]
