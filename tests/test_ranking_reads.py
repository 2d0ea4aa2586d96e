"""A ranking reads what the view decided, not the anchor: the whole view it lends from is
settled with the other reads (``views.decided``), and the records' places on the path are
read once (``provenance.path_places``). The answers are the same whichever read decides the
records: the tree's index (``path_events_per_entry=0``) or the whole path (``None``).
"""

from __future__ import annotations

import pytest

from branchmem import Memory
from branchmem._core.provenance import path_places
from branchmem._engine.views import decided, index_may_lend, tree_index

READS = [0, None]  # the tree's index whenever the anchor allows; the whole path always


def chain(mem: Memory, ids: list[str], parent: str | None = None) -> None:
    for event_id in ids:
        mem.add_event(event_id, parent, content=f"turn {event_id}")
        parent = event_id


@pytest.mark.parametrize("reads", READS)
def test_of_several_visible_superseders_the_deepest_lends(reads: int | None) -> None:
    mem = Memory(path_events_per_entry=reads)
    chain(mem, ["e1", "e2", "e3", "e4", "e5", "e6"])
    mem.add_record("old", sources=["e1"], content="the Lisbon trip with my sister")
    mem.add_record("near", sources=["e2"], content="a plan we dropped")
    mem.add_record("deep", sources=["e4"], content="another plan instead")
    mem.supersede("deep", "old")
    mem.supersede("near", "old")
    (hit, *_) = mem.search("Lisbon sister", "e6")
    assert hit.record.id == "deep"
    assert hit.why.startswith("for old (superseded): ")
    ranked = mem.context("e6", query="Lisbon sister", budget=4000)
    assert (
        ranked.text
        == Memory(store=mem.store, path_events_per_entry=reads)
        .context("e6", query="Lisbon sister", budget=4000)
        .text
    )


@pytest.mark.parametrize("anchor", ["e6", "e3", "s2"])
def test_context_and_search_answer_the_same_from_the_index_or_the_path(anchor: str) -> None:
    answers = []
    for reads in READS:
        mem = Memory(path_events_per_entry=reads)
        chain(mem, ["e1", "e2", "e3", "e4", "e5", "e6"])
        chain(mem, ["s1", "s2"], "e2")
        mem.add_record("city-1", sources=["s1"], content="moving to Porto", key="city")
        mem.add_record("note-1", sources=["e1"], content="Porto flat viewing")
        mem.add_record("note-2", sources=["e5"], content="flat rent agreed")
        mem.add_record("note-3", sources=["e3"], content="Porto flat again", supersedes=["note-1"])
        context = mem.context(anchor, query="Porto flat", budget=4000)
        hits = [(h.record.id, h.score, h.why) for h in mem.search("Porto flat", anchor)]
        answers.append((context.text, hits))
    assert answers[0] == answers[1]


def test_a_keyless_tree_with_no_supersede_lends_nothing_and_reads_no_whole_view() -> None:
    mem = Memory(path_events_per_entry=0)
    chain(mem, ["e1", "e2", "e3", "e4"])
    mem.add_record("a", sources=["e1"], content="tea")
    mem.add_record("b", sources=["e3"], content="coffee")
    with mem._read("default") as ns:
        at = ns.anchor_node("e4")
        index, route = tree_index(ns, at, None)
        assert index is not None and not index_may_lend(ns, index) and route[0] == "index"
        shown = decided(ns, at, False, None, lending=True)
        assert shown.whole is None
        assert [n.record_id for n in shown.revisions] == ["a", "b"]
    mem.supersede("b", "a")  # now a record of the index may lend: the whole view is read too
    with mem._read("default") as ns:
        at = ns.anchor_node("e4")
        index, _ = tree_index(ns, at, None)
        assert index is not None and index_may_lend(ns, index)
        assert decided(ns, at, False, None, lending=True).whole is not None
        assert decided(ns, at, False, None).whole is None  # not asked for


def test_places_are_the_frontiers_depths_in_the_anchors_tree() -> None:
    mem = Memory()
    chain(mem, ["e1", "e2", "e3"])
    mem.add_event("t1", tree="other", content="another tree")
    mem.add_record("r1", sources=["e2"], content="x")
    mem.add_record("r2", sources=["t1"], content="y")
    with mem._read("default") as ns:
        revisions = [ns.store.get_revisions(ns.name, r)[-1] for r in ("r1", "r2")]
        tree = ns.anchor_node("e3").tree
    assert path_places(tree, revisions) == {"r1": 1, "r2": None}
    assert path_places(None, revisions) == {}  # no anchor, or a detached one: no places
