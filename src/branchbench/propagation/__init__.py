"""The five propagation experiments: where a correction reaches, measured on a real store.

A correction is only as good as the copies it reaches. Each experiment below builds a small
conversation on a ``Memory`` opened on a store URL (a SQLite file or a PostgreSQL DSN), derives
records from it, corrects something, and *measures* every representation that could still
carry the old text before and after: the record, its stored revisions, ``history``, the
audit log, the searchable text, the vector index and the context a consumer gets (and was
given). ``write_report`` runs all five and renders those measurements as markdown tables; no
cell is typed in. ``tests/test_propagation.py`` asserts the contract (SPEC §5-§6) on the
same measurements, on SQLite and PostgreSQL.

The package is split by concept: ``probes`` (what one measurement holds and how it is
taken, including the residue an erase may leave in a store's rows and files),
``experiments`` (the five experiments and ``run_all``) and ``report`` (the markdown
renderer and ``write_report``); every name is importable from here as before.

Every run writes its own namespaces (a random token) and its own marker strings, so the
experiments can run on a store that already holds data, and a marker found in a file can
only come from this run.
"""

from __future__ import annotations

from .experiments import (
    CORRECTIONS,
    EXPERIMENTS,
    READER,
    REPAIR_WAIT,
    REPLACEMENTS,
    SUPPORT_SHAPES,
    TAKEOUTS,
    Bench,
    DeriverFailed,
    bench,
    delayed_repair,
    live_consumer,
    run_all,
    trace_correction,
    visibility_vs_erasure,
    withdraw_supports,
)
from .probes import (
    REPAIR_QUEUE,
    REPRESENTATIONS,
    SESSION,
    STORE_FILES,
    UNDO,
    Experiment,
    Key,
    RecordState,
    Residue,
    Snapshot,
    Step,
    file_occurrences,
    is_postgres,
    observe,
    postgres_pages,
    postgres_residue,
    residue,
    sqlite_residue,
    vacuum_counts,
)
from .report import (
    CELLS,
    render,
    write_report,
)

__all__ = [
    "CELLS",
    "CORRECTIONS",
    "EXPERIMENTS",
    "READER",
    "REPAIR_QUEUE",
    "REPAIR_WAIT",
    "REPLACEMENTS",
    "REPRESENTATIONS",
    "SESSION",
    "STORE_FILES",
    "SUPPORT_SHAPES",
    "TAKEOUTS",
    "UNDO",
    "Bench",
    "DeriverFailed",
    "Experiment",
    "Key",
    "RecordState",
    "Residue",
    "Snapshot",
    "Step",
    "bench",
    "delayed_repair",
    "file_occurrences",
    "is_postgres",
    "live_consumer",
    "observe",
    "postgres_pages",
    "postgres_residue",
    "render",
    "residue",
    "run_all",
    "sqlite_residue",
    "trace_correction",
    "vacuum_counts",
    "visibility_vs_erasure",
    "withdraw_supports",
    "write_report",
]
