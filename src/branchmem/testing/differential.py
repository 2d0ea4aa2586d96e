"""Random forests with shuffled arrival, applied to the engine and to the oracle side by side.

Shared by the differential test of every backend: ``run_scenario(make_memory, rng)``
replays one random history into a fresh ``Memory`` and the oracle and compares every
decision at every event as anchor, in both modes, with and without cross-tree views.

The decisions are read from the engine's own views in one read snapshot of the Memory; a
face that is not a ``Memory`` (the client, the async faces) passes ``read_views``: how to
read a view's decisions through it (``ReadView``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol

from branchmem import Memory
from branchmem._engine import views
from branchmem.errors import BranchmemError
from branchmem.model import Record

from .oracle import Oracle

Op = tuple[str, dict[str, Any]]


class Decided(Protocol):
    """What the comparison reads off one record's decision (``visibility.Decision``)."""

    @property
    def reason(self) -> str: ...

    def returned(self, include_superseded: bool, include_stale: bool) -> bool: ...


class DecidingView(Protocol):
    """A view that decides one record at a time (``visibility.View``)."""

    def decide(self, record_id: str) -> Decided: ...


# (namespace, anchor, cross_tree, mode, as_of) -> the view's decisions, read through a face
ReadView = Callable[[str, str | None, bool, str, int | None], DecidingView]


def random_history(rng: random.Random) -> list[Op]:
    """One namespace's worth of operations, in a shuffled arrival order."""
    n_events = rng.randint(3, 16)
    n_roots = rng.choice([1, 1, 1, 2, 3])
    ids = [f"e{i}" for i in range(n_events)]
    events: list[dict[str, Any]] = []
    trees: dict[str, str] = {}
    shared_tree = rng.random() < 0.15  # several roots in one tree (LibreChat-style edits)
    for index, event_id in enumerate(ids):
        if index < n_roots:
            tree = "t0" if shared_tree else rng.choice([None, None, f"t{index}"])
            trees[event_id] = tree or event_id
            events.append(
                {"id": event_id, "parent": None, "tree": tree, "content": event_id, "role": "user"}
            )
        else:
            parent = rng.choice(ids[:index])
            trees[event_id] = trees[parent]
            # turns alternate speakers, so search's voices (search.voice) are compared too
            role = "assistant" if index % 2 else "user"
            event = {"id": event_id, "parent": parent, "content": event_id, "role": role}
            roll = rng.random()
            if roll < 0.1:  # restating the tree it inherits is allowed
                event["tree"] = trees[event_id]
            elif roll < 0.13:  # naming another tree is a conflict, now or when topology arrives
                event["tree"] = "elsewhere"
            events.append(event)
    parents = {e["id"]: e["parent"] for e in events}
    if rng.random() < 0.3:  # events that never arrive: their subtrees stay detached
        for _ in range(rng.randint(1, 2)):
            if len(events) > 1:
                events.pop(rng.randrange(len(events)))
    ops: list[Op] = [("event", e) for e in events]
    if rng.random() < 0.1 and events:  # a conflicting re-add, which must change nothing
        clash = dict(rng.choice(events))
        clash["content"] = "different"
        ops.append(("event", clash))

    record_ids = [f"r{i}" for i in range(rng.randint(2, 18))]
    keys = [None, None, "city", "budget"]
    for record_id in record_ids:
        others = [r for r in record_ids if r != record_id]
        spec = {
            "id": record_id,
            "sources": _sources(rng, ids, others, parents),
            "key": rng.choice(keys),
            "scope": rng.choice([None, None, "work"]),
        }
        ops.append(("record", spec))
        if rng.random() < 0.25:
            sources = _sources(rng, ids, record_ids, parents)
            ops.append(("revise", {"id": record_id, "sources": sources}))
    for index in range(rng.randint(0, 3)):
        targets = tuple(rng.sample(record_ids, k=1)) if rng.random() < 0.5 else ()
        retraction = {
            "id": f"x{index}",
            "sources": _sources(rng, ids, [], parents, allow_legacy=False),
            "targets": targets,
            "key": None if targets else rng.choice(["city", "budget"]),
            "key_scope": rng.choice([None, None, "work"]),
            "scope": rng.choice(["branch", "branch", "tree"]),
        }
        ops.append(("retract", retraction))
    for _ in range(rng.randint(0, 2)):
        new, old = rng.sample(record_ids, k=2) if len(record_ids) > 1 else (record_ids[0],) * 2
        ops.append(("supersede", {"new": new, "old": old}))
    for _ in range(rng.randint(0, 3)):
        item = rng.choice(ids + record_ids)
        ops.append(("withdraw", {"id": item}))
        if rng.random() < 0.3:
            ops.append(("restore", {"id": item}))
    for _ in range(rng.randint(0, 3)):
        ops.append(("head", {"id": rng.choice(ids)}))
    if rng.random() < 0.2:
        ops.append(("erase", {"id": rng.choice(ids + record_ids)}))
    rng.shuffle(ops)
    return ops


