"""Derived records in SQL: their revisions, and the indexes a revision's write keeps
(``frontiers``, ``ungated``, ``pending``, ``citing``) to find what an event touches."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from .._core.provenance import EVENT, RevisionNode
from .._core.validation import check_text
from . import codec
from .base import RevisionKey
from .sqlkeyed import RankIndex
from .sqlsession import Alongside, SQLSession
from .sqlshared import UNGATED, by_id


class RevisionsTable:
    """The ``revisions`` table and the indexes written with each revision, over the store's
    session; a revision's write ranks it in ``ranks`` (and unranks the one it replaces)."""

    __slots__ = ("ranks", "session")

    def __init__(self, session: SQLSession, ranks: RankIndex) -> None:
        self.session = session
        self.ranks = ranks

    def get_revisions(self, namespace: str, record_id: str) -> list[RevisionNode]:
        session = self.session
        key = (namespace, record_id)
        if key in session._revisions:
            return list(session._revisions[key])
        rows = session._all(
            f"SELECT {codec.REVISION_COLUMNS} FROM revisions WHERE namespace = ? "
            "AND record_id = ? ORDER BY revision",
            (namespace, record_id),
        )
        found = [codec.revision_node(row) for row in rows]
        if session._depth > 0:
            session._revisions[key] = found
        return list(found)

    def put_revision(self, namespace: str, node: RevisionNode) -> None:
        session = self.session
        check_text(node.kind, f"record {node.record_id!r}: kind")
        check_text(node.content, f"record {node.record_id!r}: content")
        replaced = self._stored_revision(namespace, node.record_id, node.revision)
        cached = session._revisions.get((namespace, node.record_id))
        if cached is not None:
            if node.revision <= len(cached):
                cached[node.revision - 1] = node
            else:
                cached.append(node)
        key = (namespace, node.record_id, node.revision)
        if replaced is not None:
            self._unindex(namespace, replaced)
        session._run(
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
            session._many(
                "INSERT INTO frontiers (namespace, event_id, record_id, revision, cited) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                _frontier_rows(namespace, node),
            )
        else:
            session._run(
                "INSERT INTO ungated (namespace, record_id, revision) VALUES (?, ?, ?)", key
            )
        session._many(
            "INSERT INTO pending (namespace, event_id, record_id, revision) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(namespace, e, node.record_id, node.revision) for e in sorted(gate.detached)],
        )
        session._many(
            "INSERT INTO citing (namespace, target, record_id, revision) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            _citing_rows(namespace, node),
        )
        self.ranks.rank_by_key(namespace, [node])

    def _stored_revision(
        self, namespace: str, record_id: str, revision: int
    ) -> RevisionNode | None:
        """The revision as stored before a write replaces it (None: a new one)."""
        session = self.session
        cached = session._revisions.get((namespace, record_id))
        if cached is not None:
            return cached[revision - 1] if revision <= len(cached) else None
        row = session._one(
            f"SELECT {codec.REVISION_COLUMNS} FROM revisions WHERE namespace = ? "
            "AND record_id = ? AND revision = ?",
            (namespace, record_id, revision),
        )
        return None if row is None else codec.revision_node(row)

    def _unindex(self, namespace: str, node: RevisionNode) -> None:
        """Delete a replaced revision's index rows by their whole key: each is derived from
        the revision exactly as ``put_revision`` derived it, so no index by revision is needed."""
        session = self.session
        key = (namespace, node.record_id, node.revision)
        for table, column, values in (
            ("frontiers", "event_id", [f.event for f in node.gate.frontiers]),
            ("pending", "event_id", sorted(node.gate.detached)),
            ("citing", "target", sorted(_cited(node))),
        ):
            session._many(
                f"DELETE FROM {table} WHERE namespace = ? AND {column} = ? AND record_id = ? "
                "AND revision = ?",
                [(namespace, value, node.record_id, node.revision) for value in values],
            )
        session._run(
            "DELETE FROM ungated WHERE namespace = ? AND record_id = ? AND revision = ?", key
        )
        self.ranks.unrank(namespace, [node])

    def put_revisions(self, namespace: str, nodes: Sequence[RevisionNode]) -> None:
        """New revisions (``add_records``) with one statement per table, not per revision."""
        session = self.session
        fresh: list[RevisionNode] = []
        for node in nodes:
            cached = session._revisions.get((namespace, node.record_id))
            if cached is None or node.revision != len(cached) + 1:
                self.put_revision(namespace, node)  # a replacement: its old index rows go
                continue
            check_text(node.kind, f"record {node.record_id!r}: kind")
            check_text(node.content, f"record {node.record_id!r}: content")
            cached.append(node)
            fresh.append(node)
        if not fresh:
            return
        revisions: list[tuple[object, ...]] = []
        frontiers: list[tuple[object, ...]] = []
        ungated: list[tuple[object, ...]] = []
        pending: list[tuple[object, ...]] = []
        citing: list[tuple[object, ...]] = []
        for node in fresh:  # each revision's rows derived once, in one pass
            revisions.append((namespace, *codec.revision_row(node)))
            gate = node.gate
            refs = node.refs
            if (  # a fact's one event source, its frontier: one frontiers row, cited
                refs is not None
                and len(refs) == 1
                and len(gate.frontiers) == 1
                and not gate.detached
                and refs[0].kind == EVENT
                and refs[0].target == refs[0].text == gate.frontiers[0].event
            ):
                frontiers.append((namespace, refs[0].target, node.record_id, node.revision, 1))
                continue
            cited = _cited(node)
            frontiers.extend(_frontier_rows(namespace, node, cited))
            if not gate.frontiers:
                ungated.append((namespace, node.record_id, node.revision))
            pending.extend(
                (namespace, e, node.record_id, node.revision) for e in sorted(gate.detached)
            )
            citing.extend(_citing_rows(namespace, node, cited))
        # held: the batch's next write-out joins the same statements
        session._hold_rows(
            f"INSERT INTO revisions (namespace, {codec.REVISION_COLUMNS}, legacy, "
            "unknown_sources, detached_sources, consistent) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            revisions,
            key_width=3,
        )
        session._hold_rows(
            "INSERT INTO frontiers (namespace, event_id, record_id, revision, cited) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            frontiers,
        )
        session._hold_rows(
            "INSERT INTO ungated (namespace, record_id, revision) VALUES (?, ?, ?)", ungated
        )
        session._hold_rows(
            "INSERT INTO pending (namespace, event_id, record_id, revision) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            pending,
        )
        session._hold_rows(
            "INSERT INTO citing (namespace, target, record_id, revision) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            citing,
        )
        self.ranks.rank_by_key(namespace, fresh, hold=True)

    def _revisions_by_keys(
        self, namespace: str, table: str, column: str, values: Collection[str]
    ) -> list[RevisionNode]:
        session = self.session
        found: dict[RevisionKey, RevisionNode] = {}
        for chunk in session._chunks(values):
            rows = session._all(
                f"SELECT {', '.join('r.' + c for c in codec.REVISION_COLUMNS.split(', '))} "
                f"FROM {table} x JOIN revisions r ON r.namespace = x.namespace "
                "AND r.record_id = x.record_id AND r.revision = x.revision "
                f"WHERE x.namespace = ? AND x.{column} IN ({session._marks(len(chunk))})",
                (namespace, *chunk),
            )
            for row in rows:
                node = codec.revision_node(row)
                found[(node.record_id, node.revision)] = node
        return [found[key] for key in sorted(found)]

    def revisions_at(self, namespace: str, event_ids: Collection[str]) -> list[RevisionNode]:
        return self._revisions_by_keys(namespace, "frontiers", "event_id", event_ids)

    def ungated_revisions(self, namespace: str) -> list[RevisionNode]:
        session = self.session
        rows = session._all(UNGATED, (namespace,))
        return by_id(codec.revision_node(row) for row in rows)

    def record_ids(self, namespace: str) -> list[str]:
        session = self.session
        rows = session._all(
            "SELECT record_id FROM revisions WHERE namespace = ? AND revision = 1 ORDER BY seq",
            (namespace,),
        )
        return [row[0] for row in rows]

    def citing(self, namespace: str, target: str) -> list[RevisionKey]:
        return sorted({key for _, key in self.citing_any(namespace, [target])})

    def pending_on(self, namespace: str, event_id: str) -> list[RevisionKey]:
        session = self.session
        rows = session._all(
            "SELECT record_id, revision FROM pending WHERE namespace = ? AND event_id = ?",
            (namespace, event_id),
        )
        return sorted((row[0], int(row[1])) for row in rows)

    def pending_on_any(self, namespace: str, event_ids: Collection[str]) -> list[RevisionKey]:
        """Asked when events arrive, which asks ``citing_any`` of the same ids next: that
        goes alongside."""
        session = self.session
        alongside = self.citing_alongside(namespace, event_ids)
        found: list[RevisionKey] = []
        for number, chunk in enumerate(session._chunks(event_ids)):
            pending = (
                "SELECT DISTINCT record_id, revision FROM pending WHERE namespace = ? "
                f"AND event_id IN ({session._marks(len(chunk))})",
                (namespace, *chunk),
            )
            if alongside is not None and number == 0:
                rows, *citing = session._all_together([pending, *alongside.statements])
                alongside.take(citing)
            else:
                rows = session._all(*pending)
            found.extend((row[0], int(row[1])) for row in rows)
        return sorted(set(found))

    def citing_any(self, namespace: str, targets: Collection[str]) -> list[tuple[str, RevisionKey]]:
        session = self.session
        asked = session._citing_alongside
        if asked is not None:
            session._citing_alongside = None  # one answer, for the question it was read for
            if asked[0] == namespace and asked[1].issuperset(targets):
                return [row for row in asked[2] if row[0] in targets]
        found: set[tuple[str, RevisionKey]] = set()
        for chunk in session._chunks(targets):
            cited, frontier = session._all_together(self._citing_statements(namespace, chunk))
            found.update((row[0], (row[1], int(row[2]))) for row in cited + frontier)
        return sorted(found)

    def citing_alongside(self, namespace: str, targets: Collection[str]) -> Alongside | None:
        """``citing_any(targets)``'s reads to send with another read inside a transaction,
        its answer kept for that question until the next write (None: nothing to ask, or
        more ids than one statement takes)."""
        session = self.session
        chunks = list(session._chunks(targets)) if session._depth > 0 else []
        if len(chunks) != 1:
            return None
        chunk = chunks[0]

        def take(rows: list[list[tuple[Any, ...]]]) -> None:
            cited, frontier = rows
            found = {(row[0], (row[1], int(row[2]))) for row in cited + frontier}
            session._citing_alongside = (namespace, frozenset(chunk), sorted(found))

        return Alongside(self._citing_statements(namespace, chunk), take)

    @staticmethod
    def _citing_statements(namespace: str, chunk: list[str]) -> list[tuple[str, Sequence[Any]]]:
        marks = SQLSession._marks(len(chunk))
        return [
            (
                f"SELECT target, record_id, revision FROM citing WHERE namespace = ? "
                f"AND target IN ({marks})",
                (namespace, *chunk),
            ),
            (  # citations that are their revision's frontier too
                "SELECT event_id, record_id, revision FROM frontiers WHERE namespace = ? "
                f"AND event_id IN ({marks}) AND cited = 1",
                (namespace, *chunk),
            ),
        ]


def _cited(node: RevisionNode) -> set[str]:
    """What a revision's ``citing`` rows name: each reference's target and its text."""
    return {name for ref in node.refs or () for name in (ref.target, ref.text)}


def _frontier_rows(
    namespace: str, node: RevisionNode, cited: set[str] | None = None
) -> list[tuple[object, ...]]:
    """frontiers rows; ``cited`` marks a frontier the revision also cites (a fact's one source),
    which then needs no citing row: ``citing_any`` reads both."""
    cited = _cited(node) if cited is None else cited
    return [
        (namespace, f.event, node.record_id, node.revision, int(f.event in cited))
        for f in node.gate.frontiers
    ]


def _citing_rows(
    namespace: str, node: RevisionNode, cited: set[str] | None = None
) -> list[tuple[object, ...]]:
    covered = {f.event for f in node.gate.frontiers}
    return [
        (namespace, target, node.record_id, node.revision)
        for target in sorted((_cited(node) if cited is None else cited) - covered)
    ]
