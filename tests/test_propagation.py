"""The five propagation experiments (branchbench.propagation) as executable checks of SPEC §5-§6,
on SQLite and PostgreSQL.

Each experiment runs once per backend (module fixture); the tests assert on its measurements.
The non-erasing corrections double as positive controls: the marker probes must find the
text that withdraw, retract and supersede deliberately keep, or a zero after erase would
prove nothing.
"""

from __future__ import annotations

import functools
import os
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from branchbench.propagation import (
    CORRECTIONS,
    REPLACEMENTS,
    TAKEOUTS,
    Experiment,
    Snapshot,
    delayed_repair,
    live_consumer,
    postgres_residue,
    residue,
    sqlite_residue,
    trace_correction,
    visibility_vs_erasure,
    withdraw_supports,
    write_report,
)
from branchmem import InvalidInput, Memory

pytest_plugins = ["pg"]
# one worker runs them all under `-n 2 --dist loadgroup`: each experiment then runs once
pytestmark = pytest.mark.xdist_group("propagation")

BACKENDS = ("sqlite", "postgres")
REPORT_VARIABLE = "BRANCHMEM_PROPAGATION_REPORT"
# the databases here are throwaway: read PostgreSQL's raw pages too (pageinspect, VACUUM FULL)
visibility_and_pages = functools.partial(visibility_vs_erasure, inspect_pages=True)
ERASING = ("erase", "erase-after-failed-repair")


class Backend:
    """Makes store URLs on one backend and runs each experiment once on it."""

    def __init__(self, name: str, make_url: Callable[[], str]) -> None:
        self.name = name
        self.make_url = make_url
        self._runs: dict[Callable[[str], Experiment], Experiment] = {}

    def run(self, experiment: Callable[[str], Experiment]) -> Experiment:
        if experiment not in self._runs:
            self._runs[experiment] = experiment(self.make_url())
        return self._runs[experiment]


@pytest.fixture(scope="module", params=BACKENDS)
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backend]:
    if request.param == "sqlite":
        folder = tmp_path_factory.mktemp("propagation")
        counter = iter(range(1_000_000))
        yield Backend("sqlite", lambda: str(folder / f"store{next(counter)}.db"))
        return
    import psycopg

    from pg import with_database

    dsn: str = request.getfixturevalue("pg_dsn")
    prefix = f"bm_prop_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    made: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as admin:

        def make() -> str:
            name = f"{prefix}_{len(made)}"
            admin.execute(f'CREATE DATABASE "{name}"')
            made.append(name)
            return with_database(dsn, name)

        yield Backend("postgres", make)
        for name in made:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def reasons(snapshot: Snapshot) -> dict[str, str]:
    return {state.id: state.reason for state in snapshot.records}


def stale_set(snapshot: Snapshot) -> set[tuple[str, int, str]]:
    return set(snapshot.stale_deliveries)


# -- 1. one correction through every representation ----------------------------------------
def test_correction_takes_the_old_text_out_of_search_and_context(backend: Backend) -> None:
    experiment = backend.run(trace_correction)
    for case in CORRECTIONS:
        step = experiment.step(case)
        assert set(step.before.search_probe) == {("fact", 1), ("summary", 1)}, case
        assert step.before.context_memory_probe, case
        assert step.after.search_probe == (), case
        assert not step.after.context_memory_probe, case
        assert all(
            rid not in {"fact", "summary"} or rev > 1 for rid, rev in step.after.context_items
        )


def test_correction_decides_fact_and_summary_as_the_spec_says(backend: Backend) -> None:
    experiment = backend.run(trace_correction)
    expected = {
        "revise": {"fact": "visible", "summary": "stale"},
        "retract": {"fact": "retracted", "summary": "stale"},
        "supersede": {"fact": "superseded", "summary": "stale"},
    }
    for case, wanted in expected.items():
        step = experiment.step(case)
        assert reasons(step.before) == {"fact": "visible", "summary": "visible"}
        assert reasons(step.after) == wanted, case
    revised = experiment.step("revise").after.record("fact")
    assert (revised.stored, revised.shown) == ((1, 2), 2)