def _sources(
    rng: random.Random,
    events: list[str],
    records: list[str],
    parents: dict[str, str | None],
    allow_legacy: bool = True,
) -> list[str] | None:
    roll = rng.random()
    if allow_legacy and roll < 0.08:
        return None
    if roll < 0.12:
        return []
    if rng.random() < 0.75:  # mostly sources along one path, as a deriver's would be
        line = [rng.choice(events)]
        while (parent := parents[line[-1]]) is not None:
            line.append(parent)
        picked = rng.sample(line, k=min(len(line), rng.randint(1, 3)))
    else:
        picked = rng.sample(events, k=min(len(events), rng.randint(1, 3)))
    if records and rng.random() < 0.3:
        cited = rng.choice(records)
        picked.append(cited if rng.random() < 0.7 else f"{cited}@{rng.randint(1, 2)}")
    if rng.random() < 0.08:
        picked.append("ghost")
    return picked


def apply(mem: Memory, oracle: Oracle, op: Op, namespace: str) -> None:
    """Apply one operation to both; an error from one must be an error from the other."""
    kind, args = op
    engine_error = oracle_error = None
    actions: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
        "event": (
            lambda: mem.add_event(
                args["id"], args.get("parent"), tree=args.get("tree"),
                role=args.get("role", "user"), content=args.get("content", ""),
                namespace=namespace,
            ),
            lambda: oracle.add_event(args),
        ),
        "record": (
            lambda: mem.add_record(
                args["id"], sources=args["sources"], key=args["key"], scope=args["scope"],
                namespace=namespace,
            ),
            lambda: oracle.add_record(args["id"], args["sources"], args["key"], args["scope"]),
        ),
        "revise": (
            lambda: mem.revise(
                args["id"], content="revised", sources=args["sources"], namespace=namespace
            ),
            lambda: oracle.revise(args["id"], args["sources"]),
        ),
        "retract": (
            lambda: mem.retract(
                args["id"], sources=args["sources"], targets=args["targets"], key=args["key"],
                key_scope=args["key_scope"], scope=args["scope"], namespace=namespace,
            ),
            lambda: oracle.retract(
                args["id"], args["sources"], args["targets"], args["key"], args["key_scope"],
                args["scope"],
            ),
        ),
        "supersede": (
            lambda: mem.supersede(args["new"], args["old"], namespace=namespace),
            lambda: oracle.supersede(args["new"], args["old"]),
        ),
        "withdraw": (
            lambda: mem.withdraw(args["id"], namespace=namespace),
            lambda: oracle.withdraw(args["id"]),
        ),
        "restore": (
            lambda: mem.restore(args["id"], namespace=namespace),
            lambda: oracle.restore(args["id"]),
        ),
        "erase": (
            lambda: mem.erase(args["id"], namespace=namespace),
            lambda: oracle.erase(args["id"]),
        ),
        "head": (
            lambda: mem.set_head(args["id"], namespace=namespace),
            lambda: oracle.set_head(args["id"]),
        ),
    }  # fmt: skip
    engine_call, oracle_call = actions[kind]
    if kind == "head" and args["id"] not in oracle.events:
        oracle_call = _not_found
    try:
        engine_call()
    except BranchmemError as error:
        engine_error = type(error).__name__
    try:
        oracle_call()
    except BranchmemError as error:
        oracle_error = type(error).__name__
    assert engine_error == oracle_error, (op, engine_error, oracle_error)


