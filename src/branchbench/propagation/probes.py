"""What one propagation measurement holds and how it is taken: the state of every
representation of a record (``observe``), and the bytes an erase may leave behind in a
store's rows and files (``residue``: SQLite files and tables, PostgreSQL tables and pages)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from branchmem.errors import InvalidInput
from branchmem.memory import Memory
from branchmem.search.context import DEFAULT_FORMAT
from branchmem.search.lexical import normalize
from branchmem.store.base import Store
from branchmem.store.sqlite import SQLiteStore

REPRESENTATIONS: Final = (
    "record",
    "revision",
    "history",
    "audit",
    "search",
    "vector index",
    "delivered context",
)
REPAIR_QUEUE: Final = "repair queue"
STORE_FILES: Final = "store files"
UNDO: Final = "undo"

SESSION: Final = "chat"

Key = tuple[str, int]


# -- what one measurement holds ---------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RecordState:
    """One record as the store holds it and as one view decides it."""

    id: str
    stored: tuple[int, ...]
    texts: tuple[str, ...]  # content of each stored revision, oldest first ("" once erased)
    visible: bool
    shown: int | None  # the revision the view decided on (None: none passes the rule)
    reason: str
    happened: tuple[str, ...]  # Memory.history, oldest first
    audit_ops: tuple[str, ...]  # ops of the audit entries naming the id

    @property
    def state(self) -> str:
        return f"visible@{self.shown}" if self.visible else self.reason


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Every representation of the tracked records at one anchor, at one moment.

    ``probe`` is the text the correction should have taken away (a marker string in the old
    content); ``*_probe`` fields say where it is still found.
    """

    anchor: str
    probe: str
    records: tuple[RecordState, ...]
    search: tuple[Key, ...]  # Memory.search(probe): gated, lexical + vector
    search_probe: tuple[Key, ...]  # hits whose text still contains the probe
    index_rows: tuple[Key, ...]  # every stored revision whose normalised text holds the probe,
    # ungated: what a retriever over the store's text, not the views, would find
    vectors: tuple[Key, ...]  # tracked revisions that have a stored vector
    context_items: tuple[Key, ...]  # what the next context(anchor, query=probe) carries
    context_memory_probe: bool  # the probe in its memory section
    context_text_probe: bool  # the probe anywhere in its text (transcript included)
    delivered: tuple[Key, ...]  # everything the session was given so far
    stale_deliveries: tuple[tuple[str, int, str], ...]  # (id, revision, reason)
    queue: tuple[tuple[str, str, str, int], ...]  # (record, reason, cause, attempts)
    repairs: Mapping[str, int] = field(default_factory=dict)

    def record(self, record_id: str) -> RecordState:
        for state in self.records:
            if state.id == record_id:
                return state
        raise KeyError(record_id)

    def queued(self) -> tuple[str, ...]:
        return tuple(sorted({entry[0] for entry in self.queue}))


@dataclass(frozen=True, slots=True)
class Residue:
    """Where a marker string still is in a store, looked for by the database and in its files.

    ``rows``: "table.column" -> rows holding it (every text, blob and JSON column of every
    table, found through the catalogue). ``files``: file name -> byte occurrences (SQLite:
    main file, -wal, -shm; None for PostgreSQL, whose files are the server's).
    ``vacuumed``: PostgreSQL tables VACUUMed since the ``before`` counts were taken.
    ``pages``: PostgreSQL raw pages (heap, index, TOAST) whose bytes hold it, read with
    ``pageinspect`` (None: not inspected). ``when``: the moment it was measured.
    """

    rows: Mapping[str, int]
    files: Mapping[str, int] | None
    vacuumed: tuple[str, ...] = ()
    pages: int | None = None
    when: str = "open"

    @property
    def total(self) -> int:
        found = sum(self.rows.values()) + sum((self.files or {}).values())
        return found + (self.pages or 0)


@dataclass(frozen=True, slots=True)
class Step:
    """One case or stage of an experiment: the snapshot before, after, and what else was
    measured (residue, undo, timings), keyed by a column name."""

    label: str
    before: Snapshot
    after: Snapshot
    extra: Mapping[str, str] = field(default_factory=dict)
    residue_open: Residue | None = None
    residue_closed: Residue | None = None
    undone: Snapshot | None = None
    measured: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Experiment:
    number: int
    title: str
    question: str
    subjects: tuple[str, ...]  # the record ids whose fate the table shows
    steps: tuple[Step, ...]
    columns: tuple[str, ...] = REPRESENTATIONS

    def step(self, label: str) -> Step:
        for step in self.steps:
            if step.label == label:
                return step
        raise KeyError(label)


