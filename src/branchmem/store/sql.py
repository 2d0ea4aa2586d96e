"""The engine's state in SQL: events, revisions and their indexes, relations, corrections.

Shared by SQLite and PostgreSQL; ``SQLSession`` below it runs the statements and owns the
transactions, the ``sql*.py`` mixins named for them keep the side tables.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from ..model import RETRACTION_KIND
from ..provenance import RevisionNode
from ..questions import PAGE_SIZE, Facts, IndexTooLarge, Questions, TreeIndex
from ..retraction import TREE, RetractionNode
from ..topology import EventNode
from ..validation import check_text
from . import codec
from .base import TOMBSTONE, MessageRow, PathMessage, RevisionKey, Store
from .keys import KeyStore
from .schema import COMPACT_STORAGE_VERSION
from .sqlapikeys import SQLApiKeys
from .sqlaudit import SQLAudit
from .sqlcleanup import SQLEraseCleanup
from .sqldeliveries import SQLDeliveries
from .sqlgauges import SQLGauges
from .sqlrepairs import SQLRepairs
from .sqlvectors import SQLVectors


def scope_tag(scope: str | None) -> str:
    """A key scope as ``tree_keys`` stores it: any string is a scope, so None is '-'."""
    return "-" if scope is None else "+" + scope


class SQLStore(
    SQLRepairs, SQLGauges, SQLVectors, SQLDeliveries, SQLAudit, SQLEraseCleanup, SQLApiKeys,
    Store, KeyStore,
):  # fmt: skip
    """A ``Store`` over a DB-API connection; subclasses choose the database."""

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
            event_rows, rows, revision_rows = self._all_together(
                [
                    (
                        f"SELECT {codec.EVENT_COLUMNS} FROM events WHERE namespace = ? "
                        f"AND id IN ({marks})",
                        (namespace, *chunk),
                    ),
                    (  # no ORDER BY: a planner may answer it by scanning seq order
                        "SELECT id, parent, seq FROM events WHERE namespace = ? "
                        f"AND parent IN ({marks})",
                        (namespace, *chunk),
                    ),
                    (
                        f"SELECT {codec.REVISION_COLUMNS} FROM revisions WHERE namespace = ? "
                        f"AND record_id IN ({marks}) ORDER BY record_id, revision",
                        (namespace, *chunk),
                    ),
                ]
            )
            found = {row[0]: codec.event_node(row) for row in event_rows}
            children: dict[str, list[str]] = {i: [] for i in chunk}
            for child, parent, _ in sorted(rows, key=lambda row: int(row[2])):
                children[parent].append(child)
            records: dict[str, list[RevisionNode]] = {i: [] for i in chunk}
            for row in revision_rows:
                records[row[0]].append(codec.revision_node(row))
            for item in chunk:
                self._events[(namespace, item)] = found.get(item)
                self._children[(namespace, item)] = children[item]
                self._revisions[(namespace, item)] = records[item]
        self._load_steps(namespace, self._steps_up(namespace, ids))

    def _steps_up(self, namespace: str, ids: Iterable[str]) -> list[str]:
        """The jump targets and parents of cached events that are not cached yet: the first
        step of every ancestor test from them (merging two sources' frontiers, placing a
        child), fetched with them instead of one round trip each."""
        steps: dict[str, None] = {}
        for item in ids:
            node = self._events.get((namespace, item))
            if node is not None:
                for step in (node.jump, node.parent):
                    if step is not None and (namespace, step) not in self._events:
                        steps[step] = None
        return list(steps)

    def _load_steps(self, namespace: str, steps: Collection[str]) -> None:
        """Cache these events and those one step (jump or parent) above them, in one query:
        an ancestor test from a batch's events mostly takes two steps (on the chat-like
        histories of bench/storage.py, 10,000 records: 127 single look-ups with one step
        fetched, 23 with two)."""
        columns = ", ".join("e." + c for c in codec.EVENT_COLUMNS.split(", "))
        for chunk in self._chunks(steps):
            marks = self._marks(len(chunk))
            rows = self._all(
                f"SELECT {codec.EVENT_COLUMNS} FROM events WHERE namespace = ? "
                f"AND id IN ({marks}) UNION ALL SELECT {columns} FROM events s "
                "JOIN events e ON e.namespace = s.namespace AND e.id IN (s.jump, s.parent) "
                f"WHERE s.namespace = ? AND s.id IN ({marks})",
                (namespace, *chunk, namespace, *chunk),
            )
            found = {row[0]: codec.event_node(row) for row in rows}
            for item in chunk:
                self._events[(namespace, item)] = found.pop(item, None)
            for item, node in found.items():  # a node cached already may be newer
                self._events.setdefault((namespace, item), node)

    _NEW_EVENT = (
        f"INSERT INTO events (namespace, {codec.EVENT_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    _PUT_EVENT = (
        _NEW_EVENT + " ON CONFLICT (namespace, id) DO UPDATE SET tree = excluded.tree, "
        "attached = excluded.attached, depth = excluded.depth, jump = excluded.jump"
    )

    def put_event(self, namespace: str, node: EventNode) -> None:
        # Held until the call's next statement: a batch of events is one multi-row insert.
        # An event the call knows is absent (looked up, or held new) needs no upsert.
        key, row = (namespace, node.id), (namespace, *codec.event_row(node))
        new = key in self._held.get(self._NEW_EVENT, ()) or (
            key in self._events and self._events[key] is None
        )
        self._hold(self._NEW_EVENT if new else self._PUT_EVENT, key, row)
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

    def transcript(self, namespace: str, event_id: str, limit: int) -> list[PathMessage]:
        # Only the columns a prompt shows, carried up the recursion (no second join), and the
        # statuses joined in: one statement per page, about half the time of whole events.
        rows = self._all(
            "WITH RECURSIVE up(id, parent, role, content, n) AS ("
            " SELECT id, parent, role, content, 0 FROM events WHERE namespace = ? AND id = ?"
            " UNION ALL SELECT e.id, e.parent, e.role, e.content, up.n + 1 FROM events e"
            " JOIN up ON e.namespace = ? AND e.id = up.parent WHERE up.n + 1 < ?)"
            " SELECT up.id, up.parent, up.role, up.content, s.status FROM up"
            " LEFT JOIN statuses s ON s.namespace = ? AND s.id = up.id ORDER BY up.n",
            (namespace, event_id, namespace, limit, namespace),
        )
        return [
            MessageRow(item, parent, role, content if status is None else "")
            for item, parent, role, content, status in rows
        ]

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
        if self._depth == 0:
            rows = self._all("SELECT tree, event_id FROM heads WHERE namespace = ?", (namespace,))
            return {tree: event_id for tree, event_id in rows}
        columns = ", ".join("e." + c for c in codec.EVENT_COLUMNS.split(", "))
        rows = self._all(  # within a call, the head events too: a cross-tree read asks next
            f"SELECT h.tree, h.event_id, {columns} FROM heads h LEFT JOIN events e "
            "ON e.namespace = h.namespace AND e.id = h.event_id WHERE h.namespace = ?",
            (namespace,),
        )
        for row in rows:
            node = None if row[2] is None else codec.event_node(tuple(row[2:]))
            self._events.setdefault((namespace, row[1]), node)
        return {row[0]: row[1] for row in rows}

    def namespaces(self) -> list[str]:
        rows = self._all("SELECT namespace FROM namespaces WHERE seq > 0 ORDER BY namespace")
        return [row[0] for row in rows]

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
        check_text(node.kind, f"record {node.record_id!r}: kind")
        check_text(node.content, f"record {node.record_id!r}: content")
        replaced = self._stored_revision(namespace, node.record_id, node.revision)
        cached = self._revisions.get((namespace, node.record_id))
        if cached is not None:
            if node.revision <= len(cached):
                cached[node.revision - 1] = node
            else:
                cached.append(node)
        key = (namespace, node.record_id, node.revision)
        if replaced is not None:
            self._unindex(namespace, replaced)
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
                "INSERT INTO frontiers (namespace, event_id, record_id, revision, cited) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                _frontier_rows(namespace, node),
            )
        else:
            self._run("INSERT INTO ungated (namespace, record_id, revision) VALUES (?, ?, ?)", key)
        self._many(
            "INSERT INTO pending (namespace, event_id, record_id, revision) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(namespace, e, node.record_id, node.revision) for e in sorted(gate.detached)],
        )
        self._many(
            "INSERT INTO citing (namespace, target, record_id, revision) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            _citing_rows(namespace, node),
        )
        self._rank_by_key(namespace, [node])

    def _stored_revision(
        self, namespace: str, record_id: str, revision: int
    ) -> RevisionNode | None:
        """The revision as stored before a write replaces it (None: a new one)."""
        cached = self._revisions.get((namespace, record_id))
        if cached is not None:
            return cached[revision - 1] if revision <= len(cached) else None
        row = self._one(
            f"SELECT {codec.REVISION_COLUMNS} FROM revisions WHERE namespace = ? "
            "AND record_id = ? AND revision = ?",
            (namespace, record_id, revision),
        )
        return None if row is None else codec.revision_node(row)

    def _unindex(self, namespace: str, node: RevisionNode) -> None:
        """Delete a replaced revision's index rows by their whole key: each is derived from
        the revision exactly as ``put_revision`` derived it, so no index by revision is needed."""
        key = (namespace, node.record_id, node.revision)
        for table, column, values in (
            ("frontiers", "event_id", [f.event for f in node.gate.frontiers]),
            ("pending", "event_id", sorted(node.gate.detached)),
            ("citing", "target", sorted(_cited(node))),
        ):
            self._many(
                f"DELETE FROM {table} WHERE namespace = ? AND {column} = ? AND record_id = ? "
                "AND revision = ?",
                [(namespace, value, node.record_id, node.revision) for value in values],
            )
        self._run("DELETE FROM ungated WHERE namespace = ? AND record_id = ? AND revision = ?", key)
        self._unrank(namespace, [node])

    def _unrank(self, namespace: str, nodes: Sequence[RevisionNode]) -> None:
        """Delete the rank rows of revisions as stored, by whole key (``_rank_by_key``)."""
        self._many(
            "DELETE FROM key_frontiers WHERE namespace = ? AND key_name = ? AND tree = ? "
            "AND depth = ? AND seq = ? AND record_id = ? AND revision = ?",
            [row for node in nodes for row in _key_rows(namespace, node)],
        )
        self._many(
            "DELETE FROM unkeyed_frontiers WHERE namespace = ? AND tree = ? AND depth = ? "
            "AND seq = ? AND record_id = ? AND revision = ?",
            [row for node in nodes for row in _unkeyed_rows(namespace, node)],
        )

    def put_revisions(self, namespace: str, nodes: Sequence[RevisionNode]) -> None:
        """New revisions (``add_records``) with one statement per table, not per revision."""
        fresh: list[RevisionNode] = []
        for node in nodes:
            cached = self._revisions.get((namespace, node.record_id))
            if cached is None or node.revision != len(cached) + 1:
                self.put_revision(namespace, node)  # a replacement: its old index rows go
                continue
            check_text(node.kind, f"record {node.record_id!r}: kind")
            check_text(node.content, f"record {node.record_id!r}: content")
            cached.append(node)
            fresh.append(node)
        if not fresh:
            return
        self._hold_rows(  # held: the batch's next write-out joins the same statements
            f"INSERT INTO revisions (namespace, {codec.REVISION_COLUMNS}, legacy, "
            "unknown_sources, detached_sources, consistent) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(namespace, *codec.revision_row(node)) for node in fresh],
            key_width=3,
        )
        self._hold_rows(
            "INSERT INTO frontiers (namespace, event_id, record_id, revision, cited) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [row for node in fresh for row in _frontier_rows(namespace, node)],
        )
        self._hold_rows(
            "INSERT INTO ungated (namespace, record_id, revision) VALUES (?, ?, ?)",
            [
                (namespace, node.record_id, node.revision)
                for node in fresh
                if not node.gate.frontiers
            ],
        )
        self._hold_rows(
            "INSERT INTO pending (namespace, event_id, record_id, revision) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [
                (namespace, e, node.record_id, node.revision)
                for node in fresh
                for e in sorted(node.gate.detached)
            ],
        )
        self._hold_rows(
            "INSERT INTO citing (namespace, target, record_id, revision) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [row for node in fresh for row in _citing_rows(namespace, node)],
        )
        self._rank_by_key(namespace, fresh, hold=True)

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

    _UNGATED = (
        f"SELECT {', '.join('r.' + c for c in codec.REVISION_COLUMNS.split(', '))} "
        "FROM ungated x JOIN revisions r ON r.namespace = x.namespace "
        "AND r.record_id = x.record_id AND r.revision = x.revision WHERE x.namespace = ?"
    )

    def ungated_revisions(self, namespace: str) -> list[RevisionNode]:
        rows = self._all(self._UNGATED, (namespace,))
        return _by_id(codec.revision_node(row) for row in rows)

    def record_ids(self, namespace: str) -> list[str]:
        rows = self._all(
            "SELECT record_id FROM revisions WHERE namespace = ? AND revision = 1 ORDER BY seq",
            (namespace,),
        )
        return [row[0] for row in rows]

    def citing(self, namespace: str, target: str) -> list[RevisionKey]:
        return sorted({key for _, key in self.citing_any(namespace, [target])})

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
        found: set[tuple[str, RevisionKey]] = set()
        for chunk in self._chunks(targets):
            marks = self._marks(len(chunk))
            cited, frontier = self._all_together(
                [
                    (
                        "SELECT target, record_id, revision FROM citing WHERE namespace = ? "
                        f"AND target IN ({marks})",
                        (namespace, *chunk),
                    ),
                    (  # citations that are their revision's frontier too
                        "SELECT event_id, record_id, revision FROM frontiers WHERE namespace = ? "
                        f"AND event_id IN ({marks}) AND cited = 1",
                        (namespace, *chunk),
                    ),
                ]
            )
            found.update((row[0], (row[1], int(row[2]))) for row in cited + frontier)
        return sorted(found)

    # -- keyed reads (SPEC §7) ----------------------------------------------------------
    _PAGES = (8, 64, 512)  # a keyed read usually stops at its first candidate

    def _rank_by_key(
        self, namespace: str, nodes: Sequence[RevisionNode], *, hold: bool = False
    ) -> None:
        """Index keyed revisions in the order a view ranks them, once per frontier tree, and
        each tree's groups and unkeyed revisions (the ``TreeIndex`` ``answer`` gives);
        ``hold``: a batch's rows, written with the batch's next write-out."""
        write = self._hold_rows if hold else self._many
        write(
            "INSERT INTO key_frontiers (namespace, key_name, tree, depth, seq, record_id, "
            "revision) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [row for node in nodes for row in _key_rows(namespace, node)],
        )
        groups = {
            (namespace, tree, node.key, scope_tag(node.scope))
            for node in nodes
            if node.key is not None
            for tree in [f.tree for f in node.gate.frontiers] or [""]
        }
        write(
            "INSERT INTO tree_keys (namespace, tree, key_name, scope_tag) VALUES (?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            sorted(groups),
        )
        write(
            "INSERT INTO unkeyed_frontiers (namespace, tree, depth, seq, record_id, revision) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [row for node in nodes for row in _unkeyed_rows(namespace, node)],
        )

    def _index_statements(
        self, namespace: str, tree: str, limit: int
    ) -> list[tuple[str, Sequence[object]]]:
        """The three statements of a tree's index (groups, unkeyed, ungated), read up to one
        entry past ``limit`` to tell "too large"."""
        bound = min(limit, 2**62) + 1
        columns = ", ".join("r." + c for c in codec.REVISION_COLUMNS.split(", "))
        return [
            (
                "SELECT DISTINCT key_name, scope_tag FROM tree_keys WHERE namespace = ? "
                "AND tree IN (?, '') ORDER BY key_name, scope_tag LIMIT ?",
                (namespace, tree, bound),
            ),
            (
                f"SELECT {columns} FROM unkeyed_frontiers u JOIN revisions r "
                "ON r.namespace = u.namespace AND r.record_id = u.record_id "
                "AND r.revision = u.revision WHERE u.namespace = ? AND u.tree = ? "
                # the rule's ranking (rules.rank_key): deepest frontier first, then latest seq
                "ORDER BY u.depth DESC, u.seq DESC LIMIT ?",
                (namespace, tree, bound),
            ),
            (self._UNGATED, (namespace,)),
        ]

    @staticmethod
    def _tree_index_of(
        tree: str,
        limit: int,
        rows: list[tuple[object, ...]],
        unkeyed: list[Any],
        ungated: list[Any],
    ) -> TreeIndex | IndexTooLarge:
        if len(rows) + len(unkeyed) > min(limit, 2**62):
            return IndexTooLarge(tree, limit)
        groups = tuple((str(k), None if t == "-" else str(t)[1:]) for k, t in rows)
        return TreeIndex(
            groups=groups,
            unkeyed=(
                *(codec.revision_node(row) for row in unkeyed),
                *_by_id(codec.revision_node(row) for row in ungated),
            ),
        )

    def _tree_index(self, namespace: str, tree: str, limit: int) -> TreeIndex | IndexTooLarge:
        """A tree's index in one round trip."""
        rows, unkeyed, ungated = self._all_together(self._index_statements(namespace, tree, limit))
        return self._tree_index_of(tree, limit, rows, unkeyed, ungated)

    def _key_retractions(self, namespace: str, key: str) -> list[RetractionNode]:
        """The retractions of ``key``, by seq (none read where a candidate's facts said so)."""
        if (namespace, key) in self._unretracted_keys:
            return []
        rows = self._all(
            f"SELECT {self._RETRACTION_COLUMNS} FROM retractions WHERE namespace = ? "
            "AND key_name = ?",
            (namespace, key),
        )
        return sorted((codec.retraction_node(row) for row in rows), key=lambda node: node.seq)

    def _page_statements(
        self, namespace: str, keys: list[str], tree: str, depth: int, size: int
    ) -> list[tuple[str, Sequence[object]]]:
        """Statements whose rows are (asked key, revision columns, depth), in rank order per
        key: the first page of each key's candidates in ``tree``. Here one statement a key."""
        head = "SELECT ?, " + self._KEY_CANDIDATES.removeprefix("SELECT ")
        return [
            (
                head + "AND k.tree = ? AND (k.depth, k.seq) < (?, ?) "
                # the rule's ranking (rules.rank_key): deepest frontier first, then latest seq
                "ORDER BY k.depth DESC, k.seq DESC LIMIT ?",
                (key, namespace, key, tree, depth, 2**62, size),
            )
            for key in keys
        ]

    # The newest revisions of a record a keyed read takes at once; older ones page in.
    NEWEST_REVISIONS = 8

    def answer(self, namespace: str, questions: Questions) -> Facts:
        """Every question in one round trip (PostgreSQL pipelines the statements)."""
        statements: list[tuple[str, Sequence[object]]] = []
        kinds: list[str] = []
        record_ids, event_ids = sorted(questions.records), sorted(questions.events)
        if questions.index_tree is not None:
            statements += self._index_statements(
                namespace, questions.index_tree, questions.index_limit
            )
            kinds += ["groups", "unkeyed", "ungated"]
        if questions.pages:
            paged = self._page_statements(
                namespace,
                sorted(questions.pages),
                questions.page_tree,
                questions.page_depth,
                PAGE_SIZE,
            )
            statements += paged
            kinds += ["pages"] * len(paged)
        retraction_columns = ", ".join("r." + c for c in self._RETRACTION_COLUMNS.split(", "))
        for chunk in self._chunks(record_ids):
            marks = self._marks(len(chunk))
            statements += [
                self._newest_revisions(namespace, chunk, self.NEWEST_REVISIONS),
                (
                    "SELECT old_id, new_id FROM supersedes WHERE namespace = ? "
                    f"AND old_id IN ({marks}) ORDER BY seq",
                    (namespace, *chunk),
                ),
                (
                    f"SELECT t.target, {retraction_columns} FROM retraction_targets t "
                    "JOIN retractions r ON r.namespace = t.namespace AND r.id = t.id "
                    f"WHERE t.namespace = ? AND t.target IN ({marks})",
                    (namespace, *chunk),
                ),
            ]
            kinds += ["revisions", "superseders", "retracting"]
        for chunk in self._chunks([*record_ids, *event_ids]):
            statements.append(
                (
                    "SELECT id, status FROM statuses WHERE namespace = ? "
                    f"AND id IN ({self._marks(len(chunk))})",
                    (namespace, *chunk),
                )
            )
            kinds.append("statuses")
        for chunk in self._chunks(sorted(questions.keys)):
            statements.append(
                (
                    f"SELECT key_name, {self._RETRACTION_COLUMNS} FROM retractions "
                    f"WHERE namespace = ? AND key_name IN ({self._marks(len(chunk))})",
                    (namespace, *chunk),
                )
            )
            kinds.append("retracting_key")
        for chunk in self._chunks(event_ids):
            statements.append(self._events_with_steps(namespace, chunk))
            kinds.append("events")
        facts = Facts()
        if not statements:
            return facts
        revisions: dict[str, list[RevisionNode]] = {}
        pages: dict[str, list[RevisionNode]] = {}
        results = self._all_together(statements)
        by_kind = dict(zip(kinds, results, strict=False))  # the index's three, once each
        for kind, rows in zip(kinds, results, strict=True):
            for row in rows:
                if kind == "revisions":
                    node = codec.revision_node(row)
                    revisions.setdefault(node.record_id, []).append(node)
                elif kind == "pages":
                    pages.setdefault(str(row[0]), []).append(codec.revision_node(tuple(row[1:-1])))
                elif kind == "superseders":
                    facts.superseders.setdefault(row[0], []).append(row[1])
                elif kind == "retracting":
                    facts.retracting.setdefault(row[0], []).append(
                        codec.retraction_node(tuple(row[1:]))
                    )
                elif kind == "retracting_key":
                    facts.retracting_key.setdefault(row[0], []).append(
                        codec.retraction_node(tuple(row[1:]))
                    )
                elif kind == "statuses":
                    facts.statuses[row[0]] = row[1]
                elif kind == "events":
                    facts.events.setdefault(row[0], codec.event_node(row))
        for record_id, nodes in revisions.items():
            facts.revisions[record_id] = tuple(sorted(nodes, key=lambda n: n.revision))
        facts.pages.update((key, tuple(page)) for key, page in pages.items())
        for found in (*facts.retracting.values(), *facts.retracting_key.values()):
            found.sort(key=lambda node: node.seq)
        if questions.index_tree is None:
            return facts
        index = self._tree_index_of(
            questions.index_tree,
            questions.index_limit,
            by_kind["groups"],
            by_kind["unkeyed"],
            by_kind["ungated"],
        )
        return replace(facts, tree_index=index)

    def _events_with_steps(
        self, namespace: str, ids: Sequence[str]
    ) -> tuple[str, Sequence[object]]:
        """The statement reading these events and those one step (jump, parent) above them:
        the asked ones first."""
        marks = self._marks(len(ids))
        columns = ", ".join("e." + c for c in codec.EVENT_COLUMNS.split(", "))
        return (
            f"SELECT {codec.EVENT_COLUMNS} FROM events WHERE namespace = ? "
            f"AND id IN ({marks}) UNION ALL SELECT {columns} FROM events s "
            "JOIN events e ON e.namespace = s.namespace AND e.id IN (s.jump, s.parent) "
            f"WHERE s.namespace = ? AND s.id IN ({marks})",
            (namespace, *ids, namespace, *ids),
        )

    def _newest_revisions(
        self, namespace: str, record_ids: Sequence[str], count: int
    ) -> tuple[str, Sequence[object]]:
        """The statement reading the newest ``count`` revisions of each record: a range on
        the primary key below each record's latest, not its whole history."""
        asked = ", ".join("(?)" for _ in record_ids)
        columns = ", ".join("r." + c for c in codec.REVISION_COLUMNS.split(", "))
        return (
            f"WITH asked(id) AS (VALUES {asked}) SELECT {columns} FROM asked "
            "JOIN revisions r ON r.namespace = ? AND r.record_id = asked.id "
            "AND r.revision > (SELECT MAX(m.revision) FROM revisions m "
            "WHERE m.namespace = ? AND m.record_id = asked.id) - ?",
            (*record_ids, namespace, namespace, count),
        )

    _KEY_CANDIDATES = (
        f"SELECT {', '.join('r.' + c for c in codec.REVISION_COLUMNS.split(', '))}, k.depth "
        "FROM key_frontiers k JOIN revisions r ON r.namespace = k.namespace "
        "AND r.record_id = k.record_id AND r.revision = k.revision "
        "WHERE k.namespace = ? AND k.key_name = ? "
    )

    # In a read snapshot each candidate comes with what deciding it asks next (its record's
    # status and latest revision number, whether anything supersedes or retracts it or its
    # key), kept for the snapshot (``_learn_candidate``): the usual winner then needs no
    # further statement about itself.
    _CANDIDATE_FACTS = (
        ", (SELECT s.status FROM statuses s WHERE s.namespace = ? AND s.id = r.record_id)"
        ", (SELECT MAX(m.revision) FROM revisions m WHERE m.namespace = ? "
        "AND m.record_id = r.record_id)"
        ", CASE WHEN EXISTS (SELECT 1 FROM supersedes p WHERE p.namespace = ? "
        "AND p.old_id = r.record_id) THEN 1 ELSE 0 END"
        ", CASE WHEN EXISTS (SELECT 1 FROM retraction_targets t WHERE t.namespace = ? "
        "AND t.target = r.record_id) THEN 1 ELSE 0 END"
        ", CASE WHEN EXISTS (SELECT 1 FROM retractions x WHERE x.namespace = ? "
        "AND x.key_name = ?) THEN 1 ELSE 0 END "
    )
    _FACT_COLUMNS = 5

    def _candidate_source(self, namespace: str, key: str) -> tuple[str, tuple[object, ...]]:
        """The candidates' SELECT up to its WHERE and its parameters: with facts in a read
        snapshot."""
        if not self._snapshot:
            return self._KEY_CANDIDATES, (namespace, key)
        head, _, where = self._KEY_CANDIDATES.partition(" FROM key_frontiers ")
        text = head + self._CANDIDATE_FACTS + "FROM key_frontiers " + where
        return text, (*(namespace,) * 5, key, namespace, key)

    def _candidate(self, namespace: str, row: tuple[object, ...]) -> tuple[RevisionNode, int]:
        """A candidate row's revision and frontier depth, its facts kept for the snapshot."""
        if not self._snapshot:
            return codec.revision_node(tuple(row[:-1])), int(str(row[-1]))
        width = len(row) - self._FACT_COLUMNS
        node = codec.revision_node(tuple(row[: width - 1]))
        status, newest, superseded, targeted, key_retracted = row[width:]
        record = (namespace, node.record_id)
        self._known_statuses[record] = None if status is None else str(status)
        if newest == node.revision:
            self._newest.setdefault(record, node)
        if not int(str(superseded)):
            self._unsuperseded.add(record)
        if not int(str(targeted)):
            self._untargeted.add(record)
        if node.key is not None and not int(str(key_retracted)):
            self._unretracted_keys.add((namespace, node.key))
        return node, int(str(row[width - 1]))

    def key_candidates(
        self, namespace: str, key: str, tree: str, depth: int, cross_tree: bool = False
    ) -> Iterator[RevisionNode]:
        source, params = self._candidate_source(namespace, key)
        cursor = (depth, 2**62)
        # with facts, a first page of one: the usual winner, without the facts of the next
        first = itertools.chain((1,), self._pages()) if self._snapshot else self._pages()
        for size in first:
            rows = self._all(  # (depth, seq) < cursor: the next page, on the index
                source + "AND k.tree = ? AND (k.depth, k.seq) < (?, ?) "
                # the rule's ranking (rules.rank_key): deepest frontier first, then latest seq
                "ORDER BY k.depth DESC, k.seq DESC LIMIT ?",
                (*params, tree, cursor[0], cursor[1], size),
            )
            for row in rows:
                node, at = self._candidate(namespace, row)
                cursor = (at, node.seq)
                yield node
            if len(rows) < size:
                break
        below, seen = 2**62, set()
        others = ("<>", tree) if cross_tree else ("=", "")  # one-tree: no frontier at all
        for size in self._pages():
            rows = self._all(  # without a frontier in ``tree``: arrival order, latest first
                # the rule's ranking (rules.rank_key): with no frontier here, latest seq first
                source + f"AND k.tree {others[0]} ? AND k.seq < ? ORDER BY k.seq DESC LIMIT ?",
                (*params, others[1], below, size),
            )
            for row in rows:
                node, _ = self._candidate(namespace, row)
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
        newest = self._newest.get((namespace, record_id))
        if newest is not None:  # a candidate that was its record's latest (a snapshot's)
            yield newest
            below = newest.revision
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
        rows: list[tuple[object, ...]] = []
        if (namespace, record_id) not in self._untargeted:
            rows += self._all(  # two lookups, each on its index (an OR would scan)
                f"SELECT {self._RETRACTION_COLUMNS} FROM retractions WHERE namespace = ? "
                "AND id IN (SELECT id FROM retraction_targets WHERE namespace = ? "
                "AND target = ?)",
                (namespace, namespace, record_id),
            )
        if key is not None and (namespace, key) not in self._unretracted_keys:
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

    def superseders(self, namespace: str, old_ids: Collection[str]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        unknown = [i for i in old_ids if (namespace, i) not in self._unsuperseded]
        for chunk in self._chunks(unknown):
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

    def _after_migration(self, version: int) -> None:
        if version == COMPACT_STORAGE_VERSION:
            self._compact_revisions()
        if version == 4:  # index the targets of the retractions written before
            rows = self._all("SELECT namespace, id, targets FROM retractions")
            self._many(
                "INSERT INTO retraction_targets (namespace, target, id) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                [
                    (namespace, target, rid)
                    for namespace, rid, targets in rows
                    for target in dict.fromkeys(codec.loads(targets))
                ],
            )

    def _compact_revisions(self) -> None:
        """Write the references and gates of revisions stored before schema 7 short, a page
        at a time in key order (a store of millions of revisions never sits in memory)."""
        after: tuple[str, str, int] = ("", "", 0)
        while True:
            rows = self._all(
                "SELECT namespace, record_id, revision, sources, refs, gate FROM revisions "
                "WHERE (namespace, record_id, revision) > (?, ?, ?) "
                "ORDER BY namespace, record_id, revision LIMIT 2000",
                after,
            )
            if not rows:
                return
            changed = []
            for namespace, record_id, revision, sources, refs, gate in rows:
                listed = None if sources is None else tuple(codec.loads(sources))
                short = (
                    codec.refs_text(listed, codec.refs_value(listed, refs)),
                    codec.gate_json(codec.gate_value(gate, listed), listed),
                )
                if short != (refs, gate):
                    changed.append((*short, namespace, record_id, revision))
            self._many(
                "UPDATE revisions SET refs = ?, gate = ? WHERE namespace = ? AND record_id = ? "
                "AND revision = ?",
                changed,
            )
            after = (rows[-1][0], rows[-1][1], int(rows[-1][2]))

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
        known = self._known_statuses  # filled in a read snapshot only
        unknown = [i for i in ids if (namespace, i) not in known]
        for item in ids:
            status = known.get((namespace, item))
            if status is not None:
                found[item] = status
        for chunk in self._chunks(unknown):
            rows = self._all(
                "SELECT id, status FROM statuses WHERE namespace = ? "
                f"AND id IN ({self._marks(len(chunk))})",
                (namespace, *chunk),
            )
            found.update({row[0]: row[1] for row in rows})
            if self._snapshot:
                for item in chunk:
                    known[(namespace, item)] = found.get(item)
        return found

    def erase_content(
        self, namespace: str, event_ids: Collection[str], record_ids: Collection[str]
    ) -> None:
        keys = self._keys_of(namespace, record_ids)
        for chunk in self._chunks(event_ids):
            self._run(
                "UPDATE events SET role = ?, content = '', meta = '{}' WHERE namespace = ? "
                f"AND id IN ({self._marks(len(chunk))})",
                (TOMBSTONE, namespace, *chunk),
            )
        self._blank_records(namespace, record_ids, kind=TOMBSTONE)
        for chunk in self._chunks(record_ids):
            self._run(
                f"DELETE FROM repairs WHERE namespace = ? AND record_id IN "
                f"({self._marks(len(chunk))})",
                (namespace, *chunk),
            )
        erased = {*event_ids, *record_ids}
        named = self._retractions_naming(namespace, erased, keys)
        self._blank_records(namespace, sorted(set(named) - erased))
        for key in sorted(keys - set(self._surviving_keys(namespace, keys))):
            self._run(  # the key's text was only the erased records': the retraction forgets it
                "UPDATE retractions SET key_name = NULL, key_scope = NULL "
                "WHERE namespace = ? AND key_name = ?",
                (namespace, key),
            )
        for chunk in self._chunks(erased | set(named)):
            self._run(
                "UPDATE audit SET reason = '' WHERE namespace = ? AND seq IN (SELECT seq FROM "
                f"audit_ids WHERE namespace = ? AND id IN ({self._marks(len(chunk))}))",
                (namespace, namespace, *chunk),
            )
        self._mark_cleanup(namespace)
        self._forget()
        codec.forget()

    def _blank_records(
        self, namespace: str, record_ids: Collection[str], *, kind: str | None = None
    ) -> None:
        """Blank the records' text; ``kind``: their kind too (an erased record's kind is
        caller text; a retraction blanked for naming the erased keeps acting, so keeps its)."""
        keys = self._keys_of(namespace, record_ids)
        kind_set = "" if kind is None else "kind = ?, "
        kind_arg = () if kind is None else (kind,)
        for chunk in self._chunks(record_ids):
            marks = self._marks(len(chunk))
            stored = [  # as ranked, before the key goes: key_frontiers holds the key's text
                codec.revision_node(row)
                for row in self._all(
                    f"SELECT {codec.REVISION_COLUMNS} FROM revisions WHERE namespace = ? "
                    f"AND key_name IS NOT NULL AND record_id IN ({marks})",
                    (namespace, *chunk),
                )
            ]
            self._run(
                f"UPDATE revisions SET {kind_set}content = '', meta = '{{}}', key_name = NULL, "
                f"key_scope = NULL WHERE namespace = ? AND record_id IN ({marks})",
                (*kind_arg, namespace, *chunk),
            )
            self._run(
                f"DELETE FROM vectors WHERE namespace = ? AND record_id IN ({marks})",
                (namespace, *chunk),
            )
            self._many(
                "DELETE FROM key_frontiers WHERE namespace = ? AND key_name = ? AND tree = ? "
                "AND depth = ? AND seq = ? AND record_id = ? AND revision = ?",
                [row for node in stored for row in _key_rows(namespace, node)],
            )
        for chunk in self._chunks(keys):  # a group only erased records held goes too
            self._run(
                "DELETE FROM tree_keys WHERE namespace = ? "
                f"AND key_name IN ({self._marks(len(chunk))}) AND NOT EXISTS (SELECT 1 "
                "FROM key_frontiers k JOIN revisions r ON r.namespace = k.namespace "
                "AND r.record_id = k.record_id AND r.revision = k.revision "
                "WHERE k.namespace = tree_keys.namespace AND k.key_name = tree_keys.key_name "
                "AND k.tree = tree_keys.tree AND CASE WHEN r.key_scope IS NULL THEN '-' "
                "ELSE '+' || r.key_scope END = tree_keys.scope_tag)",
                (namespace, *chunk),
            )

    def _keys_of(self, namespace: str, record_ids: Collection[str]) -> set[str]:
        found: set[str] = set()
        for chunk in self._chunks(record_ids):
            rows = self._all(
                "SELECT DISTINCT key_name FROM revisions WHERE namespace = ? AND key_name IS "
                f"NOT NULL AND record_id IN ({self._marks(len(chunk))})",
                (namespace, *chunk),
            )
            found.update(str(row[0]) for row in rows)
        return found

    def _surviving_keys(self, namespace: str, keys: Collection[str]) -> list[str]:
        found: list[str] = []
        for chunk in self._chunks(keys):
            rows = self._all(  # every keyed revision has a rank row; erased ones have none
                "SELECT DISTINCT key_name FROM key_frontiers WHERE namespace = ? "
                f"AND key_name IN ({self._marks(len(chunk))})",
                (namespace, *chunk),
            )
            found.extend(str(row[0]) for row in rows)
        return found

    def _retractions_naming(
        self, namespace: str, erased: Collection[str], keys: Collection[str]
    ) -> list[str]:
        """Retractions whose targets or key name what is being erased: their reason and
        detail are text about it. Two index lookups, whatever the number of retractions."""
        found: set[str] = set()
        for chunk in self._chunks(erased):
            rows = self._all(
                "SELECT id FROM retraction_targets WHERE namespace = ? "
                f"AND target IN ({self._marks(len(chunk))})",
                (namespace, *chunk),
            )
            found.update(str(row[0]) for row in rows)
        for chunk in self._chunks(keys):
            rows = self._all(
                "SELECT id FROM retractions WHERE namespace = ? "
                f"AND key_name IN ({self._marks(len(chunk))})",
                (namespace, *chunk),
            )
            found.update(str(row[0]) for row in rows)
        return sorted(found)

    def records_with_key(self, namespace: str, key: str) -> list[str]:
        rows = self._all(
            "SELECT DISTINCT record_id FROM key_frontiers WHERE namespace = ? AND key_name = ?",
            (namespace, key),
        )
        return sorted(str(row[0]) for row in rows)