def test_correction_keeps_old_text_gated_not_deleted(backend: Backend) -> None:
    """Reversible corrections hide by gating: the index rows and vectors of the old
    revisions stay (the vector index gains the new revision's vector)."""
    experiment = backend.run(trace_correction)
    for case in CORRECTIONS:
        step = experiment.step(case)
        assert step.after.index_rows == step.before.index_rows == (("fact", 1), ("summary", 1))
        assert set(step.before.vectors) <= set(step.after.vectors)
    assert experiment.step("revise").after.vectors == (("fact", 1), ("fact", 2), ("summary", 1))


def test_correction_is_in_history_and_audit(backend: Backend) -> None:
    experiment = backend.run(trace_correction)
    for case, op, happened in (
        ("revise", "revise", "revised"),
        ("retract", "retract", "retracted"),
        ("supersede", "supersede", "superseded"),
    ):
        before, after = experiment.step(case).before, experiment.step(case).after
        assert after.record("fact").happened[: len(before.record("fact").happened)] == (
            before.record("fact").happened
        )
        assert happened in after.record("fact").happened[len(before.record("fact").happened) :]
        assert op in after.record("fact").audit_ops[len(before.record("fact").audit_ops) :]


def test_correction_shows_in_stale_deliveries(backend: Backend) -> None:
    experiment = backend.run(trace_correction)
    assert all(experiment.step(case).before.stale_deliveries == () for case in CORRECTIONS)
    assert stale_set(experiment.step("revise").after) == {
        ("fact", 1, "revised"),
        ("summary", 1, "stale"),
    }
    assert stale_set(experiment.step("retract").after) == {
        ("fact", 1, "retracted"),
        ("summary", 1, "stale"),
    }
    assert stale_set(experiment.step("supersede").after) == {
        ("fact", 1, "superseded"),
        ("summary", 1, "stale"),
    }


# -- 2. withdraw one of two supports -------------------------------------------------------
def expected_support_reasons(shape: str, withdrawn: list[str]) -> dict[str, str]:
    """SPEC §5-§6 by hand: a withdrawn item is out; anything citing an item that is out or
    stale is stale (every source must hold, not one of them)."""
    out = set(withdrawn)
    found: dict[str, str] = {}
    if shape == "derived":
        found["basis"] = "withdrawn" if "basis" in out else "stale" if "s1" in out else "visible"
        fact_sources = {"s1", "basis"}
        broken = bool(out & fact_sources) or found["basis"] == "stale"
    else:
        broken = bool(out & {"s1", "s2"})
    found["fact"] = "stale" if broken else "visible"
    found["summary"] = "stale" if broken else "visible"
    return found


def test_withdrawing_either_support_makes_dependents_stale(backend: Backend) -> None:
    experiment = backend.run(withdraw_supports)
    assert len(experiment.steps) == 16
    for step in experiment.steps:
        wanted = expected_support_reasons(step.measured["shape"], step.measured["withdrawn"])
        assert reasons(step.after) == wanted, step.label
        hidden = {rid for rid, reason in wanted.items() if reason != "visible"}
        assert not {rid for rid, _ in step.after.search_probe} & hidden, step.label
        assert not {rid for rid, _ in step.after.context_items} & hidden, step.label


def test_restoring_both_supports_brings_everything_back(backend: Backend) -> None:
    experiment = backend.run(withdraw_supports)
    finals = [s for s in experiment.steps if s.measured["withdrawn"] == []]
    assert len(finals) == 4
    for step in finals:
        assert all(state.visible for state in step.after.records), step.label
        assert step.after.queue == (), step.label
        assert {rid for rid, _ in step.after.search_probe} == {s.id for s in step.after.records}
        assert step.after.context_memory_probe