# -- measuring ---------------------------------------------------------------------------
def observe(
    mem: Memory,
    namespace: str,
    anchor: str,
    record_ids: Sequence[str],
    probe: str,
    *,
    session: str | None = SESSION,
) -> Snapshot:
    """Measure every representation of ``record_ids`` at ``anchor`` (reads only)."""
    store = mem.store
    folded = probe.casefold()
    states = tuple(_record_state(mem, namespace, anchor, rid) for rid in record_ids)
    hits = mem.search(probe, anchor, k=50, namespace=namespace)
    keys = [(s.id, revision) for s in states for revision in s.stored]
    needle = normalize(probe)
    rows = [
        (record_id, revision.revision)
        for record_id in store.record_ids(namespace)
        for revision in store.get_revisions(namespace, record_id)
        if needle and needle in normalize(revision.content)
    ]
    context = mem.context(anchor, query=probe, budget=2000, namespace=namespace)
    memory_part = context.text.split("\n" + DEFAULT_FORMAT.conversation_heading)[0]
    if memory_part.startswith(DEFAULT_FORMAT.conversation_heading):
        memory_part = ""
    delivered: tuple[Key, ...] = ()
    stale: tuple[tuple[str, int, str], ...] = ()
    if session is not None:
        deliveries = mem.deliveries(session, namespace=namespace)
        delivered = tuple(dict.fromkeys(item for d in deliveries for item in d.items))
        if deliveries:
            stale = tuple(
                (s.record_id, s.revision, s.reason)
                for s in mem.stale_deliveries(session, namespace=namespace)
            )
    return Snapshot(
        anchor=anchor,
        probe=probe,
        records=states,
        search=tuple((h.record.id, h.record.revision) for h in hits),
        search_probe=tuple(
            (h.record.id, h.record.revision) for h in hits if folded in h.record.content.casefold()
        ),
        index_rows=tuple(sorted(rows)),
        vectors=tuple(sorted(store.vectors(namespace, keys))),
        context_items=tuple(context.items),
        context_memory_probe=folded in memory_part.casefold(),
        context_text_probe=folded in context.text.casefold(),
        delivered=delivered,
        stale_deliveries=stale,
        queue=tuple(
            (q.record_id, q.reason, q.cause, q.attempts)
            for q in mem.repair_queue(namespace=namespace)
        ),
        repairs=dict(mem.report(namespace=namespace).get("repairs", {})),
    )


def _record_state(mem: Memory, namespace: str, anchor: str, record_id: str) -> RecordState:
    revisions = mem.store.get_revisions(namespace, record_id)
    explanation = mem.explain(record_id, anchor, namespace=namespace)
    history = mem.history(record_id, namespace=namespace)
    return RecordState(
        id=record_id,
        stored=tuple(r.revision for r in revisions),
        texts=tuple(r.content for r in revisions),
        visible=explanation.visible,
        shown=explanation.revision,
        reason=explanation.reason,
        happened=tuple(str(entry.get("happened", entry["op"])) for entry in history),
        audit_ops=tuple(e.op for e in mem.audit(id=record_id, namespace=namespace)),
    )


def residue(store: Store, marker: str) -> Residue:
    """Look for ``marker`` in every column of every table, and (SQLite) in the files."""
    if isinstance(store, SQLiteStore):
        return sqlite_residue(Path(store.path), marker)
    url = getattr(store, "url", None)  # PostgresStore, imported only with its driver
    if isinstance(url, str) and is_postgres(url):
        return postgres_residue(url, marker)
    raise InvalidInput(f"no residue probe for a {type(store).__name__}: use SQLite or PostgreSQL")


_COUNT_IN_FILES = """
import json, sys
from pathlib import Path
needle = sys.argv[1].encode()
found = {}
for name in sys.argv[2:]:
    file = Path(name)
    found[file.name] = file.read_bytes().count(needle) if file.exists() else 0
print(json.dumps(found))
"""


