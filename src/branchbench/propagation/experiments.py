"""The five propagation experiments, each a sequence of measured steps on a store URL:
``trace_correction``, ``withdraw_supports``, ``delayed_repair``, ``live_consumer`` and
``visibility_vs_erasure``; ``run_all`` runs them in order."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from branchmem import RepairResult, RepairView
from branchmem.errors import BranchmemError, ErasedError, InvalidInput
from branchmem.memory import Memory
from branchmem.model import Record
from branchmem.search.embedding import HashingEmbedder

from .probes import (
    REPAIR_QUEUE,
    REPRESENTATIONS,
    SESSION,
    STORE_FILES,
    UNDO,
    Experiment,
    Residue,
    Snapshot,
    Step,
    is_postgres,
    observe,
    postgres_residue,
    residue,
    sqlite_residue,
    vacuum_counts,
)


# -- scaffolding -------------------------------------------------------------------------
@dataclass
class Bench:
    """One experiment's run: an open Memory, a token that keeps its namespaces its own."""

    url: str
    token: str
    mem: Memory

    def namespace(self, number: int, case: str) -> str:
        return f"p{self.token}-{number}-{case}"

    def marker(self, case: str) -> str:
        """A word found nowhere else: the old text's fingerprint."""
        return f"zq{case.replace('-', '')}{self.token}x"

    def derived(
        self, number: int, case: str, tag: str, *, revised: bool = False
    ) -> tuple[str, str]:
        """A fresh namespace holding the conversation and what was derived from it (every
        experiment but the one that orders these steps itself); its name and marker."""
        ns, marker = self.namespace(number, case), self.marker(tag)
        _conversation(self.mem, ns, marker)
        _derive(self.mem, ns, marker, revised=revised)
        return ns, marker


@contextmanager
def bench(url: str) -> Iterator[Bench]:
    mem = Memory.open(url, embedder=HashingEmbedder())
    try:
        yield Bench(url, secrets.token_hex(5), mem)
    finally:
        mem.close()


def _conversation(mem: Memory, ns: str, marker: str) -> None:
    """u1 states the budget (with the marker), a1 answers, u2 corrects it; u2b is a sibling
    of u2 (the user edited u2 into another message)."""
    mem.add_events(
        [
            {"id": "u1", "content": f"My travel budget is 3000 yuan, code {marker}."},
            {"id": "a1", "parent": "u1", "role": "assistant", "content": "Noted your budget."},
            {"id": "u2", "parent": "a1", "content": "Correction: the budget is 4000 yuan."},
            {"id": "u2b", "parent": "a1", "content": "Let us talk about hotels instead."},
        ],
        namespace=ns,
    )
    mem.set_head("u2", namespace=ns)


def _derive(mem: Memory, ns: str, marker: str, *, revised: bool = False) -> None:
    """A fact from u1 and a summary built on the fact; both are indexed and embedded. With
    ``revised`` the fact gets a second revision (also quoting the marker) before the summary
    is built, so the summary pins revision 2."""
    mem.add_record(
        "fact",
        sources=["u1"],
        key="budget",
        content=f"Travel budget: 3000 yuan ({marker})",
        meta={"quote": marker},
        namespace=ns,
    )
    if revised:
        mem.revise(
            "fact",
            content=f"Travel budget: 3000 yuan, confirmed ({marker})",
            sources=["u1"],
            namespace=ns,
        )
    mem.add_record(
        "summary",
        sources=["fact"],
        kind="summary",
        content=f"Trip plan within 3000 yuan ({marker})",
        namespace=ns,
    )


def _deliver(mem: Memory, ns: str, anchor: str, probe: str) -> None:
    mem.context(anchor, query=probe, budget=2000, session=SESSION, namespace=ns)


# -- experiment 1 ------------------------------------------------------------------------
CORRECTIONS: Final = ("revise", "retract", "supersede")


def trace_correction(url: str) -> Experiment:
    """One correction followed through every representation, done three ways."""
    steps = []
    with bench(url) as b:
        mem = b.mem
        for case in CORRECTIONS:
            ns, marker = b.derived(1, case, f"t{case}")
            _deliver(mem, ns, "u2", marker)
            ids = ("fact", "summary")
            before = observe(mem, ns, "u2", ids, marker)
            if case == "revise":
                mem.revise("fact", content="Travel budget: 4000 yuan", sources=["u2"], namespace=ns)
            elif case == "retract":
                mem.retract("undo-budget", sources=["u2"], targets=["fact"], namespace=ns)
            else:
                mem.add_record(
                    "fact-4000", sources=["u2"], key="budget", content="Travel budget: 4000 yuan",
                    supersedes=["fact"], namespace=ns,
                )  # fmt: skip
            steps.append(Step(case, before, observe(mem, ns, "u2", ids, marker)))
    return Experiment(
        1,
        "Trace one correction through every representation",
        "u1 says the budget is 3000 (with a marker word); `fact` is derived from u1, `summary` "
        "from `fact`; both are searchable (text and vectors) and delivered to a session at u2. "
        "Then the fact is corrected at u2 by revising it, retracting it, or superseding it "
        "with a new record. Cells: before → after, at anchor u2.",
        ("fact", "summary"),
        tuple(steps),
    )