def _not_found() -> None:
    from branchmem.errors import NotFoundError

    raise NotFoundError("absent")


@contextmanager
def _decisions(mem: Memory, namespace: str, read_view: ReadView | None) -> Iterator[ReadView]:
    """How to read a view's decisions: ``read_view`` as given, or the engine's own views in
    one read snapshot of ``mem``, as one public call would have (backends with round trips
    serve the repeated lookups from their per-call cache)."""
    if read_view is not None:
        yield read_view
        return
    with mem._read(namespace) as ns:

        def engine_view(
            name: str, anchor: str | None, cross_tree: bool, mode: str, as_of: int | None
        ) -> DecidingView:
            return views.view(ns, anchor, cross_tree, mode, as_of=as_of)

        yield engine_view


def compare(mem: Memory, oracle: Oracle, namespace: str, read_view: ReadView | None = None) -> int:
    """Compare every decision at every anchor; return how many were compared."""
    with _decisions(mem, namespace, read_view) as read:
        return _compare(mem, oracle, namespace, read)


def _compare(mem: Memory, oracle: Oracle, namespace: str, read: ReadView) -> int:
    compared = 0
    anchors: list[str | None] = [None, *sorted(oracle.events)]
    record_ids = sorted(oracle.records)
    for anchor in anchors:
        for mode in ("strict", "compat"):
            for cross_tree in (False, True) if oracle.heads else (False,):
                expected = oracle.decide_all(anchor, mode=mode, cross_tree=cross_tree)
                view = read(namespace, anchor, cross_tree, mode, None)
                for record_id in record_ids:
                    decision = view.decide(record_id)
                    want = expected[record_id]
                    assert decision.reason == want[0], (anchor, mode, cross_tree, decision, want)
                    for include in ((False, False), (True, False), (False, True), (True, True)):
                        assert decision.returned(*include) == oracle.returned(want, *include), (
                            anchor, mode, cross_tree, include, decision, want,
                        )  # fmt: skip
                    compared += 1
                for include_stale in (False, True):
                    by_index, by_path = (
                        [
                            r.id
                            for r in _visible_reading(
                                steps, mem, anchor, mode, cross_tree, include_stale, namespace
                            )
                        ]
                        for steps in (0, None)
                    )
                    want_ids = {
                        r for r, d in expected.items() if oracle.returned(d, False, include_stale)
                    }
                    assert set(by_path) == want_ids, (anchor, mode, cross_tree, by_path, want_ids)
                    assert by_index == by_path, (anchor, mode, cross_tree, by_index, by_path)
                for key in ("city", "budget"):
                    for scope in (None, "work"):
                        holding = mem.current(
                            key, anchor, scope=scope, mode=mode, cross_tree=cross_tree,
                            namespace=namespace,
                        )  # fmt: skip
                        want_id = oracle_current(
                            oracle, expected, key, scope, anchor, mode, cross_tree
                        )
                        assert (holding.id if holding else None) == want_id, (
                            anchor, mode, cross_tree, key, scope, holding, want_id,
                        )  # fmt: skip
                        compared += 1
    return compared


@contextmanager
def index_reads(mem: Memory, steps: int | None) -> Iterator[Memory]:
    """``mem``'s ``visible()`` reads the tree's index whenever the anchor allows it (``steps``
    0), never (None), or as shipped (``_engine.views.PATH_EVENTS_PER_ENTRY``), then reads as
    it was made to (``Memory(path_events_per_entry=...)``): one Memory's option, not a
    global, so other Memories in the process are untouched."""
    before = mem.path_events_per_entry
    mem.path_events_per_entry = steps
    try:
        yield mem
    finally:
        mem.path_events_per_entry = before


