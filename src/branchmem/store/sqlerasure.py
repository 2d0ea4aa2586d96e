"""Erasure in SQL: an erased item's text blanked in every table that holds it, and the
cleanup of the database's files marked in the same transaction (sqlcleanup.py)."""

from __future__ import annotations

from collections.abc import Collection, Iterator

from ..receipt import ResidueScope
from . import codec
from .base import TOMBSTONE
from .sqlcleanup import EraseCleanupTable
from .sqlkeyed import key_rows
from .sqlsession import SQLSession


class Erasure:
    """``erase_content`` and ``residue_values`` over the store's session: every table that
    holds an erased item's text, and the erase cleanup it marks for the files."""

    __slots__ = ("cleanup", "session")

    def __init__(self, session: SQLSession, cleanup: EraseCleanupTable) -> None:
        self.session = session
        self.cleanup = cleanup

    def erase_content(
        self, namespace: str, event_ids: Collection[str], record_ids: Collection[str]
    ) -> None:
        session = self.session
        keys = self._keys_of(namespace, record_ids)
        for chunk in session._chunks(event_ids):
            session._run(
                "UPDATE events SET role = ?, content = '', meta = '{}', tokens = NULL "
                "WHERE namespace = ? "
                f"AND id IN ({session._marks(len(chunk))})",
                (TOMBSTONE, namespace, *chunk),
            )
        self._blank_records(namespace, record_ids, kind=TOMBSTONE)
        for chunk in session._chunks(record_ids):
            session._run(
                f"DELETE FROM repairs WHERE namespace = ? AND record_id IN "
                f"({session._marks(len(chunk))})",
                (namespace, *chunk),
            )
        erased = {*event_ids, *record_ids}
        named = self._retractions_naming(namespace, erased, keys)
        self._blank_records(namespace, sorted(set(named) - erased))
        for key in sorted(keys - set(self._surviving_keys(namespace, keys))):
            session._run(  # the key's text was only the erased records': the retraction forgets it
                "UPDATE retractions SET key_name = NULL, key_scope = NULL "
                "WHERE namespace = ? AND key_name = ?",
                (namespace, key),
            )
        for chunk in session._chunks(erased | set(named)):
            session._run(
                "UPDATE audit SET reason = '' WHERE namespace = ? AND seq IN (SELECT seq FROM "
                f"audit_ids WHERE namespace = ? AND id IN ({session._marks(len(chunk))}))",
                (namespace, namespace, *chunk),
            )
        self.cleanup.mark(namespace)
        session._forget()
        codec.forget()

    def residue_values(self, namespace: str, scope: ResidueScope) -> Iterator[tuple[str, object]]:
        """The scope's rows table by table, through the driver, a chunk of ids at a time."""
        session = self.session
        gone = scope.events | scope.records
        named = {
            row[0]
            for chunk in session._chunks(sorted(gone))
            for row in session._all(
                "SELECT id FROM retraction_targets WHERE namespace = ? "
                f"AND target IN ({session._marks(len(chunk))})",
                (namespace, *chunk),
            )
        }
        records = scope.records | named
        seen: set[tuple[str, tuple[object, ...]]] = set()  # a row two lists both name
        audited = "seq IN (SELECT seq FROM audit_ids WHERE namespace = ? AND id IN ({}))"
        for table, where, ids, key in (
            ("events", "id IN ({})", scope.events, None),
            ("revisions", "record_id IN ({})", records, None),
            ("retractions", "id IN ({})", records, None),
            ("vectors", "record_id IN ({})", records, None),
            ("key_frontiers", "record_id IN ({})", records, None),
            ("repairs", "record_id IN ({})", records, (1, 2)),
            ("repairs", "cause IN ({})", gone, (1, 2)),
            ("tree_keys", "tree IN ({})", scope.trees, None),
            ("deliveries", "session IN ({})", scope.sessions, None),
            ("audit", audited, gone, (1,)),
        ):
            inner = (namespace,) * where.count("?")  # a subquery's own namespace
            for chunk in session._chunks(sorted(ids)):
                rows = session._all(
                    f"SELECT * FROM {table} WHERE namespace = ? AND "
                    + where.format(session._marks(len(chunk))),
                    (namespace, *inner, *chunk),
                )
                for row in rows:
                    if key is not None:
                        ident = (table, tuple(row[i] for i in key))
                        if ident in seen:
                            continue
                        seen.add(ident)
                    for value in row:
                        yield table, value

    def _blank_records(
        self, namespace: str, record_ids: Collection[str], *, kind: str | None = None
    ) -> None:
        """Blank the records' text; ``kind``: their kind too (an erased record's kind is
        caller text; a retraction blanked for naming the erased keeps acting, so keeps its)."""
        session = self.session
        keys = self._keys_of(namespace, record_ids)
        kind_set = "" if kind is None else "kind = ?, "
        kind_arg = () if kind is None else (kind,)
        for chunk in session._chunks(record_ids):
            marks = session._marks(len(chunk))
            stored = [  # as ranked, before the key goes: key_frontiers holds the key's text
                codec.revision_node(row)
                for row in session._all(
                    f"SELECT {codec.REVISION_COLUMNS} FROM revisions WHERE namespace = ? "
                    f"AND key_name IS NOT NULL AND record_id IN ({marks})",
                    (namespace, *chunk),
                )
            ]
            session._run(
                f"UPDATE revisions SET {kind_set}content = '', meta = '{{}}', key_name = NULL, "
                f"key_scope = NULL WHERE namespace = ? AND record_id IN ({marks})",
                (*kind_arg, namespace, *chunk),
            )
            session._run(
                f"DELETE FROM vectors WHERE namespace = ? AND record_id IN ({marks})",
                (namespace, *chunk),
            )
            session._many(
                "DELETE FROM key_frontiers WHERE namespace = ? AND key_name = ? AND tree = ? "
                "AND depth = ? AND seq = ? AND record_id = ? AND revision = ?",
                [row for node in stored for row in key_rows(namespace, node)],
            )
        for chunk in session._chunks(keys):  # a group only erased records held goes too
            session._run(
                "DELETE FROM tree_keys WHERE namespace = ? "
                f"AND key_name IN ({session._marks(len(chunk))}) AND NOT EXISTS (SELECT 1 "
                "FROM key_frontiers k JOIN revisions r ON r.namespace = k.namespace "
                "AND r.record_id = k.record_id AND r.revision = k.revision "
                "WHERE k.namespace = tree_keys.namespace AND k.key_name = tree_keys.key_name "
                "AND k.tree = tree_keys.tree AND CASE WHEN r.key_scope IS NULL THEN '-' "
                "ELSE '+' || r.key_scope END = tree_keys.scope_tag)",
                (namespace, *chunk),
            )

    def _keys_of(self, namespace: str, record_ids: Collection[str]) -> set[str]:
        session = self.session
        found: set[str] = set()
        for chunk in session._chunks(record_ids):
            rows = session._all(
                "SELECT DISTINCT key_name FROM revisions WHERE namespace = ? AND key_name IS "
                f"NOT NULL AND record_id IN ({session._marks(len(chunk))})",
                (namespace, *chunk),
            )
            found.update(str(row[0]) for row in rows)
        return found

    def _surviving_keys(self, namespace: str, keys: Collection[str]) -> list[str]:
        session = self.session
        found: list[str] = []
        for chunk in session._chunks(keys):
            rows = session._all(  # every keyed revision has a rank row; erased ones have none
                "SELECT DISTINCT key_name FROM key_frontiers WHERE namespace = ? "
                f"AND key_name IN ({session._marks(len(chunk))})",
                (namespace, *chunk),
            )
            found.extend(str(row[0]) for row in rows)
        return found

    def _retractions_naming(
        self, namespace: str, erased: Collection[str], keys: Collection[str]
    ) -> list[str]:
        """Retractions whose targets or key name what is being erased: their reason and
        detail are text about it. Two index lookups, whatever the number of retractions."""
        session = self.session
        found: set[str] = set()
        for chunk in session._chunks(erased):
            rows = session._all(
                "SELECT id FROM retraction_targets WHERE namespace = ? "
                f"AND target IN ({session._marks(len(chunk))})",
                (namespace, *chunk),
            )
            found.update(str(row[0]) for row in rows)
        for chunk in session._chunks(keys):
            rows = session._all(
                "SELECT id FROM retractions WHERE namespace = ? "
                f"AND key_name IN ({session._marks(len(chunk))})",
                (namespace, *chunk),
            )
            found.update(str(row[0]) for row in rows)
        return sorted(found)