# -- experiment 2 ------------------------------------------------------------------------
SUPPORT_SHAPES: Final = {
    # shape -> (the two supports of `fact`, the order(s) they are withdrawn in)
    "independent": ("s1", "s2"),
    "derived": ("s1", "basis"),
}


def withdraw_supports(url: str) -> Experiment:
    """A fact with two supports; withdraw one, then the other, restore in reverse."""
    steps = []
    with bench(url) as b:
        mem = b.mem
        for shape, (first, second) in SUPPORT_SHAPES.items():
            for order in ((first, second), (second, first)):
                case = f"{shape}-{order[0]}-first"
                ns, marker = b.namespace(2, case), b.marker(f"w{shape}{order[0]}")
                mem.add_events(
                    [
                        {"id": "s1", "content": f"I moved to Hangzhou {marker}."},
                        {"id": "s2", "parent": "s1", "content": "My office is in Hangzhou."},
                        {"id": "now", "parent": "s2", "content": "Where do I live?"},
                    ],
                    namespace=ns,
                )
                if shape == "independent":
                    sources = ["s1", "s2"]
                else:  # the second support is itself derived from the first
                    mem.add_record(
                        "basis", sources=["s1"], content=f"moved to Hangzhou {marker}",
                        namespace=ns,
                    )  # fmt: skip
                    sources = ["s1", "basis"]
                mem.add_record(
                    "fact", sources=sources, key="city", content=f"Lives in Hangzhou {marker}",
                    namespace=ns,
                )  # fmt: skip
                mem.add_record(
                    "summary", sources=["fact"], kind="summary",
                    content=f"User profile: Hangzhou {marker}", namespace=ns,
                )  # fmt: skip
                ids = ("basis", "fact", "summary") if shape == "derived" else ("fact", "summary")
                actions: list[tuple[str, Callable[[], None]]] = [
                    (f"withdraw {order[0]}", _act(mem.withdraw, order[0], ns)),
                    (f"withdraw {order[1]}", _act(mem.withdraw, order[1], ns)),
                    (f"restore {order[1]}", _act(mem.restore, order[1], ns)),
                    (f"restore {order[0]}", _act(mem.restore, order[0], ns)),
                ]
                previous = observe(mem, ns, "now", ids, marker, session=None)
                for label, action in actions:
                    action()
                    current = observe(mem, ns, "now", ids, marker, session=None)
                    steps.append(
                        Step(
                            f"{case}: {label}",
                            previous,
                            current,
                            measured={
                                "shape": shape,
                                "withdrawn": _withdrawn_after(actions, label),
                            },
                        )
                    )
                    previous = current
    return Experiment(
        2,
        "Withdraw one of two supports",
        "`fact` has two supports: two independent events (s1, s2), or an event s1 and a record "
        "`basis` derived from s1. Each support is withdrawn in turn, in both orders, then both "
        "are restored in reverse. `summary` is built on `fact`. Cells: before → after each "
        "step, at anchor `now` (below both events).",
        ("basis", "fact", "summary"),
        tuple(steps),
        columns=(*REPRESENTATIONS, REPAIR_QUEUE),
    )


def _act(method: Callable[..., None], item: str, ns: str) -> Callable[[], None]:
    return lambda: method(item, namespace=ns)


def _withdrawn_after(actions: Sequence[tuple[str, Callable[[], None]]], upto: str) -> list[str]:
    """Which supports are withdrawn once the step ``upto`` is done (from the step labels)."""
    withdrawn: list[str] = []
    for label, _ in actions:
        verb, item = label.split(" ", 1)
        if verb == "withdraw":
            withdrawn.append(item)
        else:
            withdrawn.remove(item)
        if label == upto:
            break
    return withdrawn


# -- experiment 3 ------------------------------------------------------------------------
READER: Final = "concurrent reader"
REPAIR_WAIT: Final = 5.0  # seconds a slow deriver waits for the concurrent reader