def _by_id(nodes: Iterable[RevisionNode]) -> list[RevisionNode]:
    """Revisions by (record id, revision), sorted in Python: a database collation may order
    text differently."""
    return sorted(nodes, key=lambda n: (n.record_id, n.revision))


def _cited(node: RevisionNode) -> set[str]:
    """What a revision's ``citing`` rows name: each reference's target and its text."""
    return {name for ref in node.refs or () for name in (ref.target, ref.text)}


def _key_rows(namespace: str, node: RevisionNode) -> list[tuple[object, ...]]:
    """A keyed revision's rows of key_frontiers, once per frontier tree ('' and -1: none)."""
    if node.key is None:
        return []
    places = [(f.tree, f.depth) for f in node.gate.frontiers] or [("", -1)]
    return [
        (namespace, node.key, tree, depth, node.seq, node.record_id, node.revision)
        for tree, depth in places
    ]


def _unkeyed_rows(namespace: str, node: RevisionNode) -> list[tuple[object, ...]]:
    """A revision competing under no key (none, or a retraction): unkeyed_frontiers rows."""
    if node.key is not None and node.kind != RETRACTION_KIND:
        return []
    return [
        (namespace, f.tree, f.depth, node.seq, node.record_id, node.revision)
        for f in node.gate.frontiers
    ]


def _frontier_rows(namespace: str, node: RevisionNode) -> list[tuple[object, ...]]:
    """frontiers rows; ``cited`` marks a frontier the revision also cites (a fact's one source),
    which then needs no citing row: ``citing_any`` reads both."""
    cited = _cited(node)
    return [
        (namespace, f.event, node.record_id, node.revision, int(f.event in cited))
        for f in node.gate.frontiers
    ]


def _citing_rows(namespace: str, node: RevisionNode) -> list[tuple[object, ...]]:
    covered = {f.event for f in node.gate.frontiers}
    return [
        (namespace, target, node.record_id, node.revision)
        for target in sorted(_cited(node) - covered)
    ]
