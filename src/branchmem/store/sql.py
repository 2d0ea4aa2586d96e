"""The engine's state in SQL, composed: ``SQLStore`` is one mixin per engine concern.

Shared by SQLite and PostgreSQL, which subclass ``SQLStore``. ``SQLSession`` below every
mixin runs the statements and owns the transactions. The engine's tables: the conversation
trees (sqlevents.py), records' revisions and the indexes written with them (sqlrevisions.py),
the rank index and keyed reads (sqlkeyed.py), the bulk reader (sqlanswers.py), supersedes and
retractions (sqlrelations.py), statuses (sqlstatuses.py), erasure (sqlerasure.py) and what a
migration fills from older rows (sqlmigrations.py); what they ask of each other is declared
in sqlshared.py. The side tables (repairs, counters, vectors, deliveries, the audit log) are
objects holding the session, each in the module named for it, which ``SQLSideTables``
(sqlsidetables.py) holds and hands their ``Store`` methods to, and the erase cleanup and
the API keys (the ``KeyStore``) likewise.
"""

from __future__ import annotations

from .base import Store
from .keys import KeyStore
from .sqlanswers import SQLAnswers
from .sqlerasure import SQLErasure
from .sqlevents import SQLEvents
from .sqlkeyed import SQLKeyed
from .sqlmigrations import SQLMigrations
from .sqlrelations import SQLRelations
from .sqlrevisions import SQLRevisions
from .sqlsidetables import SQLSideTables
from .sqlstatuses import SQLStatuses


class SQLStore(
    SQLEvents, SQLRevisions, SQLKeyed, SQLAnswers, SQLRelations, SQLStatuses, SQLErasure,
    SQLMigrations, SQLSideTables, Store, KeyStore,
):  # fmt: skip
    """A ``Store`` over a DB-API connection; subclasses choose the database."""