def _visible_reading(
    steps: int | None,
    mem: Memory,
    anchor: str | None,
    mode: str,
    cross_tree: bool,
    include_stale: bool,
    namespace: str,
) -> list[Record]:
    """``visible()`` read one way (see ``index_reads``): from the index and from the whole
    view it must give the oracle's records, in the same order. A face that is not a
    ``Memory`` reads the way its service was made to."""
    reading: AbstractContextManager[object] = (
        index_reads(mem, steps) if isinstance(mem, Memory) else nullcontext()
    )
    with reading:
        return mem.visible(
            anchor, mode=mode, cross_tree=cross_tree, include_stale=include_stale,
            namespace=namespace,
        )  # fmt: skip


def oracle_current(
    oracle: Oracle,
    expected: dict[str, tuple[str, dict[str, bool]]],
    key: str,
    scope: str | None,
    anchor: str | None,
    mode: str,
    cross_tree: bool,
) -> str | None:
    """The record ``current()`` must return: of the records the view returns with this key
    (and scope, None: any), the last in path order — by the oracle's own positions."""
    ranked = []
    for record_id, decision in expected.items():
        if not oracle.returned(decision, False, False):
            continue
        passing = [
            revision
            for revision in oracle.records[record_id]
            if oracle.gate_reason(revision, anchor, cross_tree, mode) == "visible"
        ]
        shown = passing[-1]
        if shown.key == key and (scope is None or shown.scope == scope):
            ranked.append((oracle.position(shown, anchor), record_id))
    return max(ranked)[1] if ranked else None


def compare_as_of(
    mem: Memory,
    oracle: Oracle,
    namespace: str,
    point: tuple[int, int],
    read_view: ReadView | None = None,
) -> int:
    """Compare every decision ``as_of`` an earlier point at every anchor: ``point`` is the
    engine's last arrival number then and the oracle's (they number differently: the
    engine also numbers its repair-queue entries)."""
    engine_seq, oracle_seq = point
    then = oracle.at(oracle_seq)
    compared = 0
    with _decisions(mem, namespace, read_view) as read:
        for anchor in [None, *sorted(oracle.events)]:
            for mode in ("strict", "compat"):
                for cross_tree in (False, True) if oracle.heads else (False,):
                    expected = then.decide_all(anchor, mode=mode, cross_tree=cross_tree)
                    compared += _decisions_as_of(
                        read, then, expected, namespace, anchor, mode, cross_tree, engine_seq
                    )
                    shown = mem.visible(
                        anchor, mode=mode, cross_tree=cross_tree, as_of=engine_seq,
                        namespace=namespace,
                    )  # fmt: skip
                    want_ids = {r for r, d in expected.items() if then.returned(d, False, False)}
                    assert {r.id for r in shown} == want_ids, (engine_seq, anchor, mode, shown)
                    for key in ("city", "budget"):
                        holding = mem.current(
                            key, anchor, mode=mode, cross_tree=cross_tree, as_of=engine_seq,
                            namespace=namespace,
                        )  # fmt: skip
                        want_id = oracle_current(
                            then, expected, key, None, anchor, mode, cross_tree
                        )
                        assert (holding.id if holding else None) == want_id, (
                            engine_seq, anchor, mode, cross_tree, key, holding, want_id,
                        )  # fmt: skip
                        compared += 1
    return compared


def _decisions_as_of(
    read: ReadView,
    then: Oracle,
    expected: dict[str, tuple[str, dict[str, bool]]],
    namespace: str,
    anchor: str | None,
    mode: str,
    cross_tree: bool,
    engine_seq: int,
) -> int:
    """Every record's decision as of ``engine_seq`` against the oracle's copy ``then``."""
    view = read(namespace, anchor, cross_tree, mode, engine_seq)
    for record_id in sorted(then.records):
        decision = view.decide(record_id)
        want = expected[record_id]
        assert decision.reason == want[0], (engine_seq, anchor, mode, cross_tree, decision, want)
        for include in ((False, False), (True, True)):
            assert decision.returned(*include) == then.returned(want, *include)
    return len(then.records)