def test_repair_queue_follows_each_withdrawal(backend: Backend) -> None:
    experiment = backend.run(withdraw_supports)
    for step in experiment.steps:
        stale = {s.id for s in step.after.records if s.reason == "stale"}
        assert set(step.after.queued()) == stale, step.label
        assert step.after.repairs["pending"] == len(stale), step.label
        causes = {cause for _, _, cause, _ in step.after.queue}
        assert causes <= set(step.measured["withdrawn"]), step.label


# -- 3. failed and delayed repair ----------------------------------------------------------
def test_stale_text_is_never_delivered_while_repair_is_pending(backend: Backend) -> None:
    experiment = backend.run(delayed_repair)
    for step in experiment.steps:
        assert step.after.search_probe == (), step.label
        assert not step.after.context_memory_probe, step.label
    during: Snapshot = experiment.step("slow deriver succeeds").measured["snapshot"]
    assert not during.context_memory_probe and during.search_probe == ()


def test_queue_and_counters_say_what_is_pending(backend: Backend) -> None:
    experiment = backend.run(delayed_repair)
    queued = experiment.step("superseded, queue unprocessed").after
    assert set(queued.queued()) == {"summary", "packing"}
    assert queued.repairs == {"pending": 2, "repaired": 0, "dropped": 0, "failed": 0}

    failed = experiment.step("deriver raises")
    (tried,) = failed.measured["result"].failed
    assert set(failed.after.queued()) == {"summary", "packing"}
    assert {r: n for r, _, _, n in failed.after.queue} == {
        tried: 1,
        ({"summary", "packing"} - {tried}).pop(): 0,
    }
    assert failed.after.repairs == {"pending": 2, "repaired": 0, "dropped": 0, "failed": 1}
    assert reasons(failed.after) == reasons(failed.before)  # nothing half-written
    assert failed.after.record(tried).stored == (1,)

    slow = experiment.step("slow deriver succeeds")
    (repaired,) = slow.measured["result"].repaired
    assert slow.after.record(repaired).visible and slow.after.record(repaired).shown == 2
    assert slow.after.queued() == tuple(sorted({"summary", "packing"} - {repaired}))
    assert slow.after.repairs == {"pending": 1, "repaired": 1, "dropped": 0, "failed": 1}
    assert (repaired, 2) in slow.after.context_items

    declined = experiment.step("deriver declines")
    assert declined.after.queue == ()
    assert declined.after.repairs == {"pending": 0, "repaired": 1, "dropped": 1, "failed": 1}
    (left,) = declined.measured["result"].dropped
    assert declined.after.record(left).reason == "stale"


def test_slow_deriver_runs_outside_the_transaction(backend: Backend) -> None:
    """A second connection reads while the deriver runs and sees the record still stale."""
    slow = backend.run(delayed_repair).step("slow deriver succeeds")
    assert slow.measured["read_during_repair"], slow.measured
    during: Snapshot = slow.measured["snapshot"]
    assert set(during.queued()) == {"summary", "packing"}
    assert {s.id: s.reason for s in during.records} == reasons(slow.before)


# -- 4. a consumer alive across replacement ------------------------------------------------
def test_stale_deliveries_report_every_replacement(backend: Backend) -> None:
    experiment = backend.run(live_consumer)
    expected = {
        "revise": {("fact", 1, "revised"), ("summary", 1, "stale")},
        # a later delivery of fact@2 settles fact@1; the summary given with it is still stale
        "revise-redelivered": {("summary", 1, "stale")},
        "replace": {("fact", 1, "superseded"), ("summary", 1, "stale")},
        "retract": {("fact", 1, "retracted"), ("summary", 1, "stale")},
        "switch-branch": {("plan", 1, "off_path")},
        "withdraw": {("fact", 1, "withdrawn"), ("summary", 1, "stale")},
        "erase": {("fact", 1, "erased"), ("summary", 1, "erased")},
    }
    assert set(expected) == set(REPLACEMENTS)
    for case, wanted in expected.items():
        step = experiment.step(case)
        assert step.before.stale_deliveries == (), case
        assert stale_set(step.after) == wanted, case


