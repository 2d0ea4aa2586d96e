"""What the SQL backends keep beside the engine's state: the repair queue, counters,
vectors, deliveries, the audit log, gauges and API keys."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Collection, Sequence
from contextlib import nullcontext
from typing import Any, Final

from ..audit import AuditEntry
from ..model import Delivery, RepairItem
from ..validation import check_text
from . import codec
from .base import RevisionKey
from .keys import ApiKeyRow
from .sqlsession import SQLSession

KEYS_LOCK: Final = "\x00api keys"  # the lock of key creation: no namespace is named this


class SQLLedger(SQLSession):
    """Queries over the side tables; ``SQLStore`` adds the engine's own."""

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

    # -- vectors ---------------------------------------------------------------------
    def put_vector(self, namespace: str, key: RevisionKey, vector: Sequence[float]) -> None:
        record_id, revision = key
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

    # -- service keys (KeyStore) --------------------------------------------------------
    def add_api_key(self, row: ApiKeyRow, admit: Callable[[list[ApiKeyRow]], None]) -> None:
        # One write transaction around the check and the insert: SQLite's BEGIN IMMEDIATE
        # and PostgreSQL's advisory lock on KEYS_LOCK admit one key creation at a time.
        with self.transaction(KEYS_LOCK):
            admit(self._api_key_rows(None))
            self._run(
                "INSERT INTO api_keys (key_id, secret_hash, tenant, namespaces, created) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    row.key_id, row.secret_hash, row.tenant, codec.dumps(list(row.namespaces)),
                    row.created,
                ),
            )  # fmt: skip

    def _api_key_rows(self, key_id: str | None) -> list[ApiKeyRow]:
        where, params = ("WHERE key_id = ?", (key_id,)) if key_id is not None else ("", ())
        with self.reading(KEYS_LOCK) if self._depth == 0 else nullcontext():
            rows = self._all(
                "SELECT key_id, secret_hash, tenant, namespaces, created FROM api_keys "
                f"{where} ORDER BY created, key_id",
                params,
            )
        return [
            ApiKeyRow(str(r[0]), str(r[1]), str(r[2]), tuple(codec.loads(r[3])), float(r[4]))
            for r in rows
        ]

    def get_api_key(self, key_id: str) -> ApiKeyRow | None:
        rows = self._api_key_rows(key_id)
        return rows[0] if rows else None

    def list_api_keys(self) -> list[ApiKeyRow]:
        return self._api_key_rows(None)

    def delete_api_key(self, key_id: str) -> bool:
        with self.transaction(KEYS_LOCK):
            found = self._one("SELECT 1 FROM api_keys WHERE key_id = ?", (key_id,)) is not None
            self._run("DELETE FROM api_keys WHERE key_id = ?", (key_id,))
        return found

    # -- erase cleanup -----------------------------------------------------------------
    # An erase commits its blanked rows and a row in erase_cleanup in one transaction; the
    # files are cleaned after the commit (a checkpoint cannot run inside a transaction).
    # Only a cleanup that completed deletes the rows it saw, so a crash or a busy reader
    # leaves the row, and the next open or finish_cleanup() resumes.
    def _mark_cleanup(self, namespace: str) -> None:
        self._run(
            "INSERT INTO erase_cleanup (namespace, seq) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (namespace, self._current_seq(namespace)),
        )

    def cleanup_pending(self) -> bool:
        """True while an erase's cleanup of the files has not completed."""
        with self._session():
            return self._one("SELECT 1 FROM erase_cleanup LIMIT 1") is not None

    def finish_cleanup(self) -> str | None:
        if self._depth != 0:
            return "cleanup cannot run inside a transaction"
        with self._session():
            due = self._all("SELECT namespace, seq FROM erase_cleanup")
            if not due:
                return None
            reason = self._clean_files()
            if reason is not None:
                return reason
            # the deletion's own WAL frames hold ids only: the next checkpoint takes them
            self._many("DELETE FROM erase_cleanup WHERE namespace = ? AND seq = ?", due)
        return None

    @abstractmethod
    def _clean_files(self) -> str | None:
        """Remove erased bytes from the database's files (nothing open in this session);
        None when done, else why not."""

    # -- audit and gauges --------------------------------------------------------------
    def append_audit(self, entry: AuditEntry) -> None:
        check_text(entry.reason, f"{entry.op} {', '.join(entry.ids)}: reason")
        # Both writes go by ``_many``: nothing reads their result, so PostgreSQL sends them
        # with the call's next statement instead of a round trip each.
        self._many(
            "INSERT INTO audit (namespace, seq, time, op, ids, actor, reason, revision) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(
                entry.namespace, entry.seq, entry.time, entry.op, codec.dumps(list(entry.ids)),
                entry.actor, entry.reason, entry.revision,
            )],
        )  # fmt: skip
        self._many(  # the entry's seq is new: its rows cannot conflict
            "INSERT INTO audit_ids (namespace, id, seq) VALUES (?, ?, ?)",
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
