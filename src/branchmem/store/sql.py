"""The engine's state in SQL, composed: ``SQLStore`` holds one object per table concern,
each holding the store's session, and hands each ``Store`` method to its object.

Shared by SQLite and PostgreSQL, which subclass ``SQLStore``. ``SQLSession`` runs the
statements and owns the transactions. The engine's tables: the conversation trees
(sqlevents.py), records' revisions and the indexes written with them (sqlrevisions.py), the
rank index and keyed reads (sqlkeyed.py), the bulk reader (sqlanswers.py), supersedes and
retractions (sqlrelations.py), still mixed in over sqlshared.py, and erasure
(sqlerasure.py); composed: statuses (sqlstatuses.py, ``StatusesTable``) and what a migration
fills from older rows (sqlmigrations.py, ``MigrationFills``, the session's
``_after_migration``). The side tables (repairs, counters, vectors,
deliveries, the audit log) are objects holding the session, each in the module named for
it, which ``SQLSideTables`` (sqlsidetables.py) holds and hands their ``Store`` methods to,
and the erase cleanup and the API keys (the ``KeyStore``) likewise.
"""

from __future__ import annotations

from collections.abc import Collection

from .base import Store
from .keys import KeyStore
from .sqlanswers import SQLAnswers
from .sqlerasure import SQLErasure
from .sqlevents import SQLEvents
from .sqlkeyed import SQLKeyed
from .sqlmigrations import MigrationFills
from .sqlrelations import SQLRelations
from .sqlrevisions import SQLRevisions
from .sqlsidetables import SQLSideTables
from .sqlstatuses import StatusesTable


class SQLStore(
    SQLEvents, SQLRevisions, SQLKeyed, SQLAnswers, SQLRelations, SQLErasure, SQLSideTables,
    Store, KeyStore,
):  # fmt: skip
    """A ``Store`` over a DB-API connection; subclasses choose the database."""

    def __init__(self) -> None:
        super().__init__()
        self.status_rows = StatusesTable(self)
        self.migration_fills = MigrationFills(self)

    # -- the session's hooks -----------------------------------------------------------
    def _after_migration(self, version: int) -> None:
        self.migration_fills.after_migration(version)

    # -- statuses ----------------------------------------------------------------------
    def set_status(self, namespace: str, item_id: str, status: str | None) -> None:
        self.status_rows.set_status(namespace, item_id, status)

    def statuses(self, namespace: str, ids: Collection[str]) -> dict[str, str]:
        return self.status_rows.statuses(namespace, ids)