def test_next_context_differs_as_it_should(backend: Backend) -> None:
    experiment = backend.run(live_consumer)
    expected = {
        "revise": {("fact", 2)},
        "revise-redelivered": {("fact", 2)},
        "replace": {("fact-4000", 1)},
        "retract": set(),
        "switch-branch": {("fact", 1), ("summary", 1)},
        "withdraw": set(),
        "erase": set(),
    }
    assert set(expected) == set(REPLACEMENTS)
    for case, wanted in expected.items():
        step = experiment.step(case)
        first = {("fact", 1), ("summary", 1)} | (
            {("plan", 1)} if case == "switch-branch" else set()
        )
        assert set(step.before.context_items) == set(step.before.delivered) == first, case
        assert set(step.after.context_items) == wanted, case
        later = wanted if case == "revise-redelivered" else set()
        assert set(step.after.delivered) == first | later, case  # every delivery stays on record


# -- 5. visibility vs erasure vs repair ----------------------------------------------------
def test_reversible_takeouts_keep_the_text_and_undo(backend: Backend) -> None:
    """withdraw, retract and supersede hide but keep every copy (the probes find them), and
    undoing brings the fact back."""
    experiment = backend.run(visibility_and_pages)
    for case in ("withdraw", "retract", "supersede"):
        step = experiment.step(case)
        assert step.residue_open is not None
        assert {"events.content", "revisions.content"} <= set(step.residue_open.rows), case
        assert step.after.index_rows == step.before.index_rows != (), case
        assert step.after.search_probe == () and not step.after.context_memory_probe, case
        assert step.undone is not None and step.undone.record("fact").visible, case


def test_withdrawn_and_erased_events_leave_the_transcript(backend: Backend) -> None:
    experiment = backend.run(visibility_and_pages)
    for case in ("withdraw", *ERASING):
        step = experiment.step(case)
        assert step.before.context_text_probe, case  # u1 was in the conversation part
        assert not step.after.context_text_probe, case
    retracted = experiment.step("retract").after  # a retraction hides the fact, not u1
    assert retracted.context_text_probe and not retracted.context_memory_probe


def test_erase_leaves_no_row_holding_the_marker(backend: Backend) -> None:
    experiment = backend.run(visibility_and_pages)
    for case in ERASING:
        step = experiment.step(case)
        assert step.residue_open is not None
        assert step.residue_open.rows == {}, case
        assert all(state.texts == ("",) * len(state.stored) for state in step.after.records)
        assert all(state.reason == "erased" for state in step.after.records)
        assert step.after.index_rows == () and step.after.vectors == (), case
        assert step.after.queue == () and not step.after.context_text_probe, case
        assert step.undone is None, case  # restore refused
        assert step.measured["reimported"].rows == {}, case  # a re-import is a no-op
    failed = experiment.step("erase-after-failed-repair").before
    assert failed.queue and all(attempts == 1 for *_, attempts in failed.queue)


def test_erase_leaves_no_byte_in_the_sqlite_files(backend: Backend) -> None:
    if backend.name != "sqlite":
        pytest.skip("the files of a PostgreSQL server are the server's")
    experiment = backend.run(visibility_and_pages)
    for case in ERASING:
        step = experiment.step(case)
        for found in (step.residue_open, step.residue_closed):
            assert found is not None and found.files is not None
            assert found.total == 0, (case, found)
    control = experiment.step("withdraw").residue_closed
    assert control is not None and control.files is not None
    assert sum(control.files.values()) > 0


def test_erase_vacuums_the_tables_that_held_text(backend: Backend) -> None:
    if backend.name != "postgres":
        pytest.skip("VACUUM is PostgreSQL's")
    experiment = backend.run(visibility_and_pages)
    for case in ERASING:
        found = experiment.step(case).residue_open
        assert found is not None
        assert {"events", "revisions", "vectors"} <= set(found.vacuumed), case
    for case in ("withdraw", "retract", "supersede"):
        found = experiment.step(case).residue_open
        assert found is not None and found.vacuumed == (), case


