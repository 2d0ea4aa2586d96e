"""The rule in one place (``branchmem._core.rules``): its decision functions, the stores' rankings
held to its ranking key, and a whole view that asks the store once for statuses.

Whole decisions are compared with the independent oracle by the differential suites; these
tests pin the pieces the views share.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from branchmem import Memory
from branchmem._core import rules
from branchmem._core.provenance import EVENT, RECORD, Gate, RevisionNode, SourceRef, TreeFrontier
from branchmem._core.retraction import BRANCH, TREE, RetractionNode
from branchmem._core.topology import EventNode
from branchmem._core.visibility import STRICT, View
from branchmem.model import (
    DETACHED,
    INCONSISTENT_SOURCES,
    LEGACY,
    NO_VIEW,
    OFF_PATH,
    RETRACTION_KIND,
    VISIBLE,
)
from branchmem.store.base import Store
from branchmem.store.inmemory import InMemoryStore
from branchmem.store.sqlite import SQLiteStore


class Paths:
    """``rules.PathAnswers`` from plain sets: tree -> (attached, event ids on the path)."""

    def __init__(self, paths: dict[str | None, tuple[bool, set[str]]], open_anchor: bool = False):
        self.paths = paths
        self.open_anchor = open_anchor
        self.detached: dict[str, tuple[str, str | None]] = {}

    def path_attached(self, tree: str | None) -> bool | None:
        known = self.paths.get(tree)
        return None if known is None else known[0]

    def on_path(self, tree: str | None, event_id: str) -> bool:
        return event_id in self.paths[tree][1]

    def detached_status(self, event_id: str) -> tuple[str, str | None]:
        return self.detached.get(event_id, (DETACHED, None))


rules_gate_none = Gate()


def revision(
    record_id: str,
    seq: int,
    gate: Gate = rules_gate_none,
    key: str | None = None,
    refs: tuple[SourceRef, ...] = (),
    kind: str = "fact",
    number: int = 1,
) -> RevisionNode:
    return RevisionNode(
        record_id, number, kind, "", None, refs, key, None, {}, seq, gate
    )  # fmt: skip


def at(tree: str, event: str, depth: int, conflict: str | None = None) -> Gate:
    return Gate(frontiers=(TreeFrontier(tree, event, depth, conflict),))


# -- the gate ---------------------------------------------------------------------------
def test_gate_on_off_and_without_a_view() -> None:
    paths = Paths({"t": (True, {"a", "b"})})
    assert rules.gate(at("t", "b", 1), STRICT, paths).reason == VISIBLE
    off = rules.gate(at("t", "x", 1), STRICT, paths)
    assert (off.reason, off.source, off.tree) == (OFF_PATH, "x", "t")
    assert rules.gate(at("u", "y", 0), STRICT, paths).reason == NO_VIEW
    assert rules.gate(at("t", "b", 1, conflict="z"), STRICT, paths).reason == INCONSISTENT_SOURCES


def test_gate_positive_evidence_before_missing_information() -> None:
    paths = Paths({"t": (True, {"a"})})
    off_and_legacy = Gate(frontiers=(TreeFrontier("t", "x", 0),), legacy=True)
    assert rules.gate(off_and_legacy, rules.COMPAT, paths).reason == OFF_PATH
    legacy = Gate(frontiers=(TreeFrontier("t", "a", 0),), legacy=True)
    assert rules.gate(legacy, STRICT, paths).reason == LEGACY
    let_through = rules.gate(legacy, rules.COMPAT, paths)
    assert (let_through.reason, let_through.missing) == (VISIBLE, (LEGACY,))
    paths.detached["d"] = (NO_VIEW, None)
    assert rules.gate(Gate(detached=frozenset({"d"})), rules.COMPAT, paths).reason == NO_VIEW
    paths.detached["d"] = (OFF_PATH, "t")
    decided = rules.gate(Gate(detached=frozenset({"d"})), rules.COMPAT, paths)
    assert (decided.reason, decided.source, decided.tree) == (OFF_PATH, "d", "t")


# -- position, ranking ------------------------------------------------------------------
def test_rank_key_is_position_reversed() -> None:
    rng = random.Random(3)
    items = [(rng.choice([None, *range(5)]), seq) for seq in rng.sample(range(1000), 60)]
    by_rank = sorted(items, key=lambda item: rules.rank_key(*item))
    by_position = sorted(items, key=lambda item: rules.position(*item), reverse=True)
    assert by_rank == by_position
    assert rules.rank_key(0, 1) < rules.rank_key(None, 999)  # on the path before off it


# -- invalidation -----------------------------------------------------------------------
def test_retracts_branch_scope_at_or_below_tree_scope_after() -> None:
    fact = revision("f", seq=5, key="k")
    branch = RetractionNode("r", BRANCH, ("f",), None, None, seq=9)
    here = rules.position(3, 5)
    assert rules.retracts(branch, fact, here, rules.position(3, 9), gone=False)
    assert rules.retracts(branch, fact, here, rules.position(4, 2), gone=False)
    assert not rules.retracts(branch, fact, here, rules.position(2, 9), gone=False)
    assert not rules.retracts(branch, fact, here, None, gone=False)  # not shown here
    tree = RetractionNode("r", TREE, (), "k", None, seq=9)
    assert rules.retracts(tree, fact, here, None, gone=False)
    assert not rules.retracts(tree, fact, here, None, gone=True)  # withdrawn or erased
    assert not rules.retracts(replace_seq(tree, 4), fact, here, None, gone=False)
    other = revision("g", seq=5, key="other")
    assert not rules.retracts(tree, other, here, None, gone=False)


def replace_seq(node: RetractionNode, seq: int) -> RetractionNode:
    return RetractionNode(node.id, node.scope, node.targets, node.key, node.key_scope, seq)


def test_supersession_latest_position_holds_the_key() -> None:
    shown = {
        "a": revision("a", 1, key="k"),
        "b": revision("b", 2, key="k"),
        "c": revision("c", 3, key="k"),
        "r": revision("r", 4, key="k", kind=RETRACTION_KIND),
    }
    positions = {"a": (1, 5, 1), "b": (1, 2, 2), "c": (1, 4, 3), "r": (1, 9, 4)}
    assert rules.superseded_by_key(shown, positions, set()) == {"b", "c"}
    assert rules.superseded_by_key(shown, positions, {"a"}) == {"b"}  # a out: c holds
    assert not rules.competes(shown["r"], False, False)
    assert not rules.competes(shown["a"], True, False)
    assert rules.competes(shown["a"], False, False)


def test_stale_in_one_pass_follows_sources_in_arrival_order() -> None:
    def on(target: str, number: int | None = None) -> SourceRef:
        kind = EVENT if number is None else RECORD
        return SourceRef(target, kind, target, number)

    shown = {
        "base": revision("base", 1, refs=(on("e1"),)),
        "mid": revision("mid", 2, refs=(on("base", 1),)),
        "top": revision("top", 3, refs=(on("mid", 1),)),
        "pinned_old": revision("pinned_old", 4, refs=(on("base", 2),)),
        "alone": revision("alone", 5, refs=(on("e2"),)),
    }
    assert rules.stale_in_one_pass(shown, set(), set()) == {"pinned_old"}
    assert rules.stale_in_one_pass(shown, {"base"}, set()) == {"mid", "top", "pinned_old"}
    assert rules.stale_in_one_pass(shown, set(), {"e1"}) == {
        "base", "mid", "top", "pinned_old"
    }  # fmt: skip


# -- the stores rank as the rule does ---------------------------------------------------
def random_history(mem: Memory, seed: int) -> list[tuple[str, int]]:
    """Three trees with forks, keyed records on random events (some on two trees, some on
    events whose parent has not arrived), revised at random; returns (tree head, depth)."""
    rng = random.Random(seed)
    events: list[str] = []
    late: list[dict[str, Any]] = []
    for tree in range(3):
        parent: str | None = None
        for step in range(25):
            event_id = f"t{tree}.{step}"
            if step and rng.random() < 0.2:
                parent = rng.choice([e for e in events if e.startswith(f"t{tree}.")])
            item = {"id": event_id, "parent": parent}
            if step > 3 and rng.random() < 0.1:
                late.append(item)  # its parent arrives ... later: detached until then
            else:
                mem.add_event(event_id, parent)
            events.append(event_id)
            parent = event_id
    orphan_events = [f"o{i}" for i in range(3)]
    for orphan in orphan_events:
        mem.add_event(orphan, "missing-parent")  # never attached: no frontier
    known = [e for e in events if e not in {str(item["id"]) for item in late}]
    written: set[str] = set()
    for number in range(150):
        record_id = f"r{rng.randrange(60)}"
        sources = rng.sample(known, rng.choice([1, 1, 2]))
        if rng.random() < 0.1:
            sources = [rng.choice(orphan_events)]
        if record_id in written:
            mem.revise(record_id, sources=sources, content=str(number))
        else:
            mem.add_record(record_id, sources=sources, key=f"k{rng.randrange(4)}", content="")
            written.add(record_id)
    for item in late:
        mem.add_event(str(item["id"]), item["parent"])
    heads: list[tuple[str, int]] = []
    for tree in range(3):
        for step in (24, 12, 3):
            node = mem.store.get_event("default", f"t{tree}.{step}")
            if node is not None and node.tree is not None and node.depth is not None:
                heads.append((node.tree, node.depth))
    return heads


Asked = tuple[Store, str, str, int, bool]


def ranked(asked: Asked) -> list[tuple[str, int]]:
    store, key, tree, depth, cross = asked
    found = store.key_candidates("default", key, tree, depth, cross)
    return [(n.record_id, n.revision) for n in found]


def by_rank_key(asked: Asked) -> list[tuple[str, int]]:
    """The candidates as ``rules.rank_key`` orders them, from every stored revision."""
    store, key, tree, depth, cross = asked
    found = []
    for record_id in store.record_ids("default"):
        for node in store.get_revisions("default", record_id):
            here = node.gate.frontier_in(tree)
            if node.key != key:
                continue
            if here is not None and here.depth <= depth:
                found.append((rules.rank_key(here.depth, node.seq), node))
            elif here is None and (cross or not node.gate.frontiers):
                found.append((rules.rank_key(None, node.seq), node))
    return [(n.record_id, n.revision) for _, n in sorted(found, key=lambda item: item[0])]


@pytest.mark.parametrize("seed", [1, 2])
def test_sqlite_order_by_and_python_rankings_match_the_rank_key(tmp_path: Path, seed: int) -> None:
    stores: list[Store] = [SQLiteStore(tmp_path / "ranking.db"), InMemoryStore()]
    anchors = [random_history(Memory(store=store), seed) for store in stores]
    assert anchors[0] == anchors[1]
    asked = 0
    for store in stores:
        for key in [f"k{i}" for i in range(4)]:
            for tree, depth in anchors[0]:
                for cross in (False, True):
                    expected = by_rank_key((store, key, tree, depth, cross))
                    assert ranked((store, key, tree, depth, cross)) == expected, (store, key)
                    default = Store.key_candidates(store, "default", key, tree, depth, cross)
                    assert [(n.record_id, n.revision) for n in default] == expected
                    asked += len(expected)
    assert asked > 100  # the data exercised the ranking


# -- a whole view reads, then decides ---------------------------------------------------
class CountingReader:
    """A real store, counting the calls a view makes to it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        self.calls[name] += 1
        return getattr(self.store, name)