def file_occurrences(path: Path, marker: str) -> dict[str, int]:
    """Byte occurrences of ``marker`` in a SQLite database, its -wal and its -shm, counted
    by a child process: this one may hold the database open, and closing a descriptor of
    its files would drop its locks (``branchmem.bytescan`` says why)."""
    names = [str(path) + suffix for suffix in ("", "-wal", "-shm")]
    done = subprocess.run(
        [sys.executable, "-c", _COUNT_IN_FILES, marker, *names],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    found: dict[str, int] = json.loads(done.stdout)
    return found


def sqlite_residue(path: Path, marker: str, when: str = "open") -> Residue:
    """The files as bytes, then every column of every table through a read-only connection
    (it reads the WAL too, so it also sees what is not yet checkpointed)."""
    files = file_occurrences(path, marker)  # before our own connection touches anything
    rows: dict[str, int] = {}
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        tables = db.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
        ).fetchall()
        for name, sql in tables:
            if str(sql or "").upper().startswith("CREATE VIRTUAL"):
                continue  # its shadow tables are ordinary tables and are searched
            for column in db.execute(f'PRAGMA table_info("{name}")').fetchall():
                count = db.execute(
                    f'SELECT count(*) FROM "{name}" '
                    f'WHERE instr(CAST("{column[1]}" AS BLOB), CAST(? AS BLOB)) > 0',
                    (marker,),
                ).fetchone()[0]
                if count:
                    rows[f"{name}.{column[1]}"] = int(count)
    return Residue(rows=rows, files=files, when=when)


# PostgreSQL column types that can hold text, and how to test one for the marker.
_PG_TESTS: Final = {
    "text": "strpos({col}, %s) > 0",
    "character varying": "strpos({col}, %s) > 0",
    "character": "strpos({col}, %s) > 0",
    "json": "strpos({col}::text, %s) > 0",
    "jsonb": "strpos({col}::text, %s) > 0",
    "bytea": "position(convert_to(%s, 'UTF8') in {col}) > 0",
}


def postgres_residue(
    url: str,
    marker: str,
    vacuum_before: Mapping[str, int] | None = None,
    *,
    inspect_pages: bool = False,
    when: str = "open",
) -> Residue:
    """Every text, varchar, JSON and bytea column of every table of the current schema, found
    through ``information_schema``; which tables were VACUUMed since ``vacuum_before``; with
    ``inspect_pages`` (creates the ``pageinspect`` extension: superuser, throwaway databases)
    the raw pages too."""
    import psycopg

    rows: dict[str, int] = {}
    pages: int | None = None
    with psycopg.connect(url, autocommit=True) as db:
        columns = db.execute(
            "SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
            "JOIN information_schema.tables t ON t.table_schema = c.table_schema "
            "AND t.table_name = c.table_name WHERE c.table_schema = current_schema() "
            "AND t.table_type = 'BASE TABLE' ORDER BY c.table_name, c.ordinal_position"
        ).fetchall()
        for table, column, data_type in columns:
            test = _PG_TESTS.get(str(data_type))
            if test is None:
                continue
            condition = test.format(col=f'"{column}"')
            row = db.execute(
                f'SELECT count(*) FROM "{table}" WHERE {condition}',
                (marker,),
            ).fetchone()
            if row and row[0]:
                rows[f"{table}.{column}"] = int(row[0])
        vacuumed: tuple[str, ...] = ()
        if vacuum_before is not None:
            now = vacuum_counts(url, db)
            vacuumed = tuple(t for t, n in sorted(now.items()) if n > vacuum_before.get(t, 0))
        if inspect_pages:
            try:
                pages = postgres_pages(db, marker)
            except psycopg.Error:  # no pageinspect, or not a superuser: not inspected
                pages = None
    return Residue(rows=rows, files=None, vacuumed=vacuumed, pages=pages, when=when)


def postgres_pages(db: Any, marker: str) -> int:
    """Raw pages of every table, index and TOAST table of the current schema whose bytes hold
    ``marker``: what the row probe cannot see (dead tuples, freed space inside a page)."""
    db.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
    row = db.execute(
        "WITH relations AS ("
        " SELECT c.oid AS rel FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i', 'm')"
        " UNION SELECT c.reltoastrelid FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = current_schema() AND c.reltoastrelid <> 0)"
        " SELECT count(*) FROM relations, LATERAL generate_series(0, "
        "(pg_relation_size(rel) / current_setting('block_size')::int)::int - 1) AS block"
        " WHERE position(convert_to(%s, 'UTF8') in get_raw_page(rel::regclass::text, block)) > 0",
        (marker,),
    ).fetchone()
    return int(row[0]) if row else 0


def vacuum_counts(url: str, db: Any = None) -> dict[str, int]:
    """How often each table of the current schema was VACUUMed (manual runs)."""
    import psycopg

    query = (
        "SELECT relname, vacuum_count FROM pg_stat_user_tables WHERE schemaname = current_schema()"
    )
    if db is not None:
        return {str(t): int(n) for t, n in db.execute(query).fetchall()}
    with psycopg.connect(url, autocommit=True) as own:
        return {str(t): int(n) for t, n in own.execute(query).fetchall()}


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))
