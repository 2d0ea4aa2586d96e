"""Keyed reads in SQL (SPEC §7): the rank index of keyed and unkeyed revisions, a key's
candidates in rank order, and the facts a read snapshot keeps about them."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from .._core.provenance import RevisionNode
from .._core.retraction import RetractionNode
from ..model import RETRACTION_KIND
from . import codec
from .sqlsession import SQLSession
from .sqlshared import KEY_CANDIDATES, RETRACTION_COLUMNS


def scope_tag(scope: str | None) -> str:
    """A key scope as ``tree_keys`` stores it: any string is a scope, so None is '-'."""
    return "-" if scope is None else "+" + scope


class RankIndex:
    """The ``key_frontiers``, ``tree_keys`` and ``unkeyed_frontiers`` tables over the store's
    session, and the keyed reads over them; a backend's subclass says how its dialect reads
    a JSON array (``SOURCES_WITH_STATUS``)."""

    __slots__ = ("candidates_on_frontiers", "candidates_with_facts", "session")

    _PAGES = (8, 64, 512)  # a keyed read usually stops at its first candidate
    _FIRST_PAGES = (1, *_PAGES)  # in a snapshot: its first candidate comes with its facts

    def __init__(self, session: SQLSession) -> None:
        self.session = session
        head, _, where = KEY_CANDIDATES.partition(" FROM key_frontiers ")
        facts = self._CANDIDATE_FACTS + self.SOURCES_WITH_STATUS
        self.candidates_with_facts = head + facts + "FROM key_frontiers " + where
        # the first loop's statement, without and with facts (made once: every keyed read
        # sends one)
        self.candidates_on_frontiers = (
            KEY_CANDIDATES + self._ON_FRONTIERS,
            self.candidates_with_facts + self._ON_FRONTIERS,
        )

    def rank_by_key(
        self, namespace: str, nodes: Sequence[RevisionNode], *, hold: bool = False
    ) -> None:
        """Index keyed revisions in the order a view ranks them, once per frontier tree, and
        each tree's groups and unkeyed revisions (the ``TreeIndex`` ``answer`` gives);
        ``hold``: a batch's rows, written with the batch's next write-out."""
        write = self.session._hold_rows if hold else self.session._many
        write(
            "INSERT INTO key_frontiers (namespace, key_name, tree, depth, seq, record_id, "
            "revision) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [row for node in nodes for row in key_rows(namespace, node)],
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

    def unrank(self, namespace: str, nodes: Sequence[RevisionNode]) -> None:
        """Delete the rank rows of revisions as stored, by whole key (``rank_by_key``)."""
        self.session._many(
            "DELETE FROM key_frontiers WHERE namespace = ? AND key_name = ? AND tree = ? "
            "AND depth = ? AND seq = ? AND record_id = ? AND revision = ?",
            [row for node in nodes for row in key_rows(namespace, node)],
        )
        self.session._many(
            "DELETE FROM unkeyed_frontiers WHERE namespace = ? AND tree = ? AND depth = ? "
            "AND seq = ? AND record_id = ? AND revision = ?",
            [row for node in nodes for row in _unkeyed_rows(namespace, node)],
        )

    def key_retractions(self, namespace: str, key: str) -> list[RetractionNode]:
        """The retractions of ``key``, by seq (none read where a candidate's facts said so)."""
        if (namespace, key) in self.session._unretracted_keys:
            return []
        rows = self.session._all(
            f"SELECT {RETRACTION_COLUMNS} FROM retractions WHERE namespace = ? AND key_name = ?",
            (namespace, key),
        )
        return sorted((codec.retraction_node(row) for row in rows), key=lambda node: node.seq)

    # In a read snapshot each candidate comes with what deciding it asks next (its record's
    # status and latest revision number, whether anything supersedes or retracts it or its
    # key, how many of its sources have a status), kept for the snapshot (``_candidate``):
    # the usual winner then needs no further statement about itself, nor about the events
    # it was built from (``stale`` asks their statuses, almost always none).
    _CANDIDATE_FACTS = (
        ", (SELECT s.status FROM statuses s WHERE s.namespace = ? AND s.id = r.record_id)"
        ", (SELECT MAX(m.revision) FROM revisions m WHERE m.namespace = ? "
        "AND m.record_id = r.record_id)"
        ", CASE WHEN EXISTS (SELECT 1 FROM supersedes p WHERE p.namespace = ? "
        "AND p.old_id = r.record_id) THEN 1 ELSE 0 END"
        ", CASE WHEN EXISTS (SELECT 1 FROM retraction_targets t WHERE t.namespace = ? "
        "AND t.target = r.record_id) THEN 1 ELSE 0 END"
        ", CASE WHEN EXISTS (SELECT 1 FROM retractions x WHERE x.namespace = ? "
        "AND x.key_name = ?) THEN 1 ELSE 0 END"
    )
    # the sources (a JSON array of ids) that have a status: the dialect's JSON reading
    SOURCES_WITH_STATUS = (
        ", (SELECT COUNT(*) FROM json_each(r.sources) j JOIN statuses g "
        "ON g.namespace = ? AND g.id = j.value) "
    )
    _FACT_COLUMNS = 6

    # the next page on the index (the rule's ranking, ``rules.rank_key``): with a frontier
    # in the tree, deepest frontier first, then latest seq, below the cursor (depth, seq)
    _ON_FRONTIERS = (
        "AND k.tree = ? AND (k.depth, k.seq) < (?, ?) ORDER BY k.depth DESC, k.seq DESC LIMIT ?"
    )

    def _candidate_source(self, namespace: str, key: str) -> tuple[str, tuple[object, ...]]:
        """The candidates' SELECT up to its WHERE and its parameters: with facts in a read
        snapshot."""
        if not self.session._snapshot:
            return KEY_CANDIDATES, (namespace, key)
        return self.candidates_with_facts, (*(namespace,) * 5, key, namespace, namespace, key)

    def _candidate(self, namespace: str, row: tuple[Any, ...]) -> tuple[RevisionNode, int]:
        """A candidate row's revision and frontier depth, its facts kept for the snapshot
        (the facts are counts and flags: 0 is none, whatever integer type the driver gives)."""
        session = self.session
        if not session._snapshot:
            return codec.revision_node(tuple(row[:-1])), int(row[-1])
        width = len(row) - self._FACT_COLUMNS
        node = codec.revision_node(tuple(row[: width - 1]))
        status, newest, superseded, targeted, key_retracted, sources_gone = row[width:]
        record = (namespace, node.record_id)
        known = session._known_statuses
        known[record] = None if status is None else str(status)
        if not sources_gone:
            for source in node.sources or ():
                known.setdefault((namespace, source), None)
        if newest == node.revision:
            session._newest.setdefault(record, node)
        if not superseded:
            session._unsuperseded.add(record)
        if not targeted:
            session._untargeted.add(record)
        if node.key is not None and not key_retracted:
            session._unretracted_keys.add((namespace, node.key))
        return node, int(row[width - 1])

    def key_candidates(
        self, namespace: str, key: str, tree: str, depth: int, cross_tree: bool = False
    ) -> Iterator[RevisionNode]:
        session = self.session
        snapshot = session._snapshot
        source, params = self._candidate_source(namespace, key)
        ranked = self.candidates_on_frontiers[snapshot]
        at, below = depth, 2**62
        # with facts, a first page of one: the usual winner, without the facts of the next
        sizes = self._FIRST_PAGES if snapshot else self._PAGES
        page = 0
        while True:
            size = sizes[page] if page < len(sizes) else sizes[-1]
            page += 1
            rows = session._all(ranked, (*params, tree, at, below, size))
            for row in rows:
                node, at = self._candidate(namespace, row)
                below = node.seq
                yield node
            if len(rows) < size:
                break
        below, seen = 2**62, set()
        others = ("<>", tree) if cross_tree else ("=", "")  # one-tree: no frontier at all
        for size in self._pages():
            rows = session._all(  # without a frontier in ``tree``: arrival order, latest first
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
        session = self.session
        cached = session._revisions.get((namespace, record_id))
        if cached is not None:
            yield from reversed(list(cached))
            return
        below = 2**31
        newest = session._newest.get((namespace, record_id))
        if newest is not None:  # a candidate that was its record's latest (a snapshot's)
            yield newest
            below = newest.revision
        for size in self._pages():
            rows = session._all(
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
        session = self.session
        untargeted = (namespace, record_id) in session._untargeted
        if untargeted and (key is None or (namespace, key) in session._unretracted_keys):
            return []  # the snapshot's facts say none (the usual answer)
        rows: list[tuple[object, ...]] = []
        if not untargeted:
            rows += session._all(  # two lookups, each on its index (an OR would scan)
                f"SELECT {RETRACTION_COLUMNS} FROM retractions WHERE namespace = ? "
                "AND id IN (SELECT id FROM retraction_targets WHERE namespace = ? "
                "AND target = ?)",
                (namespace, namespace, record_id),
            )
        if key is not None and (namespace, key) not in session._unretracted_keys:
            rows += session._all(
                f"SELECT {RETRACTION_COLUMNS} FROM retractions WHERE namespace = ? "
                "AND key_name = ?",
                (namespace, key),
            )
        found = {row[0]: codec.retraction_node(row) for row in rows}
        return sorted(found.values(), key=lambda node: node.seq)

    def records_with_key(self, namespace: str, key: str) -> list[str]:
        rows = self.session._all(
            "SELECT DISTINCT record_id FROM key_frontiers WHERE namespace = ? AND key_name = ?",
            (namespace, key),
        )
        return sorted(str(row[0]) for row in rows)


def key_rows(namespace: str, node: RevisionNode) -> list[tuple[object, ...]]:
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
