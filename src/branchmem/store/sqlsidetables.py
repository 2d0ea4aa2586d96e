"""The side tables in SQL, composed rather than mixed in: each is an object holding the
store's session (``RepairsTable``, ``GaugesTable``, ``VectorsTable``, ``DeliveriesTable``,
``AuditTable``, ``EraseCleanupTable``, ``ApiKeysTable``, each in the module named for it),
and this class, one base of ``SQLStore``, hands each ``Store`` method of theirs to its
table. They hold no history and are never gated; each reads only the session's execution
(``_run``, ``_all``, ``_one``, ``_many``, ``_chunks``, ``_marks``; erase cleanup also
``_session``, ``_depth``, ``_current_seq`` and the backend's ``_clean_files``; the API keys
its transactions), nothing another table keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from ..audit import AuditEntry
from ..model import Delivery, RepairItem
from .base import RevisionKey
from .keys import ApiKeyRow, KeyStore
from .sqlapikeys import ApiKeysTable
from .sqlaudit import AuditTable
from .sqlcleanup import EraseCleanupTable
from .sqldeliveries import DeliveriesTable
from .sqlgauges import GaugesTable
from .sqlrepairs import RepairsTable
from .sqlsession import SQLSession
from .sqlvectors import VectorsTable


class SQLSideTables(SQLSession):
    """The side tables' objects over this session, and the ``Store`` methods they answer."""

    def __init__(self) -> None:
        super().__init__()
        self.repair_queue = RepairsTable(self)
        self.gauge_counts = GaugesTable(self)
        self.vector_rows = VectorsTable(self)
        self.delivery_rows = DeliveriesTable(self)
        self.audit_log = AuditTable(self)
        self.erase_cleanup = EraseCleanupTable(self)
        self.api_key_rows = ApiKeysTable(self)

    # -- repair queue ------------------------------------------------------------------
    def put_repair(self, namespace: str, item: RepairItem) -> None:
        self.repair_queue.put_repair(namespace, item)

    def repairs(self, namespace: str) -> list[RepairItem]:
        return self.repair_queue.repairs(namespace)

    def remove_repairs(
        self, namespace: str, *, record_id: str | None = None, cause: str | None = None
    ) -> None:
        self.repair_queue.remove_repairs(namespace, record_id=record_id, cause=cause)

    # -- counters and gauges -----------------------------------------------------------
    def bump_counter(self, namespace: str, name: str) -> None:
        self.gauge_counts.bump_counter(namespace, name)

    def counters(self, namespace: str) -> dict[str, int]:
        return self.gauge_counts.counters(namespace)

    def gauges(self, namespace: str) -> dict[str, int]:
        return self.gauge_counts.gauges(namespace)

    # -- vectors -----------------------------------------------------------------------
    def put_vector(self, namespace: str, key: RevisionKey, vector: Sequence[float]) -> None:
        self.vector_rows.put_vector(namespace, key, vector)

    def vectors(
        self, namespace: str, keys: Collection[RevisionKey]
    ) -> dict[RevisionKey, list[float]]:
        return self.vector_rows.vectors(namespace, keys)

    # -- deliveries --------------------------------------------------------------------
    def add_delivery(self, namespace: str, delivery: Delivery) -> None:
        self.delivery_rows.add_delivery(namespace, delivery)

    def deliveries(self, namespace: str, session: str) -> list[Delivery]:
        return self.delivery_rows.deliveries(namespace, session)

    # -- audit -------------------------------------------------------------------------
    def append_audit(self, entry: AuditEntry) -> None:
        self.audit_log.append_audit(entry)

    def audit(
        self,
        namespace: str,
        *,
        id: str | None = None,
        op: str | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> list[AuditEntry]:
        return self.audit_log.audit(namespace, id=id, op=op, since=since, until=until)

    # -- erase cleanup -----------------------------------------------------------------
    def cleanup_pending(self) -> bool:
        """True while an erase's cleanup of the files has not completed."""
        return self.erase_cleanup.cleanup_pending()

    def cleanup_due(self, namespace: str) -> bool:
        return self.erase_cleanup.cleanup_due(namespace)

    def finish_cleanup(self) -> str | None:
        return self.erase_cleanup.finish_cleanup()

    # -- the service's API keys (``KeyStore``) ----------------------------------------
    def api_keys(self) -> KeyStore:
        """``Store.api_keys``: the ``api_keys`` table."""
        return self.api_key_rows

    def add_api_key(self, row: ApiKeyRow, admit: Callable[[list[ApiKeyRow]], None]) -> None:
        self.api_key_rows.add_api_key(row, admit)

    def get_api_key(self, key_id: str) -> ApiKeyRow | None:
        return self.api_key_rows.get_api_key(key_id)

    def list_api_keys(self) -> list[ApiKeyRow]:
        return self.api_key_rows.list_api_keys()

    def delete_api_key(self, key_id: str) -> bool:
        return self.api_key_rows.delete_api_key(key_id)