def test_postgres_pages_keep_erased_bytes_until_vacuum_full(backend: Backend) -> None:
    """Plain VACUUM reclaims dead tuples but may leave their bytes in a page's free space;
    VACUUM FULL rewrites the files. Measured from raw pages (pageinspect)."""
    if backend.name != "postgres":
        pytest.skip("PostgreSQL pages")
    experiment = backend.run(visibility_and_pages)
    control = experiment.step("withdraw")
    assert control.residue_open is not None and control.residue_closed is not None
    if control.residue_open.pages is None:
        pytest.skip("pageinspect is not available on this server")
    assert control.residue_open.pages > 0 and control.residue_closed.pages  # the probe works
    for case in ERASING:
        rewritten = experiment.step(case).residue_closed
        assert rewritten is not None and rewritten.when == "after VACUUM FULL"
        assert rewritten.total == 0, (case, rewritten)


def test_every_takeout_is_measured() -> None:
    assert set(TAKEOUTS) == {"withdraw", "retract", "supersede", *ERASING}


# -- erase racing a repair -------------------------------------------------------------------
def test_erase_during_a_repair_reaches_the_repaired_revision(backend: Backend) -> None:
    """The deriver runs outside the transaction; if the record it copies from is erased
    meanwhile, the repaired revision (built on the erased record, quoting it) must not
    survive the erasure."""
    url = backend.make_url()
    marker = f"zqrace{uuid.uuid4().hex[:10]}x"
    with Memory.open(url) as mem:
        mem.add_events(
            [
                {"id": "u1", "content": "budget 3000"},
                {"id": "u2", "parent": "u1", "content": f"make it 4000 {marker}"},
            ]
        )
        mem.add_record("fact", sources=["u1"], key="budget", content="budget 3000")
        mem.add_record("summary", sources=["fact"], content="trip within 3000")
        mem.add_record(
            "fact-4000", sources=["u2"], key="budget", content=f"4000 {marker}", supersedes=["fact"]
        )

        def deriver(record: Any, view: Any) -> tuple[str, list[str]]:
            source = next(r for r in view.records if r.key == "budget")
            mem.erase("u2")  # the user says "forget that" while the model is working
            return (f"trip within {source.content}", [source.id])

        outcome = mem.repair(deriver)
        assert "ErasedError" in outcome.failed["summary"]
        texts = [r.content for r in mem.store.get_revisions("default", "summary")]
        found = residue(mem.store, marker)
    assert not any(marker in text for text in texts), texts
    assert found.rows == {}, found


# -- the report ----------------------------------------------------------------------------
def test_write_report_renders_every_experiment(tmp_path: Path) -> None:
    """With BRANCHMEM_PROPAGATION_REPORT set (CI), the report is written there as well."""
    out = write_report(os.environ.get(REPORT_VARIABLE) or tmp_path / "report.md")
    text = out.read_text(encoding="utf-8")
    for number in range(1, 6):
        assert f"\n## {number}. " in text
    for column in ("record", "revision", "history", "audit", "search", "vector index"):
        assert f" {column} |" in text
    assert re.search(r"zq\w+x", text) is None  # the random markers never reach the report
    # one row per measured case
    assert text.count("\n| erase |") == 2  # experiments 4 and 5


def test_report_refuses_an_in_memory_store(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="in memory"):
        write_report(tmp_path / "report.md", "sqlite://")
    assert not (tmp_path / "report.md").exists()


def test_residue_probes_agree_with_the_backend(backend: Backend) -> None:
    url = backend.make_url()
    marker = f"zqprobe{uuid.uuid4().hex[:10]}x"
    with Memory.open(url) as mem:
        mem.add_event("u1", content=f"hello {marker}")
        found = residue(mem.store, marker)
    assert found.rows == {"events.content": 1}
    if backend.name == "sqlite":
        assert sqlite_residue(Path(url), marker).rows == {"events.content": 1}
    else:
        assert postgres_residue(url, marker).rows == {"events.content": 1}
