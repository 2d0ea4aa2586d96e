"""The five propagation experiments: where a correction reaches, measured on a real store.

A correction is only as good as the copies it reaches. Each experiment below builds a small
conversation on a ``Memory`` opened on a store URL (a SQLite file or a PostgreSQL DSN), derives
records from it, corrects something, and *measures* every representation that could still
carry the old text before and after: the record, its stored revisions, ``history``, the
audit log, the lexical index, the vector index and the context a consumer gets (and was
given). ``write_report`` runs all five and renders those measurements as markdown tables; no
cell is typed in. ``tests/test_propagation.py`` asserts the contract (SPEC §5-§6) on the
same measurements, on SQLite and PostgreSQL.

Every run writes its own namespaces (a random token) and its own marker strings, so the
experiments can run on a store that already holds data, and a marker found in a file can
only come from this run.
"""

from __future__ import annotations

import secrets
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from branchmem import RepairResult, RepairView
from branchmem.errors import BranchmemError, ErasedError, InvalidInput
from branchmem.memory import Memory
from branchmem.model import Record
from branchmem.search.context import DEFAULT_FORMAT
from branchmem.search.embedding import HashingEmbedder
from branchmem.search.lexical import query_terms
from branchmem.store.base import Store
from branchmem.store.sqlite import SQLiteStore

REPRESENTATIONS: Final = (
    "record",
    "revision",
    "history",
    "audit",
    "FTS index",
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
    index_rows: tuple[Key, ...]  # the store's lexical index, ungated: rows holding the probe
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
    ``fts_hits``: rowids the SQLite FTS5 index itself still returns for it;
    ``fts_orphans``: FTS5 index entries (any term) of rows no longer in ``search_docs``.
    ``vacuumed``: PostgreSQL tables VACUUMed since the ``before`` counts were taken.
    ``pages``: PostgreSQL raw pages (heap, index, TOAST) whose bytes hold it, read with
    ``pageinspect`` (None: not inspected). ``when``: the moment it was measured.
    """

    rows: Mapping[str, int]
    files: Mapping[str, int] | None
    fts_hits: int | None = None
    fts_orphans: int | None = None
    vacuumed: tuple[str, ...] = ()
    pages: int | None = None
    when: str = "open"

    @property
    def total(self) -> int:
        found = sum(self.rows.values()) + sum((self.files or {}).values())
        return found + (self.fts_hits or 0) + (self.fts_orphans or 0) + (self.pages or 0)


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
    rows = store.lexical_match(namespace, query_terms(probe))
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
        index_rows=tuple(sorted(key for key, text in rows if folded in text)),
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
    if isinstance(url, str) and _is_postgres(url):
        return postgres_residue(url, marker)
    raise InvalidInput(f"no residue probe for a {type(store).__name__}: use SQLite or PostgreSQL")


def file_occurrences(path: Path, marker: str) -> dict[str, int]:
    """Byte occurrences of ``marker`` in a SQLite database, its -wal and its -shm."""
    needle = marker.encode()
    found: dict[str, int] = {}
    for suffix in ("", "-wal", "-shm"):
        candidate = Path(str(path) + suffix)
        found[candidate.name] = candidate.read_bytes().count(needle) if candidate.exists() else 0
    return found


def sqlite_residue(path: Path, marker: str, when: str = "open") -> Residue:
    """The files as bytes, then every column of every table through a read-only connection
    (it reads the WAL too, so it also sees what is not yet checkpointed)."""
    files = file_occurrences(path, marker)  # before our own connection touches anything
    rows: dict[str, int] = {}
    fts_hits: int | None = None
    fts_orphans: int | None = None
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
        if any(name == "search_fts" for name, _ in tables) and len(marker) >= 3:
            fts_hits = int(
                db.execute(
                    "SELECT count(*) FROM search_fts WHERE search_fts MATCH ?",
                    ('"' + marker.casefold().replace('"', '""') + '"',),
                ).fetchone()[0]
            )
            db.execute(
                "CREATE VIRTUAL TABLE temp.fts_entries "
                "USING fts5vocab(main, 'search_fts', 'instance')"
            )
            fts_orphans = int(
                db.execute(
                    "SELECT count(*) FROM temp.fts_entries "
                    "WHERE doc NOT IN (SELECT rowid FROM main.search_docs)"
                ).fetchone()[0]
            )
    return Residue(rows=rows, files=files, fts_hits=fts_hits, fts_orphans=fts_orphans, when=when)


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


def _is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


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
            ns, marker = b.namespace(1, case), b.marker(f"t{case}")
            _conversation(mem, ns, marker)
            _derive(mem, ns, marker)
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
        "from `fact`; both are indexed (FTS and vectors) and delivered to a session at u2. "
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
        ns, marker = b.namespace(3, "repair"), b.marker("repair")
        _conversation(mem, ns, marker)
        _derive(mem, ns, marker)
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
            ns, marker = b.namespace(4, case), b.marker(f"c{case}")
            _conversation(mem, ns, marker)
            _derive(mem, ns, marker)
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
    postgres = _is_postgres(url)
    with bench(url) as b:
        mem = b.mem
        for case in TAKEOUTS:
            ns, marker = b.namespace(5, case), b.marker(f"v{case}")
            _conversation(mem, ns, marker)
            _derive(mem, ns, marker, revised=True)
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
    return f"search(marker): {hits}; index rows with it: {len(b.index_rows)} → {len(a.index_rows)}"


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
    "FTS index": _index_cell,
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
        if found.fts_hits is not None:
            text += (
                f"; FTS5 index hits {found.fts_hits}, entries of deleted rows {found.fts_orphans}"
            )
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
        backend = "PostgreSQL" if _is_postgres(target) else f"SQLite {sqlite3.sqlite_version}"
        text = render(run_all(target, inspect_pages=inspect_pages), backend=backend)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    return out
