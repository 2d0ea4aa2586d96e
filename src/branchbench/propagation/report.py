"""The propagation report: every experiment's measurements rendered as markdown tables,
one column per representation, no cell typed in (``render``, ``write_report``)."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from .experiments import run_all
from .probes import REPAIR_QUEUE, STORE_FILES, Experiment, Key, Snapshot, Step, is_postgres


# -- rendering ---------------------------------------------------------------------------
def _keys(keys: Sequence[Key]) -> str:
    return ", ".join(f"{i}@{r}" for i, r in keys) or "none"


def _change(before: str, after: str) -> str:
    return f"unchanged: {after}" if before == after else f"{before} → {after}"


def _gained(before: Sequence[str], after: Sequence[str]) -> list[str]:
    """The entries ``after`` has beyond ``before`` (logs only grow)."""
    return list(after[len(before) :])


def _record_cell(b: Snapshot, a: Snapshot, ids: Sequence[str]) -> str:
    return "; ".join(f"{i}: {_change(b.record(i).state, a.record(i).state)}" for i in ids)


def _revision_cell(b: Snapshot, a: Snapshot, ids: Sequence[str]) -> str:
    parts = []
    for i in ids:
        old, new = b.record(i), a.record(i)
        probe = b.probe.casefold()
        kept = sum(1 for text in new.texts[: len(old.texts)] if probe in text.casefold())
        parts.append(
            f"{i}: {len(old.stored)} → {len(new.stored)} stored, "
            f"{kept}/{len(old.stored)} earlier still hold the marker"
        )
    return "; ".join(parts)


def _history_cell(b: Snapshot, a: Snapshot, ids: Sequence[str]) -> str:
    parts = []
    for i in ids:
        gained = _gained(b.record(i).happened, a.record(i).happened)
        if gained:
            parts.append(f"{i}: +" + ", +".join(gained))
    return "; ".join(parts) or "no new entry"


def _audit_cell(b: Snapshot, a: Snapshot, ids: Sequence[str]) -> str:
    ops = dict.fromkeys(
        op for i in ids for op in _gained(b.record(i).audit_ops, a.record(i).audit_ops)
    )
    return ("+" + ", +".join(ops)) if ops else "no new entry"


def _index_cell(b: Snapshot, a: Snapshot, ids: Sequence[str]) -> str:
    hits = _change(_keys(b.search_probe), _keys(a.search_probe))
    stored = f"{len(b.index_rows)} → {len(a.index_rows)}"
    return f"search(marker): {hits}; stored revisions with it: {stored}"


def _vector_cell(b: Snapshot, a: Snapshot, ids: Sequence[str]) -> str:
    return f"vectors of tracked revisions: {len(b.vectors)} → {len(a.vectors)}"


def _context_cell(b: Snapshot, a: Snapshot, ids: Sequence[str]) -> str:
    stale = ", ".join(f"{i}@{r} {why}" for i, r, why in a.stale_deliveries) or "none"
    memory = "yes" if a.context_memory_probe else "no"
    transcript = "yes" if a.context_text_probe and not a.context_memory_probe else "no"
    return (
        f"next context: {_change(_keys(b.context_items), _keys(a.context_items))}; "
        f"marker in its memory: {memory}, only in its transcript: {transcript}; "
        f"stale_deliveries: {stale}"
    )


def _queue_cell(b: Snapshot, a: Snapshot, ids: Sequence[str]) -> str:
    queue = ", ".join(f"{r} ({why} by {cause}, tries {n})" for r, why, cause, n in a.queue)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(a.repairs.items()))
    return f"{queue or 'empty'}; counters: {counts or '-'}"


# column -> cell from (before, after, the tracked ids present in this step)
CELLS: Final[dict[str, Callable[[Snapshot, Snapshot, Sequence[str]], str]]] = {
    "record": _record_cell,
    "revision": _revision_cell,
    "history": _history_cell,
    "audit": _audit_cell,
    "search": _index_cell,
    "vector index": _vector_cell,
    "delivered context": _context_cell,
    REPAIR_QUEUE: _queue_cell,
}


def _cell(column: str, step: Step, subjects: Sequence[str]) -> str:
    if column == STORE_FILES:
        return _describe_residue(step)
    render_cell = CELLS.get(column)
    if render_cell is None:
        return str(step.extra.get(column, ""))
    tracked = {s.id for s in step.before.records}
    return render_cell(step.before, step.after, [i for i in subjects if i in tracked])


def _describe_residue(step: Step) -> str:
    parts = []
    for found in (step.residue_open, step.residue_closed):
        if found is None:
            continue
        rows = ", ".join(f"{k} {v}" for k, v in sorted(found.rows.items())) or "none"
        text = f"{found.when}: rows {rows}"
        if found.files is not None:
            files = ", ".join(f"{k} {v}" for k, v in found.files.items())
            text += f"; bytes {files}"
        if found.vacuumed:
            text += f"; VACUUMed {', '.join(found.vacuumed)}"
        if found.pages is not None:
            text += f"; raw pages holding it {found.pages}"
        parts.append(text)
    return " / ".join(parts)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(experiments: Sequence[Experiment], *, backend: str) -> str:
    """Markdown: one table per experiment, rows = cases, columns = representations."""
    lines = [
        "# Propagation report",
        "",
        f"Generated by `branchbench propagation-report` (`branchbench.propagation.write_report`) "
        f"on {backend}. Every cell is measured from the run (see docs/propagation.md); "
        'markers are random words, shown as "marker".',
        "",
    ]
    for experiment in experiments:
        lines += [f"## {experiment.number}. {experiment.title}", "", experiment.question, ""]
        header = ["case", *experiment.columns]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for step in experiment.steps:
            cells = [step.label, *(_cell(c, step, experiment.subjects) for c in experiment.columns)]
            lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def write_report(
    out_path: str | Path, url: str | None = None, *, inspect_pages: bool = False
) -> Path:
    """Run the five experiments (on a new SQLite file when ``url`` is None) and write the
    markdown report to ``out_path``. ``inspect_pages`` (PostgreSQL, a throwaway database
    only: it creates ``pageinspect`` and runs ``VACUUM FULL``) adds the raw-page probe."""
    out = Path(out_path)
    with tempfile.TemporaryDirectory(prefix="branchmem-propagation-") as scratch:
        target = url or str(Path(scratch) / "propagation.db")
        backend = "PostgreSQL" if is_postgres(target) else f"SQLite {sqlite3.sqlite_version}"
        text = render(run_all(target, inspect_pages=inspect_pages), backend=backend)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    return out