def last_seq(mem: Memory, namespace: str) -> int:
    """The engine's newest arrival number in ``namespace`` (each write call ends with its
    audit entry), 0 before the first write."""
    entries = mem.audit(namespace=namespace)
    return entries[-1].seq if entries else 0


def run_scenario(
    make_memory: Callable[[], Memory],
    rng: random.Random,
    read_views: Callable[[Memory], ReadView] | None = None,
) -> int:
    """Replay one random history into both and compare midway and at the end, and (in half
    the histories) as of a random earlier point. ``read_views(mem)``: how to read decisions
    through a face that is not a ``Memory`` (default: the engine's views)."""
    mem = make_memory()
    read_view = read_views(mem) if read_views is not None else None
    oracle = Oracle()
    namespace = f"ns{rng.randrange(10**9)}"
    ops = random_history(rng)
    checkpoint = rng.randrange(len(ops)) if ops else 0
    as_of = rng.randrange(len(ops)) if ops and rng.random() < 0.5 else None
    point = (0, 0)
    compared = 0
    for index, op in enumerate(ops):
        apply(mem, oracle, op, namespace)
        if index == checkpoint:
            compared += compare(mem, oracle, namespace, read_view)
        if index == as_of:
            point = (last_seq(mem, namespace), oracle.seq)
    compared += compare(mem, oracle, namespace, read_view)
    compared += compare_diffs(mem, oracle, namespace, rng)
    if as_of is not None:
        compared += compare_as_of(mem, oracle, namespace, point, read_view)
    return compared


# -- diff and promote ------------------------------------------------------------------
DIFF_PAIRS = 3  # anchor pairs per history: each costs two whole views, on either side


def compare_diffs(mem: Memory, oracle: Oracle, namespace: str, rng: random.Random) -> int:
    """``diff`` at a few random anchor pairs, in random modes and options, against the
    oracle's naive diff: the same records on each side with the same reasons and revisions,
    an off-path entry's (source, fork) one the oracle finds, and the same changed keys."""
    events = sorted(oracle.events)
    if not events:
        return 0
    for _ in range(DIFF_PAIRS):
        anchor_a, anchor_b = rng.choice(events), rng.choice(events)
        mode = rng.choice(["strict", "compat"])
        cross_tree = bool(oracle.heads) and rng.random() < 0.5
        superseded, stale = rng.random() < 0.3, rng.random() < 0.3
        options = (mode, cross_tree, superseded, stale)
        found = mem.diff(
            anchor_a, anchor_b, mode=mode, cross_tree=cross_tree, include_superseded=superseded,
            include_stale=stale, namespace=namespace,
        )  # fmt: skip
        want = oracle.diff(
            anchor_a, anchor_b, mode=mode, cross_tree=cross_tree, include_superseded=superseded,
            include_stale=stale,
        )  # fmt: skip
        where = (anchor_a, anchor_b, options)
        for side, other in (("only_a", anchor_b), ("only_b", anchor_a)):
            entries = getattr(found, side)
            got = {e.record.id: (e.record.revision, e.reason, e.other_revision) for e in entries}
            assert got == want[side], (where, side, got, want[side])
            for entry in entries:
                if entry.reason == "off_path":
                    forks = oracle.off_path_sources(entry.record.id, other, cross_tree)
                    assert (entry.source, entry.fork) in forks, (where, entry, forks)
        keys = {
            (k.scope, k.key): tuple(None if r is None else (r.id, r.revision) for r in (k.a, k.b))
            for k in found.keys
        }
        assert keys == want["keys"], (where, keys, want["keys"])
    return DIFF_PAIRS
