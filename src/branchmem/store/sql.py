"""The engine's state in SQL, composed: ``SQLStore`` holds one object per table concern,
each holding the store's session, and hands each ``Store`` method to its object.

Shared by SQLite and PostgreSQL, which subclass ``SQLStore``; ``SQLSession`` runs the
statements and owns the transactions and the call's caches. The engine's tables, a module
each: the conversation trees (sqlevents.py, ``EventsTable``), records' revisions and the
indexes written with them (sqlrevisions.py, ``RevisionsTable``), the rank index and keyed
reads (sqlkeyed.py, ``RankIndex``), the bulk reader (sqlanswers.py, ``BulkReader``),
supersedes and retractions (sqlrelations.py, ``RelationsTable``), statuses (sqlstatuses.py,
``StatusesTable``), erasure (sqlerasure.py, ``Erasure``) and what a migration fills from
older rows (sqlmigrations.py, ``MigrationFills``, the session's ``_after_migration``); the
statement texts several send are in sqlshared.py. What one asks of another is passed to its
constructor: a revision's write ranks it in the ``RankIndex``, erasure marks the erase
cleanup, the bulk reader answers what its statements do not cover with the store's per-item
reads. Where a backend's dialect differs it passes its own subclass of a table
(PostgreSQL's events, rank index and bulk reader, sqlpgtables.py). The side tables
(repairs, counters, vectors, deliveries, the audit log, the erase cleanup, the API keys)
are objects holding the session too, which ``SQLSideTables`` (sqlsidetables.py), the one
base between the session and this class, holds and hands their methods to.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence

from .._core.provenance import RevisionNode
from .._core.questions import Facts, IndexTooLarge, Questions, TreeIndex
from .._core.retraction import RetractionNode
from .._core.topology import EventNode
from ..receipt import ResidueScope
from .base import PathMessage, RevisionKey, Store
from .keys import KeyStore
from .sqlanswers import BulkReader
from .sqlerasure import Erasure
from .sqlevents import EventsTable
from .sqlkeyed import RankIndex
from .sqlmigrations import MigrationFills
from .sqlrelations import RelationsTable
from .sqlrevisions import RevisionsTable
from .sqlsidetables import SQLSideTables
from .sqlstatuses import StatusesTable


class SQLStore(SQLSideTables, Store, KeyStore):
    """A ``Store`` over a DB-API connection; subclasses choose the database."""

    # The newest revisions of a record a keyed read takes at once; older ones page in.
    NEWEST_REVISIONS = 8

    def __init__(
        self,
        *,
        events_table: type[EventsTable] = EventsTable,
        rank_index: type[RankIndex] = RankIndex,
        bulk_reader: type[BulkReader] = BulkReader,
    ) -> None:
        """The arguments: a backend's own subclass of a table, where its dialect differs."""
        super().__init__()
        self.event_rows = events_table(self)
        self.bulk_reader = bulk_reader(self, self)  # the rest of an answer: these reads
        self.rank_index = rank_index(self)
        self.revision_rows = RevisionsTable(self, self.rank_index)
        self.relation_rows = RelationsTable(self)
        self.status_rows = StatusesTable(self)
        self.migration_fills = MigrationFills(self)
        self.erasure = Erasure(self, self.erase_cleanup)

    # -- the conversation trees --------------------------------------------------------
    def prefetch(
        self,
        namespace: str,
        ids: Collection[str],
        *,
        children: bool = True,
        ancestry: Collection[str] | None = None,
        citing: Collection[str] = (),
    ) -> None:
        self.event_rows.prefetch(
            namespace,
            ids,
            children=children,
            ancestry=ancestry,
            alongside=self.revision_rows.citing_alongside(namespace, citing),
        )

    def get_event(self, namespace: str, event_id: str) -> EventNode | None:
        return self.event_rows.get_event(namespace, event_id)

    def put_event(self, namespace: str, node: EventNode) -> None:
        self.event_rows.put_event(namespace, node)

    def children(self, namespace: str, parent_id: str) -> list[str]:
        return self.event_rows.children(namespace, parent_id)

    def path_ids(self, namespace: str, anchor: str) -> list[str]:
        return self.event_rows.path_ids(namespace, anchor)

    def path_events(self, namespace: str, anchor: str) -> list[EventNode]:
        return self.event_rows.path_events(namespace, anchor)

    def transcript(self, namespace: str, event_id: str, limit: int) -> list[PathMessage]:
        return self.event_rows.transcript(namespace, event_id, limit)

    def iter_events(self, namespace: str, tree: str | None = None) -> Iterator[EventNode]:
        return self.event_rows.iter_events(namespace, tree)

    def set_head(self, namespace: str, tree: str, event_id: str) -> None:
        self.event_rows.set_head(namespace, tree, event_id)

    def heads(self, namespace: str) -> dict[str, str]:
        return self.event_rows.heads(namespace)

    def namespaces(self) -> list[str]:
        return self.event_rows.namespaces()

    # -- revisions and the indexes written with them -----------------------------------
    def get_revisions(self, namespace: str, record_id: str) -> list[RevisionNode]:
        return self.revision_rows.get_revisions(namespace, record_id)

    def put_revision(self, namespace: str, node: RevisionNode) -> None:
        self.revision_rows.put_revision(namespace, node)

    def put_revisions(self, namespace: str, nodes: Sequence[RevisionNode]) -> None:
        self.revision_rows.put_revisions(namespace, nodes)

    def revisions_at(self, namespace: str, event_ids: Collection[str]) -> list[RevisionNode]:
        return self.revision_rows.revisions_at(namespace, event_ids)

    def ungated_revisions(self, namespace: str) -> list[RevisionNode]:
        return self.revision_rows.ungated_revisions(namespace)

    def record_ids(self, namespace: str) -> list[str]:
        return self.revision_rows.record_ids(namespace)

    def citing(self, namespace: str, target: str) -> list[RevisionKey]:
        return self.revision_rows.citing(namespace, target)

    def pending_on(self, namespace: str, event_id: str) -> list[RevisionKey]:
        return self.revision_rows.pending_on(namespace, event_id)

    def pending_on_any(self, namespace: str, event_ids: Collection[str]) -> list[RevisionKey]:
        return self.revision_rows.pending_on_any(namespace, event_ids)

    def citing_any(self, namespace: str, targets: Collection[str]) -> list[tuple[str, RevisionKey]]:
        return self.revision_rows.citing_any(namespace, targets)

    # -- the rank index and keyed reads ------------------------------------------------
    def _key_retractions(self, namespace: str, key: str) -> list[RetractionNode]:
        """``ItemByItemAnswers``' read of a key's retractions."""
        return self.rank_index.key_retractions(namespace, key)

    def key_candidates(
        self, namespace: str, key: str, tree: str, depth: int, cross_tree: bool = False
    ) -> Iterator[RevisionNode]:
        return self.rank_index.key_candidates(namespace, key, tree, depth, cross_tree)

    def revisions_newest_first(self, namespace: str, record_id: str) -> Iterator[RevisionNode]:
        return self.rank_index.revisions_newest_first(namespace, record_id)

    def retractions_naming(
        self, namespace: str, record_id: str, key: str | None
    ) -> list[RetractionNode]:
        return self.rank_index.retractions_naming(namespace, record_id, key)

    def records_with_key(self, namespace: str, key: str) -> list[str]:
        return self.rank_index.records_with_key(namespace, key)

    # -- the bulk reader ---------------------------------------------------------------
    def answer(self, namespace: str, questions: Questions) -> Facts:
        return self.bulk_reader.answer(namespace, questions, self.NEWEST_REVISIONS)

    def _tree_index(self, namespace: str, tree: str, limit: int) -> TreeIndex | IndexTooLarge:
        """``ItemByItemAnswers``' read of a tree's index."""
        return self.bulk_reader.tree_index(namespace, tree, limit)

    # -- supersedes and retractions ----------------------------------------------------
    def add_supersede(self, namespace: str, new_id: str, old_id: str) -> None:
        self.relation_rows.add_supersede(namespace, new_id, old_id)

    def superseders(self, namespace: str, old_ids: Collection[str]) -> dict[str, list[str]]:
        return self.relation_rows.superseders(namespace, old_ids)

    def superseded_by(self, namespace: str, new_id: str) -> list[str]:
        return self.relation_rows.superseded_by(namespace, new_id)

    def _superseded_by_all(self, namespace: str, new_ids: Collection[str]) -> dict[str, list[str]]:
        """``ItemByItemAnswers``' bulk read of what the new ids supersede."""
        return self.relation_rows.superseded_by_all(namespace, new_ids)

    def put_retraction(self, namespace: str, node: RetractionNode) -> None:
        self.relation_rows.put_retraction(namespace, node)

    def retractions(self, namespace: str, ids: Collection[str]) -> dict[str, RetractionNode]:
        return self.relation_rows.retractions(namespace, ids)

    def tree_retractions(self, namespace: str) -> list[RetractionNode]:
        return self.relation_rows.tree_retractions(namespace)

    # -- statuses ----------------------------------------------------------------------
    def set_status(self, namespace: str, item_id: str, status: str | None) -> None:
        self.status_rows.set_status(namespace, item_id, status)

    def statuses(self, namespace: str, ids: Collection[str]) -> dict[str, str]:
        return self.status_rows.statuses(namespace, ids)

    def event_roles(self, namespace: str, ids: Collection[str]) -> dict[str, str]:
        return self.event_rows.event_roles(namespace, ids)

    # -- erasure -----------------------------------------------------------------------
    def erase_content(
        self, namespace: str, event_ids: Collection[str], record_ids: Collection[str]
    ) -> None:
        self.erasure.erase_content(namespace, event_ids, record_ids)

    def residue_values(self, namespace: str, scope: ResidueScope) -> Iterator[tuple[str, object]]:
        return self.erasure.residue_values(namespace, scope)

    # -- the session's hooks -----------------------------------------------------------
    def _after_migration(self, version: int) -> None:
        self.migration_fills.after_migration(version)