class DeriverFailed(RuntimeError):
    """What the failing deriver raises: a model call that errored."""


def delayed_repair(url: str) -> Experiment:
    """Stale summaries through a failing, a slow and a declining deriver, and a queue left
    unprocessed; everything measured between the stages."""
    steps: list[Step] = []
    with bench(url) as b:
        mem = b.mem
        ns, marker = b.derived(3, "repair", "repair")
        mem.add_record(
            "packing", sources=["fact"], kind="summary",
            content=f"Packing list for a 3000 yuan trip ({marker})", namespace=ns,
        )  # fmt: skip
        _deliver(mem, ns, "u2", marker)
        ids = ("fact", "summary", "packing")
        previous = observe(mem, ns, "u2", ids, marker)
        mem.add_record(
            "fact-4000", sources=["u2"], key="budget", content="Travel budget: 4000 yuan",
            supersedes=["fact"], namespace=ns,
        )  # fmt: skip
        current = observe(mem, ns, "u2", ids, marker)
        steps.append(Step("superseded, queue unprocessed", previous, current))
        previous = current

        def failing(record: Record, view: RepairView) -> tuple[str, list[str]] | None:
            raise DeriverFailed(f"model timed out rebuilding {record.id}")

        result = mem.repair(failing, limit=1, namespace=ns)
        current = observe(mem, ns, "u2", ids, marker)
        steps.append(
            Step(
                "deriver raises",
                previous,
                current,
                extra={"repair": _describe_result(result)},
                measured={"result": result},
            )
        )
        previous = current

        during, waited = _slow_repair(mem, url, ns, ids, marker)
        current = observe(mem, ns, "u2", ids, marker)
        steps.append(
            Step(
                "slow deriver succeeds",
                previous,
                current,
                extra={
                    "repair": _describe_result(during["result"]),
                    READER: _describe_reader(during, waited),
                },
                measured={**during, "waited": waited},
            )
        )
        previous = current

        def declining(record: Record, view: RepairView) -> tuple[str, list[str]] | None:
            return None

        result = mem.repair(declining, namespace=ns)
        current = observe(mem, ns, "u2", ids, marker)
        steps.append(
            Step(
                "deriver declines",
                previous,
                current,
                extra={"repair": _describe_result(result)},
                measured={"result": result},
            )
        )
    return Experiment(
        3,
        "Failed and delayed repair",
        "`summary` and `packing` are built on `fact`; `fact` is superseded by `fact-4000`, so "
        "both go stale and enter the repair queue, where they are left for a while. Then "
        "`repair(limit=1)` with a deriver that raises, then with a slow one (a second "
        "connection reads the store while it runs), then `repair()` with one that declines "
        "(returns None). Cells: before → after each stage, at anchor u2.",
        ids,
        tuple(steps),
        columns=(*REPRESENTATIONS, REPAIR_QUEUE, "repair", READER),
    )


def _slow_repair(
    mem: Memory, url: str, ns: str, ids: Sequence[str], marker: str
) -> tuple[dict[str, Any], float]:
    """Run a deriver that blocks until a second connection has read the store; return what
    that reader saw while the repair was in flight and how long the deriver waited."""
    started, read = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    other = Memory.open(url, embedder=HashingEmbedder())  # opened before the repair starts

    def reader() -> None:
        started.wait(REPAIR_WAIT)
        try:
            begun = time.perf_counter()
            seen["snapshot"] = observe(other, ns, "u2", ids, marker, session=None)
            seen["read_seconds"] = time.perf_counter() - begun
        except BranchmemError as error:  # reported, not raised: it is a measurement
            seen["error"] = str(error)
        finally:
            read.set()

    def slow(record: Record, view: RepairView) -> tuple[str, list[str]] | None:
        started.set()
        seen["read_during_repair"] = read.wait(REPAIR_WAIT)  # False: the reader was blocked
        budget = next(r for r in view.records if r.key == "budget")
        return (f"Trip plan within {budget.content.split(': ')[-1]}", [budget.id])

    thread = threading.Thread(target=reader, name="concurrent-reader")
    thread.start()
    begun = time.perf_counter()
    seen["result"] = mem.repair(slow, limit=1, namespace=ns)
    waited = time.perf_counter() - begun
    thread.join(REPAIR_WAIT * 2)
    other.close()
    seen.setdefault("read_during_repair", False)
    return seen, waited


