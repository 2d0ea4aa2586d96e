"""The engine's state in SQL, composed: ``SQLStore`` is one mixin per concern.

Shared by SQLite and PostgreSQL, which subclass ``SQLStore``. ``SQLSession`` below every
mixin runs the statements and owns the transactions. The engine's tables: the conversation
trees (sqlevents.py), records' revisions and the indexes written with them (sqlrevisions.py),
the rank index and keyed reads (sqlkeyed.py), the bulk reader (sqlanswers.py), supersedes and
retractions (sqlrelations.py), statuses (sqlstatuses.py), erasure (sqlerasure.py) and what a
migration fills from older rows (sqlmigrations.py); what they ask of each other is declared
in sqlshared.py. The side tables: one mixin each, named for it.
"""

from __future__ import annotations

from .base import Store
from .keys import KeyStore
from .sqlanswers import SQLAnswers
from .sqlapikeys import SQLApiKeys
from .sqlaudit import SQLAudit
from .sqlcleanup import SQLEraseCleanup
from .sqldeliveries import SQLDeliveries
from .sqlerasure import SQLErasure
from .sqlevents import SQLEvents
from .sqlgauges import SQLGauges
from .sqlkeyed import SQLKeyed
from .sqlmigrations import SQLMigrations
from .sqlrelations import SQLRelations
from .sqlrepairs import SQLRepairs
from .sqlrevisions import SQLRevisions
from .sqlstatuses import SQLStatuses
from .sqlvectors import SQLVectors


class SQLStore(
    SQLEvents, SQLRevisions, SQLKeyed, SQLAnswers, SQLRelations, SQLStatuses, SQLErasure,
    SQLMigrations, SQLRepairs, SQLGauges, SQLVectors, SQLDeliveries, SQLAudit, SQLEraseCleanup,
    SQLApiKeys, Store, KeyStore,
):  # fmt: skip
    """A ``Store`` over a DB-API connection; subclasses choose the database."""
