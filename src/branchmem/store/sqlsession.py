"""What SQLite and PostgreSQL share below the queries: execution, transactions, migrations.

A backend supplies the connection, how a write transaction begins (SQLite takes the database
write lock with ``BEGIN IMMEDIATE``; PostgreSQL takes a per-namespace advisory lock) and how
its driver's errors map onto ``branchmem.errors``. Queries use ``?`` placeholders and a
portable subset of SQL; ``_sql`` rewrites them for a driver that wants ``%s``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, NamedTuple

from .._core.provenance import RevisionNode
from .._core.topology import EventNode
from ..errors import InvalidInput, SchemaVersionError
from .schema import MIGRATIONS, SCHEMA_VERSION

CHUNK = 500  # ids per IN (...) list


class Alongside(NamedTuple):
    """Reads one table asks to send with another's (in one round trip on PostgreSQL), and
    what takes their rows."""

    statements: list[tuple[str, Sequence[Any]]]
    take: Callable[[list[list[tuple[Any, ...]]]], None]


class SQLSession(ABC):
    """A DB-API connection with the store's transactions; subclasses choose the database."""

    bigint = "INTEGER"
    double = "REAL"
    blob = "BLOB"
    without_rowid = ""  # a table stored in its primary key's order (SQLite only)
    sessionless = False  # ``_session`` holds nothing (one connection for the store's life)

    def __init__(self) -> None:
        self._depth = 0
        self._seqs: dict[str, int] = {}
        self._seqs_read: dict[str, int] = {}  # as read at BEGIN (PostgreSQL), unchanged
        self._held: dict[str, dict[tuple[Any, ...], tuple[Any, ...]]] = {}
        self._snapshot = False  # inside an outermost read snapshot: nothing writes
        self._commits = 0  # outermost write transactions ended, committed or not
        # ``citing_any``'s answer, read alongside another read for the ids it is asked next
        # (``RevisionsTable.citing_alongside``): (namespace, targets, rows), until a write
        self._citing_alongside: tuple[str, frozenset[str], list[Any]] | None = None
        self._new_caches()
        self._new_facts()

    # -- what a backend supplies -------------------------------------------------------
    @abstractmethod
    def _connection(self) -> Any:
        """The connection of the current call."""

    @abstractmethod
    def _session(self) -> AbstractContextManager[None]:
        """Hold a connection for one public call (a pool checkout, or nothing)."""

    @abstractmethod
    def _begin_write(self, namespace: str | None) -> None:
        """Start the outermost write transaction, serialising writers of ``namespace``."""

    @abstractmethod
    def _clean_files(self) -> str | None:
        """Remove erased bytes from the database's files (nothing open in this session);
        None when done, else why not (``sqlcleanup.EraseCleanupTable``)."""

    @abstractmethod
    def _translate(self, error: Exception) -> Exception | None:
        """The ``branchmem.errors`` exception for a driver error (None: not a driver error)."""

    def _sql(self, text: str) -> str:
        return text

    # -- execution ---------------------------------------------------------------------
    def _run(self, text: str, params: Sequence[Any] = ()) -> Any:
        if self._held:
            self._release()
        try:
            return self._connection().execute(self._sql(text), tuple(params))
        except UnicodeEncodeError as error:  # a backstop: the stores check text first
            raise InvalidInput(f"text the database cannot store: {error}") from error
        except Exception as error:
            mapped = self._translate(error)
            if mapped is None:
                raise
            raise mapped from error

    def _all(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._run(text, params).fetchall()  # a new list
        return rows

    def _one(self, text: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        row = self._run(text, params).fetchone()
        return None if row is None else tuple(row)

    def _all_together(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[tuple[Any, ...]]]:
        """The rows of several reads, none needing another's answer (PostgreSQL sends them
        in one round trip)."""
        return [self._all(text, params) for text, params in statements]

    def _chunks(self, ids: Iterable[str]) -> Iterator[list[str]]:
        items = list(dict.fromkeys(ids))
        for start in range(0, len(items), CHUNK):
            yield items[start : start + CHUNK]

    @staticmethod
    def _marks(count: int) -> str:
        return ",".join("?" * count)

    # -- held writes -------------------------------------------------------------------
    # A batch writes one row per event (some twice: placed, then attached when a waiting
    # parent arrives) and a few index rows per record, in many small groups (``add_records``
    # writes its held records out whenever one cites another). Inside a transaction such rows
    # are held and written with one multi-row statement per table when the call next touches
    # the database (any statement runs after them, so a read always sees them) or before
    # COMMIT; the last row held for a key wins, as the upserts it replaces would have. A
    # rollback drops them.
    def _hold(self, text: str, key: tuple[Any, ...], row: tuple[Any, ...]) -> None:
        self._citing_alongside = None  # a write may change what it answered
        if self._depth == 0:
            self._many(text, [row])
            return
        self._held.setdefault(text, {})[key] = row

    def _hold_rows(self, text: str, rows: list[tuple[Any, ...]], key_width: int = 0) -> None:
        """Hold many rows of one statement; a row's key is its first ``key_width`` values
        (0: the whole row, for inserts that ignore a repeated row anyway)."""
        self._citing_alongside = None
        if self._depth == 0:
            self._many(text, rows)
            return
        held = self._held.setdefault(text, {})
        for row in rows:
            held[row[:key_width] if key_width else row] = row

    def _release(self) -> None:
        held, self._held = self._held, {}
        for text, rows in held.items():
            self._many(text, list(rows.values()))

    def _drop_held(self) -> None:
        """Forget the writes not sent yet: their transaction (or savepoint) rolls back."""
        if self._held:
            self._held = {}

    # -- transactions ------------------------------------------------------------------
    # Within one call (a transaction or a read snapshot) events and revisions are cached:
    # nothing else can change them while the call holds its lock or snapshot. The namespace
    # sequence is counted in memory and written back before COMMIT.
    # Every read passes here twice (a snapshot's start and end), most often with nothing
    # cached: new containers only replace ones that hold something.
    def _forget(self) -> None:
        if self._events or self._revisions or self._children:
            self._new_caches()
        self._citing_alongside = None
        self._forget_facts()

    def _new_caches(self) -> None:
        self._events: dict[tuple[str, str], EventNode | None] = {}
        self._revisions: dict[tuple[str, str], list[RevisionNode]] = {}
        self._children: dict[tuple[str, str], list[str]] = {}

    def _forget_facts(self) -> None:
        """Drop the facts a keyed read's statements brought along (``RankIndex``'s
        ``key_candidates``, ``StatusesTable.statuses``): kept for the rest of a read snapshot
        only, where nothing writes, they answer the later questions about the same records
        without another statement."""
        if (
            self._known_statuses
            or self._unsuperseded
            or self._untargeted
            or self._unretracted_keys
            or self._newest
        ):
            self._new_facts()

    def _new_facts(self) -> None:
        self._known_statuses: dict[tuple[str, str], str | None] = {}
        self._unsuperseded: set[tuple[str, str]] = set()  # no record supersedes these
        self._untargeted: set[tuple[str, str]] = set()  # no retraction names these
        self._unretracted_keys: set[tuple[str, str]] = set()  # no retraction names these
        self._newest: dict[tuple[str, str], RevisionNode] = {}  # a record's latest revision

    @contextmanager
    def transaction(self, namespace: str | None = None) -> Iterator[None]:
        if self._depth > 0:
            name = f"bm_{self._depth}"
            self._savepoint(name)
            self._depth += 1
            snapshot, self._snapshot = self._snapshot, False  # a write inside a read
            self._forget_facts()
            try:
                yield
                # inside the try: a write sent with it that fails rolls back to the savepoint
                self._release_savepoint(name)
            except BaseException:
                if self._savepoint_sent(name):
                    self._drop_held()
                    self._run(f"ROLLBACK TO SAVEPOINT {name}")
                    self._run(f"RELEASE SAVEPOINT {name}")
                else:  # nothing of the block reached the server: nothing to undo there
                    self._drop_unsent(name)
                self._forget()
                raise
            finally:
                self._depth -= 1
                self._forget_facts()
                self._snapshot = snapshot
            return
        with self._session():
            self._seqs, self._seqs_read = {}, {}
            self._begin_write(namespace)  # may read the namespace's sequence with its lock
            self._depth = 1
            self._forget()
            try:
                yield
                self._release()
                self._flush_seqs()
                self._depth = 0
                self._forget()
                self._commit()  # in the try: writes sent with it may still fail
            except BaseException:
                self._depth = 0
                self._drop_held()
                self._forget()
                self._seqs, self._seqs_read = {}, {}  # numbers drawn by the rolled-back writes
                self._rollback()
                raise
            finally:
                self._commits += 1
            self._after_commit()

    # A nested transaction is a savepoint. These let a backend with round trips send the
    # SAVEPOINT and RELEASE with the next statement rather than alone (PostgreSQL).
    def _savepoint(self, name: str) -> None:
        """Open the savepoint ``name`` (here at once)."""
        self._run(f"SAVEPOINT {name}")

    def _savepoint_sent(self, name: str) -> bool:
        """Whether ``SAVEPOINT name`` has reached the server (here: always, at once)."""
        return True

    def _drop_unsent(self, name: str) -> None:
        """Forget what a failed block wrote while its savepoint had not been sent."""
        self._drop_held()

    def _release_savepoint(self, name: str) -> None:
        """End the savepoint ``name``, its block done: the writes it holds go with it."""
        self._run(f"RELEASE SAVEPOINT {name}")

    def _after_commit(self) -> None:  # noqa: B027 - SQLite has nothing to do
        """Upkeep after a write transaction committed, outside it (PostgreSQL: statistics)."""

    def reading(self, namespace: str) -> AbstractContextManager[None]:
        return _Snapshot(self)

    def _open_snapshot(self) -> None:
        self._begin_read()
        self._depth = 1
        self._forget()  # a read outside any call (a depth-0 heads()) may have cached
        self._snapshot = True

    def _close_snapshot(self) -> None:
        self._snapshot = False
        self._depth = 0
        if self._held:  # a read-only snapshot has nothing to write
            self._held = {}
        self._forget()
        self._end_read()

    def _end_read(self) -> None:
        # every read ends here: the statement itself, without ``_run``'s bookkeeping and
        # without a ``suppress`` object (a lost connection has rolled back already)
        try:  # noqa: SIM105
            self._connection().execute("ROLLBACK")
        except Exception:
            pass

    def _begin_read(self) -> None:
        self._run("BEGIN")

    def _flush_seqs(self) -> None:
        # a write whose result nobody reads: PostgreSQL sends it with the COMMIT
        self._many(
            "INSERT INTO namespaces (namespace, seq) VALUES (?, ?) "
            "ON CONFLICT (namespace) DO UPDATE SET seq = excluded.seq",
            [
                (namespace, value)
                for namespace, value in self._seqs.items()
                if self._seqs_read.get(namespace) != value
            ],
        )
        self._seqs, self._seqs_read = {}, {}

    def _commit(self) -> None:
        self._run("COMMIT")

    def _rollback(self) -> None:
        with suppress(Exception):  # a lost connection has rolled back already
            self._run("ROLLBACK")

    # -- schema ------------------------------------------------------------------------
    def schema_version(self) -> int:
        """The version the database is at (0: empty)."""
        with self._session():
            exists = self._table_exists("branchmem_schema")
            if not exists:
                return 0
            row = self._one("SELECT MAX(version) FROM branchmem_schema")
            return int(row[0]) if row and row[0] is not None else 0

    @abstractmethod
    def _table_exists(self, name: str) -> bool: ...

    def migrate(self, *, upgrade: bool = True) -> int:
        """Bring the schema to this version; refuse a database written by a newer one."""
        current = self.schema_version()
        if current > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"the store is at schema version {current}, newer than this branchmem "
                f"({SCHEMA_VERSION}); upgrade branchmem"
            )
        if current < SCHEMA_VERSION and current > 0 and not upgrade:
            raise SchemaVersionError(
                f"the store is at schema version {current}; run `branchmem migrate` to "
                f"upgrade it to {SCHEMA_VERSION}"
            )
        if current == SCHEMA_VERSION:
            return current  # nothing to do: opening a current store takes no write lock
        with self.transaction(None):
            current = self._locked_version()  # another process may have migrated meanwhile
            for version in range(current + 1, SCHEMA_VERSION + 1):
                self._before_migration(version)
                for statement in MIGRATIONS[version - 1]:
                    self._run(statement.format(**self._dialect()))
                self._after_migration(version)
                self._run("INSERT INTO branchmem_schema (version) VALUES (?)", (version,))
        return SCHEMA_VERSION

    def _dialect(self) -> dict[str, str]:
        """What fills the placeholders of ``schema.MIGRATIONS``."""
        return {
            "bigint": self.bigint, "double": self.double, "blob": self.blob,
            "without_rowid": self.without_rowid,
        }  # fmt: skip

    def _after_migration(self, version: int) -> None:  # noqa: B027 - most have nothing
        """Fill what the portable statements of ``version`` created from older rows."""

    def _before_migration(self, version: int) -> None:  # noqa: B027 - most have nothing
        """Drop what only this database has before the portable statements of ``version``."""

    def _locked_version(self) -> int:
        if not self._table_exists("branchmem_schema"):
            return 0
        row = self._one("SELECT MAX(version) FROM branchmem_schema")
        return int(row[0]) if row and row[0] is not None else 0

    # -- sequence ----------------------------------------------------------------------
    def next_seq(self, namespace: str) -> int:
        if namespace in self._seqs:
            self._seqs[namespace] += 1
            return self._seqs[namespace]
        row = self._one(
            "INSERT INTO namespaces (namespace, seq) VALUES (?, 1) "
            "ON CONFLICT (namespace) DO UPDATE SET seq = namespaces.seq + 1 RETURNING seq",
            (namespace,),
        )
        assert row is not None
        if self._depth > 0:
            self._seqs[namespace] = int(row[0])
        return int(row[0])

    def _many(self, text: str, rows: list[tuple[Any, ...]]) -> None:
        self._citing_alongside = None
        if self._held:
            self._release()
        if not rows:
            return
        try:
            self._connection().executemany(self._sql(text), rows)
        except UnicodeEncodeError as error:
            raise InvalidInput(f"text the database cannot store: {error}") from error
        except Exception as error:
            mapped = self._translate(error)
            if mapped is None:
                raise
            raise mapped from error

    def _current_seq(self, namespace: str) -> int:
        """The last arrival number drawn, without drawing one (every backend numbers alike)."""
        if namespace in self._seqs:
            return self._seqs[namespace]
        row = self._one("SELECT seq FROM namespaces WHERE namespace = ?", (namespace,))
        return int(row[0]) if row else 0

    def arrival_seq(self, namespace: str) -> int | None:
        return self._current_seq(namespace)


class _Snapshot:
    """``SQLSession.reading``: one snapshot for the reads of a call, in the call's session
    (a no-op inside a transaction or snapshot). A class, not a generator: every read passes
    here, and a generator context costs twice as much."""

    __slots__ = ("_outer", "_session", "_store")

    def __init__(self, store: SQLSession) -> None:
        self._store = store

    def __enter__(self) -> None:
        store = self._store
        self._outer = store._depth == 0
        if not self._outer:
            return
        if store.sessionless:  # one connection for the store's life: nothing to hold
            self._session = None
            store._open_snapshot()
            return
        self._session = store._session()
        self._session.__enter__()
        try:
            store._open_snapshot()
        except BaseException as error:
            self._session.__exit__(type(error), error, error.__traceback__)
            raise

    def __exit__(self, *exc: Any) -> bool | None:
        if not self._outer:
            return None
        if self._session is None:
            self._store._close_snapshot()
            return None
        try:
            self._store._close_snapshot()
        except BaseException as error:  # the cleanup's error replaces the body's, as in a
            if self._session.__exit__(type(error), error, error.__traceback__):  # finally
                return True
            raise
        return self._session.__exit__(*exc)