def _describe_reader(seen: Mapping[str, Any], waited: float) -> str:
    """What the second connection saw while the slow deriver ran."""
    if "snapshot" not in seen:
        return f"no read during the repair ({seen.get('error', 'timed out')})"
    snapshot: Snapshot = seen["snapshot"]
    states = ", ".join(f"{r.id} {r.state}" for r in snapshot.records)
    when = "while the deriver ran" if seen["read_during_repair"] else "after the repair"
    return (
        f"read {when} in {seen['read_seconds'] * 1000:.0f} ms (deriver held "
        f"{waited * 1000:.0f} ms): {states}; queue {', '.join(snapshot.queued()) or 'empty'}; "
        f"marker delivered: {'yes' if snapshot.context_memory_probe else 'no'}"
    )


def _describe_result(result: RepairResult) -> str:
    parts = [
        f"repaired {sorted(result.repaired) or '-'}",
        f"dropped {sorted(result.dropped) or '-'}",
        f"failed {sorted(result.failed) or '-'}",
        f"pending {result.pending}",
    ]
    return ", ".join(parts).replace("'", "")


# -- experiment 4 ------------------------------------------------------------------------
REPLACEMENTS: Final = (
    "revise",
    "revise-redelivered",
    "replace",
    "retract",
    "switch-branch",
    "withdraw",
    "erase",
)


def live_consumer(url: str) -> Experiment:
    """A session was given `fact` and `summary`; then each is replaced in some way."""
    steps = []
    with bench(url) as b:
        mem = b.mem
        for case in REPLACEMENTS:
            ns, marker = b.derived(4, case, f"c{case}")
            ids: tuple[str, ...] = ("fact", "summary")
            if case == "switch-branch":  # something only the abandoned branch said
                mem.add_record(
                    "plan", sources=["u2"], kind="summary",
                    content=f"Plan for 4000 yuan, after {marker}", namespace=ns,
                )  # fmt: skip
                ids = ("fact", "summary", "plan")
            _deliver(mem, ns, "u2", marker)
            before = observe(mem, ns, "u2", ids, marker)
            anchor = "u2"
            if case.startswith("revise"):
                mem.revise("fact", content="Travel budget: 4000 yuan", sources=["u2"], namespace=ns)
                if case == "revise-redelivered":  # the session is then given the new revision
                    _deliver(mem, ns, "u2", marker)
            elif case == "replace":
                mem.add_record(
                    "fact-4000", sources=["u2"], key="budget", content="Travel budget: 4000 yuan",
                    namespace=ns,
                )  # fmt: skip
                mem.supersede("fact-4000", "fact", namespace=ns)
            elif case == "retract":
                mem.retract("undo-budget", sources=["u2"], targets=["fact"], namespace=ns)
            elif case == "switch-branch":
                mem.set_head("u2b", namespace=ns)
                anchor = "u2b"
            elif case == "withdraw":
                mem.withdraw("fact", namespace=ns)
            else:
                mem.erase("u1", namespace=ns)
            after = observe(mem, ns, anchor, ids, marker)
            steps.append(Step(case, before, after, measured={"anchor": anchor}))
    return Experiment(
        4,
        "A consumer alive across replacement",
        "A session is given a context at u2 (head of the tree) holding `fact` and `summary`. "
        "Then `fact` is revised in place (and once the new revision is delivered too), "
        "replaced by a new id plus `supersede`, retracted, "
        "withdrawn, or u1 erased; or the user switches to the sibling branch u2b (`set_head`; "
        "for this case a record `plan` derived from u2 was delivered too). Cells: before → "
        "after, at the tree's head, where `stale_deliveries(session)` is judged.",
        ("fact", "summary", "plan"),
        tuple(steps),
    )


# -- experiment 5 ------------------------------------------------------------------------
TAKEOUTS: Final = ("withdraw", "retract", "supersede", "erase", "erase-after-failed-repair")


