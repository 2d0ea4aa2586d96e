"""What SQLite and PostgreSQL share: the schema, every query, transactions and savepoints.

A backend supplies the connection, how a write transaction begins (SQLite takes the database
write lock with ``BEGIN IMMEDIATE``; PostgreSQL takes a per-namespace advisory lock) and how
its driver's errors map onto ``branchmem.errors``. Queries use ``?`` placeholders and a
portable subset of SQL; ``_sql`` rewrites them for a driver that wants ``%s``.
"""

from __future__ import annotations

import itertools
from abc import abstractmethod
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from typing import Any

from ..audit import AuditEntry
from ..errors import SchemaVersionError
from ..model import Delivery, RepairItem
from ..provenance import RevisionNode
from ..retraction import TREE, RetractionNode
from ..search.lexical import normalize
from ..topology import EventNode
from . import codec
from .base import RevisionKey, Store
from .schema import KEYED_READS_VERSION, MIGRATIONS, SCHEMA_VERSION

CHUNK = 500  # ids per IN (...) list


class SQLStore(Store):
    """A ``Store`` over a DB-API connection; subclasses choose the database."""

    bigint = "INTEGER"
    double = "REAL"
    blob = "BLOB"

    def __init__(self) -> None:
        self._depth = 0
        self._seqs: dict[str, int] = {}
        self._forget()

    # -- what a backend supplies -------------------------------------------------------
    @abstractmethod
    def _connection(self) -> Any:
        """The connection of the current call."""

    @abstractmethod
    def _session(self) -> AbstractContextManager[None]:
        """Hold a connection for one public call (a pool checkout, or nothing)."""

    @abstractmethod
    def _begin_write(self, namespace: str | None) -> None:
        """Start the outermost write transaction, serialising writers of ``namespace``."""

    @abstractmethod
    def _translate(self, error: Exception) -> Exception | None:
        """The ``branchmem.errors`` exception for a driver error (None: not a driver error)."""

    def _sql(self, text: str) -> str:
        return text

    # -- execution ---------------------------------------------------------------------
    def _run(self, text: str, params: Sequence[Any] = ()) -> Any:
        try:
            return self._connection().execute(self._sql(text), tuple(params))
        except Exception as error:
            mapped = self._translate(error)
            if mapped is None:
                raise
            raise mapped from error

    def _all(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return list(self._run(text, params).fetchall())

    def _one(self, text: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        row = self._run(text, params).fetchone()
        return None if row is None else tuple(row)

    def _chunks(self, ids: Iterable[str]) -> Iterator[list[str]]:
        items = list(dict.fromkeys(ids))
        for start in range(0, len(items), CHUNK):
            yield items[start : start + CHUNK]

    @staticmethod
    def _marks(count: int) -> str:
        return ",".join("?" * count)

    # -- transactions ------------------------------------------------------------------
    # Within one call (a transaction or a read snapshot) events and revisions are cached:
    # nothing else can change them while the call holds its lock or snapshot. The namespace
    # sequence is counted in memory and written back before COMMIT.
    def _forget(self) -> None:
        self._events: dict[tuple[str, str], EventNode | None] = {}
        self._revisions: dict[tuple[str, str], list[RevisionNode]] = {}
        self._children: dict[tuple[str, str], list[str]] = {}

    @contextmanager
    def transaction(self, namespace: str | None = None) -> Iterator[None]:
        if self._depth > 0:
            name = f"bm_{self._depth}"
            self._run(f"SAVEPOINT {name}")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._run(f"ROLLBACK TO SAVEPOINT {name}")
                self._run(f"RELEASE SAVEPOINT {name}")
                self._forget()
                raise
            finally:
                self._depth -= 1
            self._run(f"RELEASE SAVEPOINT {name}")
            return
        with self._session():
            self._begin_write(namespace)
            self._depth = 1
            self._forget()
            self._seqs = {}
            try:
                yield
                self._flush_seqs()
            except BaseException:
                self._depth = 0
                self._forget()
                self._rollback()
                raise
            self._depth = 0
            self._forget()
            self._run("COMMIT")

    @contextmanager
    def reading(self, namespace: str) -> Iterator[None]:
        if self._depth > 0:
            yield
            return
        with self._session():
            self._begin_read()
            self._depth = 1
            self._forget()
            try:
                yield
            finally:
                self._depth = 0
                self._forget()
                self._rollback()

    def _begin_read(self) -> None:
        self._run("BEGIN")

    def _flush_seqs(self) -> None:
        for namespace, value in self._seqs.items():
            self._run("UPDATE namespaces SET seq = ? WHERE namespace = ?", (value, namespace))
        self._seqs = {}

    def _rollback(self) -> None:
        with suppress(Exception):  # a lost connection has rolled back already
            self._run("ROLLBACK")

    # -- schema ------------------------------------------------------------------------
    def schema_version(self) -> int:
        """The version the database is at (0: empty)."""
        with self._session():
            exists = self._table_exists("branchmem_schema")
            if not exists:
                return 0
            row = self._one("SELECT MAX(version) FROM branchmem_schema")
            return int(row[0]) if row and row[0] is not None else 0

    @abstractmethod
    def _table_exists(self, name: str) -> bool: ...

    def migrate(self, *, upgrade: bool = True) -> int:
        """Bring the schema to this version; refuse a database written by a newer one."""
        current = self.schema_version()
        if current > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"the store is at schema version {current}, newer than this branchmem "
                f"({SCHEMA_VERSION}); upgrade branchmem"
            )
        if current < SCHEMA_VERSION and current > 0 and not upgrade:
            raise SchemaVersionError(
                f"the store is at schema version {current}; run `branchmem migrate` to "
                f"upgrade it to {SCHEMA_VERSION}"
            )
        with self.transaction(None):
            current = self._locked_version()
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version - 1]:
                    self._run(
                        statement.format(bigint=self.bigint, double=self.double, blob=self.blob)
                    )
                self._after_migration(version)
                self._run("INSERT INTO branchmem_schema (version) VALUES (?)", (version,))
        return SCHEMA_VERSION

    def _after_migration(self, version: int) -> None:
        """Create what only this database has, once the portable schema is at ``version``;
        a subclass adds its own objects first, then calls this."""
        if version == KEYED_READS_VERSION:
            self._backfill_keyed_reads()
        if version == 3:  # index what was written before there was a search index
            rows = self._all("SELECT namespace, record_id, revision, content FROM revisions")
            self._many(
                "INSERT INTO search_docs (namespace, record_id, revision, search_text) "
                "VALUES (?, ?, ?, ?)",
                [
                    (ns, record_id, revision, normalize(text))
                    for ns, record_id, revision, text in rows
                ],
            )

    def _locked_version(self) -> int:
        if not self._table_exists("branchmem_schema"):
            return 0
        row = self._one("SELECT MAX(version) FROM branchmem_schema")
        return int(row[0]) if row and row[0] is not None else 0

    # -- sequence ----------------------------------------------------------------------
    def next_seq(self, namespace: str) -> int:
        if namespace in self._seqs:
            self._seqs[namespace] += 1
            return self._seqs[namespace]
        row = self._one(
            "INSERT INTO namespaces (namespace, seq) VALUES (?, 1) "
            "ON CONFLICT (namespace) DO UPDATE SET seq = namespaces.seq + 1 RETURNING seq",
            (namespace,),
        )
        assert row is not None
        if self._depth > 0:
            self._seqs[namespace] = int(row[0])
        return int(row[0])

    # -- events ------------------------------------------------------------------------
    def get_event(self, namespace: str, event_id: str) -> EventNode | None:
        key = (namespace, event_id)
        if key in self._events:
            return self._events[key]
        row = self._one(
            f"SELECT {codec.EVENT_COLUMNS} FROM events WHERE namespace = ? AND id = ?",
            (namespace, event_id),
        )
        node = None if row is None else codec.event_node(row)
        if self._depth > 0:
            self._events[key] = node
        return node

    def prefetch(self, namespace: str, ids: Collection[str]) -> None:
        """Load in bulk what one call will ask about these ids: events, children, records."""
        if self._depth == 0:
            return
        wanted = [i for i in dict.fromkeys(ids) if (namespace, i) not in self._events]
        for chunk in self._chunks(wanted):
            marks = self._marks(len(chunk))
            found = {
                row[0]: codec.event_node(row)
                for row in self._all(
                    f"SELECT {codec.EVENT_COLUMNS} FROM events WHERE namespace = ? "
                    f"AND id IN ({marks})",
                    (namespace, *chunk),
                )
            }
            children: dict[str, list[str]] = {i: [] for i in chunk}
            rows = self._all(  # no ORDER BY: a planner may answer it by scanning seq order
                f"SELECT id, parent, seq FROM events WHERE namespace = ? AND parent IN ({marks})",
                (namespace, *chunk),
            )
            for child, parent, _ in sorted(rows, key=lambda row: int(row[2])):
                children[parent].append(child)
            records: dict[str, list[RevisionNode]] = {i: [] for i in chunk}
            for row in self._all(
                f"SELECT {codec.REVISION_COLUMNS} FROM revisions WHERE namespace = ? "
                f"AND record_id IN ({marks}) ORDER BY record_id, revision",
                (namespace, *chunk),
            ):
                records[row[0]].append(codec.revision_node(row))
            for item in chunk:
                self._events[(namespace, item)] = found.get(item)
                self._children[(namespace, item)] = children[item]
                self._revisions[(namespace, item)] = records[item]

    def put_event(self, namespace: str, node: EventNode) -> None:
        self._run(
            f"INSERT INTO events (namespace, {codec.EVENT_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (namespace, id) DO UPDATE "
            "SET tree = excluded.tree, attached = excluded.attached, depth = excluded.depth, "
            "jump = excluded.jump",
            (namespace, *codec.event_row(node)),
        )
        key = (namespace, node.id)
        if self._depth > 0:
            if self._events.get(key, node) is None and node.parent is not None:  # known new
                siblings = self._children.get((namespace, node.parent))
                if siblings is not None:
                    siblings.append(node.id)
            self._events[key] = node

    def children(self, namespace: str, parent_id: str) -> list[str]:
        key = (namespace, parent_id)
        if key in self._children:
            return list(self._children[key])
        rows = self._all(
            "SELECT id FROM events WHERE namespace = ? AND parent = ? ORDER BY seq",
            (namespace, parent_id),
        )
        found = [row[0] for row in rows]
        if self._depth > 0:
            self._children[key] = found
        return list(found)

    def path_ids(self, namespace: str, anchor: str) -> list[str]:
        rows = self._all(
            "WITH RECURSIVE up(id, parent, n) AS ("
            " SELECT id, parent, 0 FROM events WHERE namespace = ? AND id = ?"
            " UNION ALL SELECT e.id, e.parent, up.n + 1 FROM events e JOIN up"
            " ON e.namespace = ? AND e.id = up.parent)"
            " SELECT id FROM up ORDER BY n DESC",
            (namespace, anchor, namespace),
        )
        return [row[0] for row in rows]

    def path_events(self, namespace: str, anchor: str) -> list[EventNode]:
        columns = ", ".join("e." + c for c in codec.EVENT_COLUMNS.split(", "))
        rows = self._all(
            "WITH RECURSIVE up(id, parent, n) AS ("
            " SELECT id, parent, 0 FROM events WHERE namespace = ? AND id = ?"
            " UNION ALL SELECT e.id, e.parent, up.n + 1 FROM events e JOIN up"
            " ON e.namespace = ? AND e.id = up.parent)"
            f" SELECT {columns} FROM up JOIN events e ON e.namespace = ? AND e.id = up.id"
            " ORDER BY up.n DESC",
            (namespace, anchor, namespace, namespace),
        )
        nodes = [codec.event_node(row) for row in rows]
        if self._depth > 0:
            for node in nodes:
                self._events[(namespace, node.id)] = node
        return nodes

    def iter_events(self, namespace: str, tree: str | None = None) -> Iterator[EventNode]:
        if tree is None:
            rows = self._all(
                f"SELECT {codec.EVENT_COLUMNS} FROM events WHERE namespace = ? ORDER BY seq",
                (namespace,),
            )
        else:
            rows = self._all(
                f"SELECT {codec.EVENT_COLUMNS} FROM events WHERE namespace = ? AND tree = ? "
                "ORDER BY seq",
                (namespace, tree),
            )
        return (codec.event_node(row) for row in rows)

    def set_head(self, namespace: str, tree: str, event_id: str) -> None:
        self._run(
            "INSERT INTO heads (namespace, tree, event_id) VALUES (?, ?, ?) "
            "ON CONFLICT (namespace, tree) DO UPDATE SET event_id = excluded.event_id",
            (namespace, tree, event_id),
        )

    def heads(self, namespace: str) -> dict[str, str]:
        rows = self._all("SELECT tree, event_id FROM heads WHERE namespace = ?", (namespace,))
        return {tree: event_id for tree, event_id in rows}

    # -- records -----------------------------------------------------------------------
    def get_revisions(self, namespace: str, record_id: str) -> list[RevisionNode]:
        key = (namespace, record_id)
        if key in self._revisions:
            return list(self._revisions[key])
        rows = self._all(
            f"SELECT {codec.REVISION_COLUMNS} FROM revisions WHERE namespace = ? "
            "AND record_id = ? ORDER BY revision",
            (namespace, record_id),
        )
        found = [codec.revision_node(row) for row in rows]
        if self._depth > 0:
            self._revisions[key] = found
        return list(found)

    def put_revision(self, namespace: str, node: RevisionNode) -> None:
        cached = self._revisions.get((namespace, node.record_id))
        known_new = cached is not None and node.revision > len(cached)
        if cached is not None:
            if node.revision <= len(cached):
                cached[node.revision - 1] = node
            else:
                cached.append(node)
        key = (namespace, node.record_id, node.revision)
        tables = ("frontiers", "ungated", "citing", "pending", "key_frontiers")
        for table in () if known_new else tables:
            self._run(  # a replaced revision: its old index rows go first
                f"DELETE FROM {table} WHERE namespace = ? AND record_id = ? AND revision = ?",
                key,
            )
        self._run(
            f"INSERT INTO revisions (namespace, {codec.REVISION_COLUMNS}, legacy, "
            "unknown_sources, detached_sources, consistent) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (namespace, record_id, revision) DO UPDATE SET refs = excluded.refs, "
            "gate = excluded.gate, legacy = excluded.legacy, "
            "unknown_sources = excluded.unknown_sources, "
            "detached_sources = excluded.detached_sources, consistent = excluded.consistent",
            (namespace, *codec.revision_row(node)),
        )
        gate = node.gate
        if gate.frontiers:
            self._many(
                "INSERT INTO frontiers (namespace, event_id, record_id, revision) "
                "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [(namespace, f.event, node.record_id, node.revision) for f in gate.frontiers],
            )
        else:
            self._run("INSERT INTO ungated (namespace, record_id, revision) VALUES (?, ?, ?)", key)
        self._many(
            "INSERT INTO pending (namespace, event_id, record_id, revision) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(namespace, e, node.record_id, node.revision) for e in sorted(gate.detached)],
        )
        targets = {name for ref in node.refs or () for name in (ref.target, ref.text)}
        self._many(
            "INSERT INTO citing (namespace, target, record_id, revision) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(namespace, t, node.record_id, node.revision) for t in sorted(targets)],
        )
        self._rank_by_key(namespace, [node])

    def _many(self, text: str, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        try:
            self._connection().executemany(self._sql(text), rows)
        except Exception as error:
            mapped = self._translate(error)
            if mapped is None:
                raise
            raise mapped from error

    def _revisions_by_keys(
        self, namespace: str, table: str, column: str, values: Collection[str]
    ) -> list[RevisionNode]:
        found: dict[RevisionKey, RevisionNode] = {}
        for chunk in self._chunks(values):
            rows = self._all(
                f"SELECT {', '.join('r.' + c for c in codec.REVISION_COLUMNS.split(', '))} "
                f"FROM {table} x JOIN revisions r ON r.namespace = x.namespace "
                "AND r.record_id = x.record_id AND r.revision = x.revision "
                f"WHERE x.namespace = ? AND x.{column} IN ({self._marks(len(chunk))})",
                (namespace, *chunk),
            )
            for row in rows:
                node = codec.revision_node(row)
                found[(node.record_id, node.revision)] = node
        return [found[key] for key in sorted(found)]

    def revisions_at(self, namespace: str, event_ids: Collection[str]) -> list[RevisionNode]:
        return self._revisions_by_keys(namespace, "frontiers", "event_id", event_ids)

    def ungated_revisions(self, namespace: str) -> list[RevisionNode]:
        rows = self._all(
            f"SELECT {', '.join('r.' + c for c in codec.REVISION_COLUMNS.split(', '))} "
            "FROM ungated x JOIN revisions r ON r.namespace = x.namespace "
            "AND r.record_id = x.record_id AND r.revision = x.revision WHERE x.namespace = ?",
            (namespace,),
        )
        # ids sort in Python: a database collation may order text differently
        return sorted(
            (codec.revision_node(row) for row in rows), key=lambda n: (n.record_id, n.revision)
        )

    def record_ids(self, namespace: str) -> list[str]:
        rows = self._all(
            "SELECT record_id FROM revisions WHERE namespace = ? AND revision = 1 ORDER BY seq",
            (namespace,),
        )
        return [row[0] for row in rows]

    def citing(self, namespace: str, target: str) -> list[RevisionKey]:
        rows = self._all(
            "SELECT record_id, revision FROM citing WHERE namespace = ? AND target = ?",
            (namespace, target),
        )
        return sorted((row[0], int(row[1])) for row in rows)

    def pending_on(self, namespace: str, event_id: str) -> list[RevisionKey]:
        rows = self._all(
            "SELECT record_id, revision FROM pending WHERE namespace = ? AND event_id = ?",
            (namespace, event_id),
        )
        return sorted((row[0], int(row[1])) for row in rows)

    def pending_on_any(self, namespace: str, event_ids: Collection[str]) -> list[RevisionKey]:
        found: list[RevisionKey] = []
        for chunk in self._chunks(event_ids):
            rows = self._all(
                "SELECT DISTINCT record_id, revision FROM pending WHERE namespace = ? "
                f"AND event_id IN ({self._marks(len(chunk))})",
                (namespace, *chunk),
            )
            found.extend((row[0], int(row[1])) for row in rows)
        return sorted(set(found))

    def citing_any(self, namespace: str, targets: Collection[str]) -> list[tuple[str, RevisionKey]]:
        found: list[tuple[str, RevisionKey]] = []
        for chunk in self._chunks(targets):
            rows = self._all(
                "SELECT target, record_id, revision FROM citing WHERE namespace = ? "
                f"AND target IN ({self._marks(len(chunk))})",
                (namespace, *chunk),
            )
            found.extend((row[0], (row[1], int(row[2]))) for row in rows)
        return sorted(found)

    # -- keyed reads (SPEC §7) ----------------------------------------------------------
    _PAGES = (8, 64, 512)  # a keyed read usually stops at its first candidate

    def _rank_by_key(self, namespace: str, nodes: Iterable[RevisionNode]) -> None:
        """Index keyed revisions in the order a view ranks them, once per frontier tree."""
        rows = [
            (namespace, node.key, tree, depth, node.seq, node.record_id, node.revision)
            for node in nodes
            if node.key is not None
            for tree, depth in [(f.tree, f.depth) for f in node.gate.frontiers] or [("", -1)]
        ]
        self._many(
            "INSERT INTO key_frontiers (namespace, key_name, tree, depth, seq, record_id, "
            "revision) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            rows,
        )

    def _backfill_keyed_reads(self) -> None:
        """retraction_targets for the retractions already written: their targets are JSON,
        which the portable SQL of a migration cannot unpack."""
        for namespace, retraction_id, targets in self._all(
            "SELECT namespace, id, targets FROM retractions"
        ):
            self._many(
                "INSERT INTO retraction_targets (namespace, target, id) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                [(namespace, t, retraction_id) for t in dict.fromkeys(codec.loads(targets))],
            )

    def key_candidates(
        self, namespace: str, key: str, tree: str, depth: int, cross_tree: bool = False
    ) -> Iterator[RevisionNode]:
        columns = ", ".join("r." + c for c in codec.REVISION_COLUMNS.split(", "))
        source = (
            f"SELECT {columns}, k.depth FROM key_frontiers k JOIN revisions r "
            "ON r.namespace = k.namespace AND r.record_id = k.record_id "
            "AND r.revision = k.revision WHERE k.namespace = ? AND k.key_name = ? "
        )
        cursor = (depth, 2**62)
        for size in self._pages():
            rows = self._all(  # (depth, seq) < cursor: the next page, on the index
                source + "AND k.tree = ? AND (k.depth, k.seq) < (?, ?) "
                "ORDER BY k.depth DESC, k.seq DESC LIMIT ?",
                (namespace, key, tree, cursor[0], cursor[1], size),
            )
            for row in rows:
                node = codec.revision_node(tuple(row[:-1]))
                cursor = (int(row[-1]), node.seq)
                yield node
            if len(rows) < size:
                break
        below, seen = 2**62, set()
        others = ("<>", tree) if cross_tree else ("=", "")  # one-tree: no frontier at all
        for size in self._pages():
            rows = self._all(  # without a frontier in ``tree``: arrival order, latest first
                source + f"AND k.tree {others[0]} ? AND k.seq < ? ORDER BY k.seq DESC LIMIT ?",
                (namespace, key, others[1], below, size),
            )
            for row in rows:
                node = codec.revision_node(tuple(row[:-1]))
                below = node.seq
                if (node.record_id, node.revision) not in seen:
                    seen.add((node.record_id, node.revision))
                    if node.gate.frontier_in(tree) is None:
                        yield node
            if len(rows) < size:
                break

    def _pages(self) -> Iterator[int]:
        return itertools.chain(self._PAGES, itertools.repeat(self._PAGES[-1]))

    def revisions_newest_first(self, namespace: str, record_id: str) -> Iterator[RevisionNode]:
        cached = self._revisions.get((namespace, record_id))
        if cached is not None:
            yield from reversed(list(cached))
            return
        below = 2**31
        for size in self._pages():
            rows = self._all(
                f"SELECT {codec.REVISION_COLUMNS} FROM revisions WHERE namespace = ? "
                "AND record_id = ? AND revision < ? ORDER BY revision DESC LIMIT ?",
                (namespace, record_id, below, size),
            )
            for row in rows:
                node = codec.revision_node(row)
                below = node.revision
                yield node
            if len(rows) < size:
                return

    def retractions_naming(
        self, namespace: str, record_id: str, key: str | None
    ) -> list[RetractionNode]:
        rows = self._all(  # two lookups, each on its index (an OR would scan the namespace)
            f"SELECT {self._RETRACTION_COLUMNS} FROM retractions WHERE namespace = ? "
            "AND id IN (SELECT id FROM retraction_targets WHERE namespace = ? AND target = ?)",
            (namespace, namespace, record_id),
        )
        if key is not None:
            rows += self._all(
                f"SELECT {self._RETRACTION_COLUMNS} FROM retractions WHERE namespace = ? "
                "AND key_name = ?",
                (namespace, key),
            )
        found = {row[0]: codec.retraction_node(row) for row in rows}
        return sorted(found.values(), key=lambda node: node.seq)

    # -- relations ---------------------------------------------------------------------
    def add_supersede(self, namespace: str, new_id: str, old_id: str) -> None:
        self._run(
            "INSERT INTO supersedes (namespace, old_id, new_id, seq) VALUES (?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (namespace, old_id, new_id, self._current_seq(namespace)),
        )

    def _current_seq(self, namespace: str) -> int:
        """The last arrival number drawn, without drawing one (every backend numbers alike)."""
        if namespace in self._seqs:
            return self._seqs[namespace]
        row = self._one("SELECT seq FROM namespaces WHERE namespace = ?", (namespace,))
        return int(row[0]) if row else 0

    def superseders(self, namespace: str, old_ids: Collection[str]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for chunk in self._chunks(old_ids):
            rows = self._all(
                "SELECT old_id, new_id FROM supersedes WHERE namespace = ? "
                f"AND old_id IN ({self._marks(len(chunk))}) ORDER BY seq",
                (namespace, *chunk),
            )
            for old, new in rows:
                found.setdefault(old, []).append(new)
        return found

    def superseded_by(self, namespace: str, new_id: str) -> list[str]:
        rows = self._all(
            "SELECT old_id FROM supersedes WHERE namespace = ? AND new_id = ? ORDER BY seq",
            (namespace, new_id),
        )
        return [row[0] for row in rows]

    def put_retraction(self, namespace: str, node: RetractionNode) -> None:
        self._run(
            "INSERT INTO retractions (namespace, id, scope, targets, key_name, key_scope, seq) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                namespace, node.id, node.scope, codec.dumps(list(node.targets)), node.key,
                node.key_scope, node.seq,
            ),
        )  # fmt: skip
        self._many(
            "INSERT INTO retraction_targets (namespace, target, id) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [(namespace, target, node.id) for target in dict.fromkeys(node.targets)],
        )

    _RETRACTION_COLUMNS = "id, scope, targets, key_name, key_scope, seq"

    def retractions(self, namespace: str, ids: Collection[str]) -> dict[str, RetractionNode]:
        found: dict[str, RetractionNode] = {}
        for chunk in self._chunks(ids):
            rows = self._all(
                f"SELECT {self._RETRACTION_COLUMNS} FROM retractions WHERE namespace = ? "
                f"AND id IN ({self._marks(len(chunk))})",
                (namespace, *chunk),
            )
            for row in rows:
                found[row[0]] = codec.retraction_node(row)
        return found

    def tree_retractions(self, namespace: str) -> list[RetractionNode]:
        rows = self._all(
            f"SELECT {self._RETRACTION_COLUMNS} FROM retractions WHERE namespace = ? "
            "AND scope = ? ORDER BY seq",
            (namespace, TREE),
        )
        return [codec.retraction_node(row) for row in rows]

    # -- corrections -------------------------------------------------------------------
    def set_status(self, namespace: str, item_id: str, status: str | None) -> None:
        if status is None:
            self._run("DELETE FROM statuses WHERE namespace = ? AND id = ?", (namespace, item_id))
        else:
            self._run(
                "INSERT INTO statuses (namespace, id, status) VALUES (?, ?, ?) "
                "ON CONFLICT (namespace, id) DO UPDATE SET status = excluded.status",
                (namespace, item_id, status),
            )

    def statuses(self, namespace: str, ids: Collection[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for chunk in self._chunks(ids):
            rows = self._all(
                "SELECT id, status FROM statuses WHERE namespace = ? "
                f"AND id IN ({self._marks(len(chunk))})",
                (namespace, *chunk),
            )
            found.update({row[0]: row[1] for row in rows})
        return found

    def erase_content(
        self, namespace: str, event_ids: Collection[str], record_ids: Collection[str]
    ) -> None:
        for chunk in self._chunks(event_ids):
            self._run(
                "UPDATE events SET content = '', meta = '{}' WHERE namespace = ? "
                f"AND id IN ({self._marks(len(chunk))})",
                (namespace, *chunk),
            )
        for chunk in self._chunks(record_ids):
            marks = self._marks(len(chunk))
            self._run(
                "UPDATE revisions SET content = '', meta = '{}', key_name = NULL, "
                f"key_scope = NULL WHERE namespace = ? AND record_id IN ({marks})",
                (namespace, *chunk),
            )
            for table in ("search_docs", "vectors", "repairs", "key_frontiers"):
                self._run(
                    f"DELETE FROM {table} WHERE namespace = ? AND record_id IN ({marks})",
                    (namespace, *chunk),
                )
        self._forget()
        codec.forget()

    def records_with_key(self, namespace: str, key: str) -> list[str]:
        rows = self._all(
            "SELECT DISTINCT record_id FROM revisions WHERE namespace = ? AND key_name = ?",
            (namespace, key),
        )
        return sorted(str(row[0]) for row in rows)

    # -- repair queue ------------------------------------------------------------------
    def put_repair(self, namespace: str, item: RepairItem) -> None:
        self._run(
            "INSERT INTO repairs (namespace, record_id, cause, revision, reason, anchor, seq, "
            "attempts, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (namespace, record_id, cause) DO UPDATE SET "
            "revision = excluded.revision, reason = excluded.reason, anchor = excluded.anchor, "
            "seq = excluded.seq, attempts = excluded.attempts, last_error = excluded.last_error",
            (
                namespace, item.record_id, item.cause, item.revision, item.reason, item.anchor,
                item.seq, item.attempts, item.last_error,
            ),
        )  # fmt: skip

    def repairs(self, namespace: str) -> list[RepairItem]:
        rows = self._all(
            "SELECT record_id, revision, reason, cause, anchor, seq, attempts, last_error "
            "FROM repairs WHERE namespace = ? ORDER BY seq, record_id, cause",
            (namespace,),
        )
        return [
            RepairItem(str(r[0]), int(r[1]), str(r[2]), str(r[3]), r[4], int(r[5]), int(r[6]), r[7])
            for r in rows
        ]

    def remove_repairs(
        self, namespace: str, *, record_id: str | None = None, cause: str | None = None
    ) -> None:
        where, params = ["namespace = ?"], [namespace]
        for column, value in (("record_id", record_id), ("cause", cause)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        self._run(f"DELETE FROM repairs WHERE {' AND '.join(where)}", params)

    def bump_counter(self, namespace: str, name: str) -> None:
        self._run(
            "INSERT INTO counters (namespace, name, value) VALUES (?, ?, 1) "
            "ON CONFLICT (namespace, name) DO UPDATE SET value = counters.value + 1",
            (namespace, name),
        )

    def counters(self, namespace: str) -> dict[str, int]:
        rows = self._all("SELECT name, value FROM counters WHERE namespace = ?", (namespace,))
        return {str(name): int(value) for name, value in rows}

    # -- search index ------------------------------------------------------------------
    def put_search(
        self, namespace: str, key: RevisionKey, text: str, vector: Sequence[float] | None
    ) -> None:
        record_id, revision = key
        self._run(
            "INSERT INTO search_docs (namespace, record_id, revision, search_text) "
            "VALUES (?, ?, ?, ?)",
            (namespace, record_id, revision, text),
        )
        if vector is not None:
            self._run(
                "INSERT INTO vectors (namespace, record_id, revision, vector) VALUES (?, ?, ?, ?)",
                (namespace, record_id, revision, codec.pack_vector(vector)),
            )

    def vectors(
        self, namespace: str, keys: Collection[RevisionKey]
    ) -> dict[RevisionKey, list[float]]:
        wanted = set(keys)
        found: dict[RevisionKey, list[float]] = {}
        for chunk in self._chunks(sorted({record_id for record_id, _ in wanted})):
            rows = self._all(
                "SELECT record_id, revision, vector FROM vectors WHERE namespace = ? "
                f"AND record_id IN ({self._marks(len(chunk))})",
                (namespace, *chunk),
            )
            for record_id, revision, blob in rows:
                key = (str(record_id), int(revision))
                if key in wanted:
                    found[key] = codec.unpack_vector(bytes(blob))
        return found

    def _term_condition(self, term: str) -> tuple[str, list[Any]]:
        """SQL that is true when ``search_text`` contains ``term``, with its parameters."""
        return "instr(search_text, ?) > 0", [term]

    def lexical_match(self, namespace: str, terms: Sequence[str]) -> list[tuple[RevisionKey, str]]:
        if not terms:
            return []
        conditions, params = [], [namespace]
        for term in dict.fromkeys(terms):
            condition, values = self._term_condition(term)
            conditions.append(condition)
            params.extend(values)
        rows = self._all(
            "SELECT record_id, revision, search_text FROM search_docs WHERE namespace = ? "
            f"AND ({' OR '.join(conditions)}) ORDER BY record_id, revision",
            params,
        )
        return [((str(r[0]), int(r[1])), str(r[2])) for r in rows]

    # -- deliveries --------------------------------------------------------------------
    def add_delivery(self, namespace: str, delivery: Delivery) -> None:
        self._run(
            "INSERT INTO deliveries (namespace, session, seq, anchor, time, items) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                namespace, delivery.session, delivery.seq, delivery.anchor, delivery.time,
                codec.dumps([list(item) for item in delivery.items]),
            ),
        )  # fmt: skip

    def deliveries(self, namespace: str, session: str) -> list[Delivery]:
        rows = self._all(
            "SELECT seq, anchor, time, items FROM deliveries WHERE namespace = ? "
            "AND session = ? ORDER BY seq",
            (namespace, session),
        )
        return [
            Delivery(
                session, int(seq), anchor, float(when),
                tuple((str(i), int(r)) for i, r in codec.loads(items)),
            )
            for seq, anchor, when, items in rows
        ]  # fmt: skip

    # -- service keys ------------------------------------------------------------------
    def put_api_key(
        self, key_id: str, secret_hash: str, tenant: str, namespaces: list[str], created: float
    ) -> None:
        with self.transaction(None):
            self._run(
                "INSERT INTO api_keys (key_id, secret_hash, tenant, namespaces, created) "
                "VALUES (?, ?, ?, ?, ?)",
                (key_id, secret_hash, tenant, codec.dumps(list(namespaces)), created),
            )

    def _api_key_rows(self, key_id: str | None) -> list[dict[str, Any]]:
        where, params = ("WHERE key_id = ?", (key_id,)) if key_id is not None else ("", ())
        with self.reading("") if self._depth == 0 else nullcontext():
            rows = self._all(
                "SELECT key_id, secret_hash, tenant, namespaces, created FROM api_keys "
                f"{where} ORDER BY created, key_id",
                params,
            )
        return [
            {
                "key_id": r[0], "secret_hash": r[1], "tenant": r[2],
                "namespaces": list(codec.loads(r[3])), "created": float(r[4]),
            }
            for r in rows
        ]  # fmt: skip

    def get_api_key(self, key_id: str) -> dict[str, Any] | None:
        rows = self._api_key_rows(key_id)
        return rows[0] if rows else None

    def list_api_keys(self) -> list[dict[str, Any]]:
        return self._api_key_rows(None)

    def delete_api_key(self, key_id: str) -> bool:
        with self.transaction(None):
            found = self._one("SELECT 1 FROM api_keys WHERE key_id = ?", (key_id,)) is not None
            self._run("DELETE FROM api_keys WHERE key_id = ?", (key_id,))
        return found

    def scrub(self) -> None:
        """Updated rows are rewritten in place by the database; a backend with a log of old
        page images (SQLite's WAL) overrides this to flush it."""

    # -- audit and gauges --------------------------------------------------------------
    def append_audit(self, entry: AuditEntry) -> None:
        self._run(
            "INSERT INTO audit (namespace, seq, time, op, ids, actor, reason, revision) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                entry.namespace, entry.seq, entry.time, entry.op, codec.dumps(list(entry.ids)),
                entry.actor, entry.reason, entry.revision,
            ),
        )  # fmt: skip
        self._many(
            "INSERT INTO audit_ids (namespace, id, seq) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [(entry.namespace, item, entry.seq) for item in dict.fromkeys(entry.ids)],
        )

    def audit(
        self,
        namespace: str,
        *,
        id: str | None = None,
        op: str | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> list[AuditEntry]:
        where = ["a.namespace = ?"]
        params: list[Any] = [namespace]
        source = "audit a"
        if id is not None:
            source = "audit_ids i JOIN audit a ON a.namespace = i.namespace AND a.seq = i.seq"
            where.append("i.id = ?")
            params.append(id)
        if op is not None:
            where.append("a.op = ?")
            params.append(op)
        if since is not None:
            where.append("a.time >= ?")
            params.append(since)
        if until is not None:
            where.append("a.time <= ?")
            params.append(until)
        rows = self._all(
            "SELECT a.seq, a.time, a.op, a.ids, a.actor, a.reason, a.revision "
            f"FROM {source} WHERE {' AND '.join(where)} ORDER BY a.seq",
            params,
        )
        return [codec.audit_entry(namespace, row) for row in rows]

    def gauges(self, namespace: str) -> dict[str, int]:
        def count(text: str) -> int:
            row = self._one(text, (namespace,))
            return int(row[0]) if row and row[0] is not None else 0

        revisions = "SELECT COUNT(*) FROM revisions WHERE namespace = ?"
        statuses = "SELECT COUNT(*) FROM statuses WHERE namespace = ? AND status = "
        return {
            "events": count("SELECT COUNT(*) FROM events WHERE namespace = ?"),
            "detached_events": count(
                "SELECT COUNT(*) FROM events WHERE namespace = ? AND attached = 0"
            ),
            "trees": count(
                "SELECT COUNT(DISTINCT tree) FROM events WHERE namespace = ? AND tree IS NOT NULL"
            ),
            "records": count(revisions + " AND revision = 1"),
            "revisions": count(revisions),
            "legacy_revisions": count(revisions + " AND legacy = 1"),
            "unknown_source_revisions": count(revisions + " AND unknown_sources = 1"),
            "detached_source_revisions": count(revisions + " AND detached_sources = 1"),
            "inconsistent_revisions": count(revisions + " AND consistent = 0"),
            "retractions": count("SELECT COUNT(*) FROM retractions WHERE namespace = ?"),
            "withdrawn": count(statuses + "'withdrawn'"),
            "erased": count(statuses + "'erased'"),
        }