def test_a_whole_view_reads_statuses_once(tmp_path: Path) -> None:
    """Records shown, tree-wide retractions and withdrawn event sources: one status read."""
    store = SQLiteStore(tmp_path / "view.db")
    mem = Memory(store=store)
    mem.add_events([{"id": f"e{i}", "parent": f"e{i - 1}" if i else None} for i in range(6)])
    mem.add_record("a", sources=["e1"], key="k")
    mem.add_record("b", sources=["e2", "a"], key="k")
    mem.add_record("c", sources=["e3"])
    mem.add_record("d", sources=["e4"])
    mem.retract("r", sources=["e0"], targets=["d"], scope=TREE)
    mem.withdraw("e3")
    reader = CountingReader(store)
    with store.reading("default"):
        decisions = View(reader, "default", "e5", STRICT).decisions()  # type: ignore[arg-type]
    assert reader.calls["statuses"] == 1
    assert decisions["a"].superseded and not decisions["b"].superseded
    assert decisions["c"].stale and decisions["d"].retracted


# -- the walk: one lookup of the anchor per call ----------------------------------------
class AnchorLookups(InMemoryStore):
    """The in-memory store, counting the lookups of each event."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups: Counter[str] = Counter()

    def get_event(self, namespace: str, event_id: str) -> EventNode | None:
        self.lookups[event_id] += 1
        return super().get_event(namespace, event_id)


@pytest.mark.parametrize("steps", [None, 0], ids=["whole view", "tree index"])
def test_visible_and_context_look_the_anchor_up_once(steps: int | None) -> None:
    store = AnchorLookups()
    mem = Memory(store=store, path_events_per_entry=steps)
    mem.add_events([{"id": f"e{i}", "parent": f"e{i - 1}" if i else None} for i in range(8)])
    mem.add_record("a", sources=["e2"], key="k", content="alpha")
    mem.add_record("b", sources=["e5"], content="beta")
    store.lookups.clear()
    assert [r.id for r in mem.visible("e7")] == ["a", "b"]
    assert store.lookups["e7"] == 1
    store.lookups.clear()
    built = mem.context("e7", query="alpha", budget=500)
    assert "alpha" in built.text
    assert store.lookups["e7"] == 1