def visibility_vs_erasure(url: str, *, inspect_pages: bool = False) -> Experiment:
    """The same setup, taken out four ways; where the marker still is, in rows and files.

    On PostgreSQL, ``inspect_pages`` also reads the raw pages (see ``postgres_residue``) and,
    at the end, again after a ``VACUUM FULL``: for throwaway databases only."""
    steps = []
    postgres = is_postgres(url)
    with bench(url) as b:
        mem = b.mem
        for case in TAKEOUTS:
            ns, marker = b.derived(5, case, f"v{case}", revised=True)
            mem.add_record(
                "summary-r2", sources=["summary"], kind="summary",
                content=f"Summary of the summary ({marker})", namespace=ns,
            )  # fmt: skip
            _deliver(mem, ns, "u2", marker)
            ids = ("fact", "summary", "summary-r2")
            if case == "erase-after-failed-repair":
                mem.retract("undo-budget", sources=["u2"], targets=["fact"], namespace=ns)

                def quoting(record: Record, view: RepairView) -> tuple[str, list[str]] | None:
                    raise DeriverFailed(f"cannot rebuild: {record.content}")  # quotes the text

                mem.repair(quoting, namespace=ns)
            before = observe(mem, ns, "u2", ids, marker)
            vacuum_before = vacuum_counts(url) if postgres else None
            undo: Callable[[], None]
            if case == "withdraw":
                mem.withdraw("u1", namespace=ns)
                undo = _act(mem.restore, "u1", ns)
            elif case == "retract":
                mem.retract("undo-budget", sources=["u2"], targets=["fact"], namespace=ns)
                undo = _act(mem.withdraw, "undo-budget", ns)
            elif case == "supersede":
                mem.add_record(
                    "fact-4000", sources=["u2"], key="budget", content="Travel budget: 4000 yuan",
                    supersedes=["fact"], namespace=ns,
                )  # fmt: skip
                undo = _act(mem.withdraw, "fact-4000", ns)
            else:
                mem.erase("u1", reason="user asked to forget", namespace=ns)
                undo = _act(mem.restore, "u1", ns)
            after = observe(mem, ns, "u2", ids, marker)
            if postgres:
                open_residue = postgres_residue(
                    url, marker, vacuum_before, inspect_pages=inspect_pages
                )
            else:
                open_residue = residue(mem.store, marker)
            undone: Snapshot | None = None
            reimported: Residue | None = None
            try:
                undo()
            except ErasedError as error:
                _conversation(mem, ns, marker)  # a re-import brings the same events again
                reimported = residue(mem.store, marker)
                undo_note = (
                    f"refused: ErasedError ({error}); re-importing u1: rows holding the marker "
                    f"{sum(reimported.rows.values())}"
                )
            else:
                undone = observe(mem, ns, "u2", ids, marker)
                undo_note = _undo_note(undone)
            steps.append(
                Step(case, before, after, residue_open=open_residue, undone=undone,
                     extra={UNDO: undo_note}, measured={"marker": marker, "reimported": reimported})
            )  # fmt: skip
    if not postgres:  # the files again once every connection is closed
        path = Path(url.removeprefix("sqlite:///"))
        steps = [
            replace(s, residue_closed=sqlite_residue(path, s.measured["marker"], "closed"))
            for s in steps
        ]
    elif inspect_pages:  # what rewriting every table leaves
        import psycopg

        with psycopg.connect(url, autocommit=True) as db:
            db.execute("VACUUM FULL")
        steps = [
            replace(
                s,
                residue_closed=postgres_residue(
                    url, s.measured["marker"], inspect_pages=True, when="after VACUUM FULL"
                ),
            )
            for s in steps
        ]
    return Experiment(
        5,
        "Visibility vs erasure vs repair",
        "The same setup for every row: u1 holds a marker word; `fact` (two revisions), `summary` "
        "and `summary-r2` (built on the summary) repeat it, in content and meta; all indexed, "
        "embedded and delivered. Then u1 is withdrawn, `fact` retracted or superseded, or u1 "
        "erased (also once after a failed repair whose error message quoted the text). "
        "Cells: before → after at u2; the store is searched for the marker in every column "
        "and, for SQLite, in the file bytes.",
        ids,
        tuple(steps),
        columns=(*REPRESENTATIONS, REPAIR_QUEUE, STORE_FILES, UNDO),
    )


def _undo_note(undone: Snapshot) -> str:
    states = ", ".join(f"{s.id} {s.state}" for s in undone.records)
    return f"done: {states}"


EXPERIMENTS: Final[tuple[Callable[[str], Experiment], ...]] = (
    trace_correction,
    withdraw_supports,
    delayed_repair,
    live_consumer,
    visibility_vs_erasure,
)


def run_all(url: str, *, inspect_pages: bool = False) -> list[Experiment]:
    """The five experiments on ``url``, in order (``inspect_pages``: see experiment 5)."""
    if url in ("", ":memory:", "sqlite://", "sqlite:///") or url.startswith("file::memory:"):
        raise InvalidInput(
            f"store URL {url!r} is in memory: the experiments read the store's files and open "
            "a second connection; give a SQLite file or a PostgreSQL DSN"
        )
    found = [experiment(url) for experiment in EXPERIMENTS[:-1]]
    return [*found, visibility_vs_erasure(url, inspect_pages=inspect_pages)]
