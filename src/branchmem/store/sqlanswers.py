"""The bulk reader in SQL: every question of one ``answer`` in one round trip."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .._core.provenance import RevisionNode
from .._core.questions import PAGE_SIZE, Facts, IndexTooLarge, Questions, TreeIndex
from . import codec
from .base import Store, answer_by_reads
from .sqlsession import SQLSession
from .sqlshared import KEY_CANDIDATES, RETRACTION_COLUMNS, UNGATED, by_id, supersedes_pairs


class BulkReader:
    """``answer`` over the store's session: the statements of a ``Questions``, sent together,
    read into ``Facts``; what they do not cover, ``reads`` (the store's per-item reads)
    answers a statement each. A backend's subclass may word a statement its own way
    (``page_statements``, ``newest_revisions``)."""

    __slots__ = ("reads", "session")

    def __init__(self, session: SQLSession, reads: Store) -> None:
        self.session = session
        self.reads = reads

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
            (UNGATED, (namespace,)),
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
                *by_id(codec.revision_node(row) for row in ungated),
            ),
        )

    def tree_index(self, namespace: str, tree: str, limit: int) -> TreeIndex | IndexTooLarge:
        """A tree's index in one round trip."""
        statements = self._index_statements(namespace, tree, limit)
        rows, unkeyed, ungated = self.session._all_together(statements)
        return self._tree_index_of(tree, limit, rows, unkeyed, ungated)

    def page_statements(
        self, namespace: str, keys: list[str], tree: str, depth: int, size: int
    ) -> list[tuple[str, Sequence[object]]]:
        """Statements whose rows are (asked key, revision columns, depth), in rank order per
        key: the first page of each key's candidates in ``tree``. Here one statement a key."""
        head = "SELECT ?, " + KEY_CANDIDATES.removeprefix("SELECT ")
        return [
            (
                head + "AND k.tree = ? AND (k.depth, k.seq) < (?, ?) "
                # the rule's ranking (rules.rank_key): deepest frontier first, then latest seq
                "ORDER BY k.depth DESC, k.seq DESC LIMIT ?",
                (key, namespace, key, tree, depth, 2**62, size),
            )
            for key in keys
        ]

    def answer(self, namespace: str, questions: Questions, newest: int) -> Facts:
        """Every question in one round trip (PostgreSQL pipelines the statements); ``newest``:
        how many of a record's newest revisions to read at once (older ones page in)."""
        session = self.session
        statements: list[tuple[str, Sequence[object]]] = []
        kinds: list[str] = []
        record_ids, event_ids = sorted(questions.records), sorted(questions.events)
        if questions.index_tree is not None:
            statements += self._index_statements(
                namespace, questions.index_tree, questions.index_limit
            )
            kinds += ["groups", "unkeyed", "ungated"]
        if questions.pages:
            paged = self.page_statements(
                namespace,
                sorted(questions.pages),
                questions.page_tree,
                questions.page_depth,
                PAGE_SIZE,
            )
            statements += paged
            kinds += ["pages"] * len(paged)
        retraction_columns = ", ".join("r." + c for c in RETRACTION_COLUMNS.split(", "))
        for chunk in session._chunks(record_ids):
            marks = session._marks(len(chunk))
            statements += [
                self.newest_revisions(namespace, chunk, newest),
                supersedes_pairs("old_id", namespace, chunk, marks),
                (
                    f"SELECT t.target, {retraction_columns} FROM retraction_targets t "
                    "JOIN retractions r ON r.namespace = t.namespace AND r.id = t.id "
                    f"WHERE t.namespace = ? AND t.target IN ({marks})",
                    (namespace, *chunk),
                ),
            ]
            kinds += ["revisions", "superseders", "retracting"]
        for chunk in session._chunks([*record_ids, *event_ids]):
            statements.append(
                (
                    "SELECT id, status FROM statuses WHERE namespace = ? "
                    f"AND id IN ({session._marks(len(chunk))})",
                    (namespace, *chunk),
                )
            )
            kinds.append("statuses")
        for chunk in session._chunks(sorted(questions.keys)):
            statements.append(
                (
                    f"SELECT key_name, {RETRACTION_COLUMNS} FROM retractions "
                    f"WHERE namespace = ? AND key_name IN ({session._marks(len(chunk))})",
                    (namespace, *chunk),
                )
            )
            kinds.append("retracting_key")
        for chunk in session._chunks(event_ids):
            statements.append(self._events_with_steps(namespace, chunk))
            kinds.append("events")
        # what the new ids supersede: asked of a whole view's records at once (may a record
        # lend its rank?), so a statement per chunk, not per id
        for chunk in session._chunks(sorted(questions.superseded_by)):
            marks = session._marks(len(chunk))
            statements.append(supersedes_pairs("new_id", namespace, chunk, marks))
            kinds.append("superseded_by")
        facts = Facts()
        # the rest: a statement each, by the store's per-item reads
        answer_by_reads(self.reads, namespace, questions, facts)
        if not statements:
            return facts
        revisions: dict[str, list[RevisionNode]] = {}
        pages: dict[str, list[RevisionNode]] = {}
        results = session._all_together(statements)
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
                elif kind == "superseded_by":
                    facts.superseded_by.setdefault(row[0], []).append(row[1])
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
        marks = self.session._marks(len(ids))
        columns = ", ".join("e." + c for c in codec.EVENT_COLUMNS.split(", "))
        return (
            f"SELECT {codec.EVENT_COLUMNS} FROM events WHERE namespace = ? "
            f"AND id IN ({marks}) UNION ALL SELECT {columns} FROM events s "
            "JOIN events e ON e.namespace = s.namespace AND e.id IN (s.jump, s.parent) "
            f"WHERE s.namespace = ? AND s.id IN ({marks})",
            (namespace, *ids, namespace, *ids),
        )

    def newest_revisions(
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
