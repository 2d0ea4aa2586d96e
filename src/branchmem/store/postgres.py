"""PostgreSQL for scale-out: many processes (API workers) on one database, or a Citus cluster.

Connections come from a ``psycopg_pool.ConnectionPool`` and run in autocommit mode, so the
shared SQL layer's own ``BEGIN``/``SAVEPOINT``/``COMMIT`` statements delimit transactions.
One public ``Memory`` call holds one connection for its duration. Opening connects once
before the pool does, so a connection that cannot succeed fails at once with libpq's reason.

Concurrency: a write transaction takes a transaction-scoped advisory lock keyed on its
namespace before its first read, so the writers of one namespace run one at a time across
every process, and writers of different namespaces run in parallel. Writes run at READ
COMMITTED, which is exact here because nothing else writes the namespace meanwhile. Migrations
take one global advisory lock exclusively (writers take it shared), so several processes may
migrate a new database at once. Reads run in a ``REPEATABLE READ READ ONLY`` snapshot.

Retries: a call cannot be replayed from here (its body is the engine's code), so only what
happens before the body's first statement is answered is retried, with jittered exponential
backoff: checkout, and the pipeline that carries ``BEGIN``, the lock and that statement (the
body has seen no answer yet, so it is all sent again; a ``COMMIT`` never goes with it), when
the connection was lost (e.g. a server restart or an idle connection killed by a proxy) or the
server reports a serialization failure or a deadlock.
A failure later in a call rolls the call back entirely and surfaces as ``StorageError``;
callers may repeat an add, since an identical re-add is a no-op (see docs/scaling.md).
"""

from __future__ import annotations

import hashlib
import random
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from functools import lru_cache
from typing import Any, Final

from .._core.keyed import KeyedReader
from ..bytescan import clear_postgres_stats_of_empty, postgres_row_hits
from ..errors import ConflictError, InvalidInput, MissingExtra, StorageError
from ..receipt import StoreScan
from .readahead import ReadAhead
from .residue import POSTGRES_CANNOT_CLEAN, SHORT_IN_FILES
from .sql import SQLStore
from .sqlpgtables import (
    NUL_REFUSED,
    PostgresBulkReader,
    PostgresEventsTable,
    PostgresRankIndex,
    array_literal,
    text_array,
)

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg.conninfo import conninfo_to_dict
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as missing:  # the base install: one line naming the extra, no traceback
    raise MissingExtra("PostgreSQL support", "postgres", missing.name) from missing

ATTEMPTS = 5  # tries to start a transaction before giving up
BACKOFF_S = 0.05  # first retry delay; doubles per attempt, with jitter
LOCK_TIMEOUT = "30s"  # like SQLite's busy_timeout: a writer waits this long for its namespace
MIGRATION_LOCK = 0x62_72_61_6E_63_68_6D_6D  # "branchmm": the one global lock key
READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
# The store's queries go from a few keys (an anchor, the ids of a path or a batch) to their
# rows through an index; a plan that reads a whole table is wrong at every size. These make the
# plan follow the query, not the statistics of the moment (which lag behind a bulk load until
# autovacuum's ANALYZE): every execution is planned with its own parameters (a generic plan,
# cached while a table was small, kept its sequential scans after the table grew ~100x), and
# joins are nested loops over indexes, never a hash or merge join of a whole table.
PLANNER_SETTINGS = {
    "plan_cache_mode": "force_custom_plan",
    "enable_hashjoin": "off",
    "enable_mergejoin": "off",
}
CONNECT_TIMEOUT_S = 5  # libpq's connect_timeout unless the URL sets one: a silent host fails fast
ANALYZE_AFTER = 1_000  # rows a table gains by writes before this store first analyzes it
# The tables whose rows (or index entries) can hold text an erase removes: content, role,
# kind, meta, keys and scopes, reasons, vectors (derived from text).
TEXT_TABLES: Final = (
    "events", "revisions", "vectors", "repairs", "retractions", "audit", "key_frontiers",
    "tree_keys",
)  # fmt: skip
ANALYZE_GROWTH = 4  # then again each time the table has grown this many times over
# An INSERT of many rows becomes one statement, ``INSERT ... SELECT * FROM unnest(?::text[],
# ...) [ON CONFLICT ...]`` over one array per column: one executor run for the whole batch,
# sent with the call's next statement. Outside a transaction, rows that must all be new go by
# ``COPY`` (which a pipeline cannot carry).
MULTI_ROW_INSERT = re.compile(r"INSERT INTO (\w+) \(([^)]*)\) VALUES \((?:\?, )*\?\)(.*)", re.S)
INSERT_INTO = re.compile(r"\s*INSERT INTO (\w+)")
SAVEPOINT_STATEMENTS = ("SAVEPOINT ", "RELEASE SAVEPOINT ")  # queued, they need no answer


@lru_cache(maxsize=1024)
def _inserted_table(text: str) -> str | None:
    """The table an ``INSERT`` statement grows, or None for any other statement."""
    match = INSERT_INTO.match(text)
    return match.group(1) if match else None


def namespace_lock(namespace: str) -> int:
    """The advisory lock key of a namespace: a stable signed 64-bit hash, same in every process.

    Two namespaces sharing a key only make their writers wait for each other.
    """
    digest = hashlib.blake2b(namespace.encode("utf-8"), digest_size=8).digest()
    key = int.from_bytes(digest, "big", signed=True)
    return key if key != MIGRATION_LOCK else key ^ 1


@lru_cache(maxsize=1024)
def _placeholders(text: str) -> str:
    """``?`` -> ``%s``; a literal ``%`` is doubled so the driver does not read it."""
    return text.replace("%", "%%").replace("?", "%s")


IN_LIST = re.compile(r"IN \((\?(?:,\?)*)\)")


@lru_cache(maxsize=1024)
def _array_form(text: str) -> tuple[str, tuple[tuple[int, int] | int, ...]]:
    """The shared queries' ``IN (?, ?, ...)`` lists as ``= ANY(?)``, one array parameter,
    and for each placeholder left the parameter it takes (an index) or packs (a span).

    One text whatever the number of ids: it is prepared once and planned alike at every
    size (an index scan per id), and no list is split into chunks. The array is the result
    of a sub-select, not a constant: with a constant, every custom plan estimated each id's
    selectivity against the column's statistics (the children of a batch's ~800 ids: 1 ms to
    plan, 0.2 ms to run; planning was nearly a third of the server's time while building
    10,000 records). The plan is the same index scan either way."""
    taken: list[tuple[int, int] | int] = []
    pieces: list[str] = []
    index = last = 0
    for match in IN_LIST.finditer(text):
        before = text[last : match.start()]
        for _ in range(before.count("?")):
            taken.append(index)
            index += 1
        width = match.group(1).count("?")
        taken.append((index, index + width))
        index += width
        # every list the queries pass holds ids
        pieces.append(before + "= ANY(ARRAY(SELECT unnest(?::text[])))")
        last = match.end()
    rest = text[last:]
    taken.extend(range(index, index + rest.count("?")))
    return "".join(pieces) + rest, tuple(taken)


def describe(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error:
        return "<unparsable PostgreSQL URL>"
    host = params.get("host") or "localhost"
    port = params.get("port") or "5432"
    return f"postgresql://{host}:{port}/{params.get('dbname') or ''}"


def connect_failure(error: BaseException) -> str:
    """Why libpq could not connect, on one line: the server's reason (``password
    authentication failed for user "alice"``, ``database "x" does not exist``) or the
    network's (``Connection refused``), without the host prefix, hints and repeats."""
    reasons: list[str] = []
    for line in str(error).splitlines():
        reason = line.strip()
        if " failed: " in reason:  # 'connection to server at "h", port p failed: WHY'
            reason = reason.rsplit(" failed: ", 1)[1]
        reason = " ".join(re.sub(r"^(?:FATAL|ERROR):\s*", "", reason).split())
        if reason and not reason.startswith(NOT_REASONS) and reason not in reasons:
            reasons.append(reason)
    return "; ".join(reasons) or type(error).__name__


NOT_REASONS = ("Is the server running", "Multiple connection attempts", "- host:")


def _retryable(error: Exception, connection: psycopg.Connection[Any] | None) -> bool:
    if isinstance(error, pg_errors.SerializationFailure | pg_errors.DeadlockDetected):
        return True
    broken = connection is None or connection.closed or connection.broken
    return isinstance(error, psycopg.OperationalError) and broken


class _Rows:
    """Rows fetched on a connection that has gone back to the pool."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None


class PostgresStore(SQLStore):
    """Storage in one PostgreSQL database (or a Citus cluster distributed by namespace)."""

    backend = "postgresql"

    bigint = "BIGINT"
    double = "DOUBLE PRECISION"
    blob = "BYTEA"

    def __init__(
        self,
        url: str,
        *,
        migrate: bool = False,
        min_size: int = 1,
        max_size: int = 4,
        timeout: float = 30.0,
        prepare_threshold: int | None = 5,
        analyze_after: int = ANALYZE_AFTER,
    ) -> None:
        """``min_size``/``max_size``: the pool; ``timeout``: seconds to wait for a connection;
        ``prepare_threshold=None`` turns server-side prepared statements off (for a pooler
        that cannot carry them); ``analyze_after``: rows a table gains before this store
        first analyzes it (see ``_after_commit``)."""
        super().__init__(
            events_table=PostgresEventsTable,
            rank_index=PostgresRankIndex,
            bulk_reader=PostgresBulkReader,
        )
        self.url = url
        self.timeout = timeout
        self.analyze_after = analyze_after
        self._types: dict[str, dict[str, str]] = {}
        self._grown: dict[str, int] = {}  # rows inserted per table since its last ANALYZE
        self._analyzed: dict[str, float] = {}  # rows per table at that ANALYZE
        self._conn: psycopg.Connection[Any] | None = None
        self._queued: list[tuple[str, list[tuple[Any, ...]]]] = []  # writes not sent yet
        self._opening: list[tuple[str, Sequence[Any]]] = []  # the BEGIN not sent yet
        self._opening_seq: str | None = None  # the namespace whose sequence it reads
        self._pool: ConnectionPool[psycopg.Connection[Any]] | None = None
        kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": prepare_threshold}
        self._probe(url, kwargs)
        try:
            self._pool = ConnectionPool(
                url,
                min_size=min_size,
                max_size=max(max_size, min_size, 1),
                kwargs=kwargs,
                configure=self._configure,
                open=False,
                timeout=timeout,
                num_workers=1,
                name=f"branchmem {describe(url)}",
            )
            self._pool.open(wait=True, timeout=timeout)
        except (PoolTimeout, psycopg.Error) as error:
            self.close()
            raise StorageError(f"cannot connect to {describe(url)}: {error}") from error
        try:
            version = self.schema_version()
            self.migrate(upgrade=migrate or version == 0)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _probe(url: str, kwargs: dict[str, Any]) -> None:
        """Connect once before the pool does, so a wrong password, a missing database or a
        closed port fails at once with libpq's reason (the pool would retry it in the
        background, logging each failure, until its timeout: 30 s and a dozen warnings).
        Sets ``connect_timeout`` in ``kwargs`` when the URL has none."""
        try:
            given = conninfo_to_dict(url)
        except psycopg.Error as error:
            why = str(error).split(' in URI: "')[0]  # the URI itself may hold a password
            raise InvalidInput(f"not a valid PostgreSQL URL: {why}") from error
        if given.get("connect_timeout") is None:
            kwargs["connect_timeout"] = CONNECT_TIMEOUT_S
        try:
            psycopg.connect(url, **kwargs).close()
        except psycopg.Error as error:
            raise StorageError(
                f"cannot connect to {describe(url)}: {connect_failure(error)}"
            ) from error

    @staticmethod
    def _configure(connection: psycopg.Connection[Any]) -> None:
        connection.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
        for name, value in PLANNER_SETTINGS.items():
            connection.execute(f"SET {name} = {value}")

    # -- connections -------------------------------------------------------------------
    def _open_pool(self) -> ConnectionPool[psycopg.Connection[Any]]:
        if self._pool is None or self._pool.closed:
            raise StorageError(f"the store {describe(self.url)} is closed")
        return self._pool

    def _checkout(self) -> psycopg.Connection[Any]:
        try:
            return self._open_pool().getconn(timeout=self.timeout)
        except PoolTimeout as error:
            raise StorageError(
                f"no connection to {describe(self.url)} within {self.timeout:.0f} s: {error}"
            ) from error

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None:
            raise StorageError(f"no connection held for {describe(self.url)} outside a call")
        return self._conn

    @contextmanager
    def _session(self) -> Iterator[None]:
        if self._conn is not None:  # nested inside a call: keep its connection
            yield
            return
        self._conn = self._checkout()
        try:
            yield
        finally:
            connection, self._conn = self._conn, None
            self._unopened()  # a call's unsent BEGIN is never the next call's
            if connection is not None and self._pool is not None:
                self._pool.putconn(connection)  # a broken one is discarded, an open one reset

    def _replace_connection(self) -> None:
        """Give back a connection that failed and take a fresh one for the same call."""
        connection, self._conn = self._conn, None
        if connection is not None and self._pool is not None:
            with suppress(Exception):
                if not connection.broken and not connection.closed:
                    connection.execute("ROLLBACK")
            self._pool.putconn(connection)
        self._conn = self._checkout()

    # -- transactions ------------------------------------------------------------------
    def _begin(self, begin: str, locks: str, params: Sequence[Any] = ()) -> None:
        """``BEGIN`` and take ``locks`` at once, in one round trip (a migration, which
        reads before it writes), retrying while the failure is safe to retry."""
        for attempt in range(1, ATTEMPTS + 1):
            connection = self._conn
            try:
                with self._connection().pipeline():
                    self._connection().execute(begin)
                    self._connection().execute(_placeholders(locks), tuple(params))
                return
            except psycopg.Error as error:
                if not _retryable(error, connection) or attempt == ATTEMPTS:
                    with suppress(Exception):
                        self._connection().execute("ROLLBACK")
                    mapped = self._translate(error)
                    raise (mapped or error) from error
                self._replace_connection()
                time.sleep(BACKOFF_S * 2 ** (attempt - 1) * (0.5 + random.random()))
        raise AssertionError("unreachable: the last attempt raises")

    def _begin_write(self, namespace: str | None) -> None:
        if namespace is None:  # a migration: alone against every writer of every namespace
            self._begin("BEGIN", "SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            return
        # The lock, and the namespace's sequence read under it, go with the transaction's
        # first statement (``_opening``), so drawing arrival numbers costs no round trip of
        # its own; no other writer moves the sequence meanwhile. A namespace PostgreSQL text
        # cannot hold (the key store's lock name) has no sequence.
        locks = "SELECT pg_advisory_xact_lock_shared(?), pg_advisory_xact_lock(?)"
        self._opening = [("BEGIN", ()), (locks, (MIGRATION_LOCK, namespace_lock(namespace)))]
        self._opening_seq = None
        if "\x00" not in namespace:
            self._opening.append(("SELECT seq FROM namespaces WHERE namespace = ?", (namespace,)))
            self._opening_seq = namespace

    def _begin_read(self) -> None:
        """One snapshot for every read of a call, begun with its first statement; takes no
        lock, so never waits on writers."""
        self._opening = [(READ, ())]

    # A transaction's BEGIN (with a writer's lock and sequence) needs no answer of its own:
    # it waits in ``_opening`` and goes first in the pipeline of the call's first statement.
    # Until that has been answered nothing of the call ran, so a connection lost, a
    # deadlock or a serialization failure there is retried with all of it on a fresh
    # connection, as a failed BEGIN was; a call that sends nothing (every read answered
    # from the call's cache) begins nothing and ends nothing on the server.
    def _opened(self, cursors: Sequence[Any]) -> None:
        """Take what the opening read: the namespace's sequence (its last statement)."""
        namespace, self._opening_seq = self._opening_seq, None
        if namespace is not None:
            row = cursors[-1].fetchone()
            value = int(row[0]) if row else 0
            self._seqs[namespace] = self._seqs_read[namespace] = value

    def _open_now(self, namespace: str) -> None:
        """Send the opening (and the writes queued behind it) when the sequence of
        ``namespace`` it reads is needed; another namespace's is read by a statement of its
        own, which the opening goes with."""
        if self._opening and self._opening_seq == namespace:
            self._pipelined([])

    def next_seq(self, namespace: str) -> int:
        self._open_now(namespace)
        return super().next_seq(namespace)

    def _current_seq(self, namespace: str) -> int:
        self._open_now(namespace)
        return super()._current_seq(namespace)

    def _commit(self) -> None:
        if self._opening and not self._queued:  # nothing reached the server: nothing began
            self._unopened()
            return
        # The COMMIT never goes with the opening: a pipeline lost after the server committed
        # it would be retried, writing the call twice. A call that wrote without reading
        # sends its opening and writes first (retried whole if lost), then the COMMIT.
        if self._opening:
            self._pipelined([])
        super()._commit()

    def _rollback(self) -> None:
        if self._opening:  # nothing reached the server: nothing to undo there
            self._unopened()
            self._queued = []
            return
        super()._rollback()

    def _end_read(self) -> None:
        if self._opening:
            self._unopened()
            return
        super()._end_read()

    def _unopened(self) -> None:
        self._opening, self._opening_seq = [], None

    # -- execution ---------------------------------------------------------------------
    def _sql(self, text: str) -> str:
        return _placeholders(text)

    def _chunks(self, ids: Iterable[str]) -> Iterator[list[str]]:
        items = list(dict.fromkeys(ids))  # one array parameter holds them all
        if items:
            yield items

    @staticmethod
    def _arrays(text: str, params: Sequence[Any]) -> tuple[str, Sequence[Any]]:
        """The statement with its ``IN (?, ...)`` lists as array parameters."""
        if "IN (?" not in text:
            return text, params
        text, taken = _array_form(text)
        return text, [
            text_array(list(params[item[0] : item[1]])) if isinstance(item, tuple) else params[item]
            for item in taken
        ]

    def _run(self, text: str, params: Sequence[Any] = ()) -> Any:
        text, params = self._arrays(text, params)
        self._count_growth(text, 1)
        if self._conn is not None:
            if self._held:
                self._release()
            if self._queued or self._opening:
                return self._pipelined([(text, params)])[0]
            return super()._run(text, params)
        # a read outside any call (e.g. a view evaluated lazily): one autocommit statement
        with self._session():
            result = super()._run(text, params)
            return _Rows(list(result.fetchall()) if result.description is not None else [])

    def _all_together(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[tuple[Any, ...]]]:
        if self._conn is None:
            return super()._all_together(statements)
        if self._held:
            self._release()
        cursors = self._pipelined([self._arrays(text, params) for text, params in statements])
        return [list(cursor.fetchall()) for cursor in cursors]

    # -- writes sent with the next statement ---------------------------------------------
    # Inside a transaction nothing reads what a multi-row write returns, so ``_many`` (and
    # the rows ``_hold`` keeps) only queue the write; the call's next statement (a read, a
    # SAVEPOINT, the COMMIT) sends the queue and itself in one pipeline: one round trip
    # instead of one per table. A queued write that fails fails that next statement, still
    # inside the transaction, so the call rolls back as before; order is kept, so a read
    # always sees every earlier write.
    def _release(self) -> None:
        held, self._held = self._held, {}
        for text, rows in held.items():
            if rows:
                self._queued.append((text, list(rows.values())))

    def _drop_held(self) -> None:
        super()._drop_held()
        self._queued = []

    # A nested transaction's SAVEPOINT needs no answer either: with nothing but settled
    # savepoint statements queued before it, it waits in the queue and goes with the block's
    # first statement (a block that sends nothing costs no round trip). Nothing queued ahead
    # of it can fail, so it has run whenever anything after it has: a block that fails rolls
    # back to it exactly when it was sent. A RELEASE settles the block's writes, so it is sent
    # at once when some are still unanswered; when every write of the block has been answered
    # it cannot fail, and it too waits for the next statement.
    def _savepoint(self, name: str) -> None:
        if self._conn is None or self._held or not self._settled():
            super()._savepoint(name)
            return
        self._queued.append((f"SAVEPOINT {name}", [()]))

    def _savepoint_sent(self, name: str) -> bool:
        return (f"SAVEPOINT {name}", [()]) not in self._queued

    def _drop_unsent(self, name: str) -> None:
        self._held = {}  # held after the savepoint was queued: the block's
        del self._queued[self._queued.index((f"SAVEPOINT {name}", [()])) :]

    def _release_savepoint(self, name: str) -> None:
        if self._held or not self._settled():
            super()._release_savepoint(name)
        elif self._queued and self._queued[-1] == (f"SAVEPOINT {name}", [()]):
            self._queued.pop()  # the block sent and holds nothing: no savepoint was needed
        else:
            self._queued.append((f"RELEASE SAVEPOINT {name}", [()]))

    def _settled(self) -> bool:
        """Whether the queue holds only savepoint statements, which cannot fail."""
        return all(text.startswith(SAVEPOINT_STATEMENTS) for text, _ in self._queued)

    def _pipelined(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[Any]:
        """Send the opening, the queued writes and ``statements`` (``?`` placeholders, arrays
        already formed) in one pipeline; their cursors, with results, once all have run."""
        queued, self._queued = self._queued, []
        opening, self._opening = self._opening, []
        for attempt in range(1, ATTEMPTS + 1):
            connection = self._connection()
            try:
                for written, _ in queued:  # read before the pipeline: its reads are one sync each
                    insert = MULTI_ROW_INSERT.fullmatch(written)
                    if insert is not None:
                        self._column_types(insert.group(1))
                with connection.pipeline():
                    opened = [
                        connection.execute(_placeholders(text), params) for text, params in opening
                    ]
                    for written, rows in queued:
                        self._write(written, rows, copy=False)
                    cursors = [
                        connection.execute(self._sql(text), tuple(params))
                        for text, params in statements
                    ]
            except UnicodeEncodeError as error:
                raise InvalidInput(f"text the database cannot store: {error}") from error
            except psycopg.Error as error:
                if opening and attempt < ATTEMPTS and _retryable(error, connection):
                    self._replace_connection()  # nothing of the call had run: all of it again
                    time.sleep(BACKOFF_S * 2 ** (attempt - 1) * (0.5 + random.random()))
                    continue
                mapped = self._translate(error)
                raise (mapped or error) from error
            if opening:
                self._opened(opened)
            return cursors
        raise AssertionError("unreachable: the last attempt raises")

    def _many(self, text: str, rows: list[tuple[Any, ...]]) -> None:
        self._citing_alongside = None  # a write may change what it answered
        if self._conn is not None and self._depth > 0:
            self._release()  # rows held earlier keep their place ahead of these
            if rows:
                self._queued.append((text, rows))
            return
        if self._held:
            self._release()
        if not rows:
            return
        try:
            self._write(text, rows, copy=True)
        except UnicodeEncodeError as error:
            raise InvalidInput(f"text the database cannot store: {error}") from error
        except psycopg.Error as error:
            mapped = self._translate(error)
            raise (mapped or error) from error

    def _write(self, text: str, rows: list[tuple[Any, ...]], *, copy: bool) -> None:
        """Run one write of many rows: one statement over arrays (or ``COPY``, which a
        pipeline cannot carry) when it is a plain multi-row insert."""
        insert = MULTI_ROW_INSERT.fullmatch(text) if len(rows) > 1 else None
        if insert is not None:
            table, columns, rest = insert.group(1, 2, 3)
            if copy and not rest.strip():
                self._copy(table, columns, rows)
            else:
                self._insert_arrays(table, columns, rest, rows)
        elif len(rows) == 1:
            self._connection().execute(self._sql(text), rows[0])
        else:
            with self._connection().cursor() as cursor:
                cursor.executemany(self._sql(text), rows)
        self._count_growth(text, len(rows))

    def _count_growth(self, text: str, rows: int) -> None:
        """Count rows an ``INSERT`` adds towards the table's next ANALYZE, whatever the path
        (a batch, a held row, one statement): an agent writing one event per call grows
        its tables as surely as a bulk import. An upsert that only updates counts too; the
        next ANALYZE measures the table anew."""
        table = _inserted_table(text)
        if table is not None:
            self._grown[table] = self._grown.get(table, 0) + rows

    def _after_commit(self) -> None:
        """ANALYZE a table this store has grown past the size it had at its last ANALYZE
        (at first: by ``analyze_after`` rows), counting rows from every write path.

        Without statistics the planner guesses that ``namespace = ?`` keeps 0.5% of a table,
        so right after a bulk load it plans a view's lookups as scans of tables it believes
        tiny (10x slower at 10,000 records); autovacuum's ANALYZE comes up to a minute later.
        Growing by a constant factor makes the cost a constant share of the writes. The factor
        is 4, not 2: the planner scales a table's row count by its current size in pages, so
        statistics a few times smaller still give the same plans, and the later ANALYZEs were
        ~20% of PostgreSQL's work while building 10,000 records; five per table on the way to a
        million rows, each reading a fixed sample. A role that does not own the tables gets a
        warning from the server and no statistics (see docs/scaling.md)."""
        first, analyzed = self.analyze_after, self._analyzed
        due = [
            table
            for table, rows in self._grown.items()
            if rows >= max(first, (ANALYZE_GROWTH - 1) * analyzed.get(table, 0.0))
        ]
        if not due:
            return
        connection = self._connection()
        try:
            with connection.pipeline():  # one round trip for every table due
                for table in due:
                    connection.execute(f"ANALYZE {table}")
                sizes = connection.execute(
                    "SELECT relname, reltuples FROM pg_catalog.pg_class "
                    "WHERE oid = ANY(%s::regclass[])",
                    (due,),
                )
            found = {str(name): float(rows) for name, rows in sizes.fetchall()}
        except psycopg.Error:  # statistics only speed plans up: the write has committed
            return
        for table in due:
            self._grown[table] = 0
            self._analyzed[table] = max(found.get(table, 0.0), 0.0)

    def _copy(self, table: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
        """Rows that must all be new (no ON CONFLICT): ``COPY``, the server's fastest path;
        a duplicate still fails the primary key, as the INSERT would."""
        with (
            self._connection().cursor() as cursor,
            cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(row)

    def _insert_arrays(
        self, table: str, columns: str, rest: str, rows: list[tuple[Any, ...]]
    ) -> None:
        """Insert ``rows`` with one statement: one array parameter per column, unnested.

        Measured against ``executemany`` (which psycopg pipelines, but the server still
        parses, plans and runs once per row) and ``COPY`` (which cannot say ON CONFLICT nor
        join a pipeline): see docs/scaling.md, "Writing records in bulk"."""
        types = self._column_types(table)
        names = [name.strip() for name in columns.split(",")]
        params: list[Any] = []
        arrays = []
        for name, values in zip(names, zip(*rows, strict=True), strict=True):
            literal = array_literal(list(values))
            params.append(list(values) if literal is None else literal)
            arrays.append(f"{'%b' if literal is None else '%s'}::{types[name]}[]")
        self._connection().execute(
            f"INSERT INTO {table} ({columns}) SELECT * FROM unnest({', '.join(arrays)})"
            f"{_placeholders(rest)}",
            params,
        )

    def _column_types(self, table: str) -> dict[str, str]:
        """Column name -> SQL type of a table (cached; cleared by a migration)."""
        known = self._types.get(table)
        if known is None:
            rows = self._connection().execute(
                "SELECT attname, format_type(atttypid, atttypmod) FROM pg_catalog.pg_attribute "
                "WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped",
                (table,),
            )
            known = self._types[table] = {str(name): str(kind) for name, kind in rows}
        return known

    def _after_migration(self, version: int) -> None:
        self._types.clear()  # a migration may change a table's columns
        super()._after_migration(version)

    def _translate(self, error: Exception) -> Exception | None:
        if isinstance(error, psycopg.IntegrityError):
            return ConflictError(f"the store refused a duplicate: {error}")
        if isinstance(error, psycopg.DataError) and ("NUL" in str(error) or "0x00" in str(error)):
            return InvalidInput(f"{NUL_REFUSED}: {error}")
        if isinstance(error, psycopg.Error):
            state = f" [{error.sqlstate}]" if error.sqlstate else ""
            return StorageError(f"PostgreSQL error on {describe(self.url)}{state}: {error}")
        return None

    def _table_exists(self, name: str) -> bool:
        # A catalog query under the statement's snapshot. ``to_regclass`` would consult the
        # backend's name cache, which can still say "absent" after waiting for the migration
        # lock while another process created the table: two first-time migrations would clash.
        row = self._one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relname = ?)",
            (name,),
        )
        return bool(row and row[0])

    # -- what only PostgreSQL has ------------------------------------------------------
    def _clean_files(self) -> str | None:
        """Erased rows were updated or deleted in place, but their old versions stay in the
        table files as dead tuples until VACUUM reclaims them: run it on the tables that can
        hold text. (Not ``INDEX_CLEANUP ON``: it would read every index whole on each erase,
        and a removed index entry's bytes may stay in its page's free space, as a tuple's do.)

        The planner's statistics (``pg_statistic``: most common values, histogram bounds)
        are samples of the rows as they were at the last ANALYZE, and an erased sentence can
        be one of them: ANALYZE the same tables now that no row holds it, then VACUUM
        ``pg_statistic``, whose replaced rows are dead tuples too (that needs the database
        owner; another role gets a warning and autovacuum reclaims them later). ANALYZE
        takes the lock autovacuum's ANALYZE takes, so one that sampled the old rows finishes
        (or is cancelled) before it. What VACUUM cannot reach (WAL segments, tuples an older
        snapshot still sees, free space in pages, backups) is the operator's: see
        docs/semantics.md (16) and docs/propagation.md."""
        self._run(f"VACUUM (ANALYZE) {', '.join(TEXT_TABLES)}")
        self._clear_stats_of_empty_tables()
        self._run("VACUUM pg_catalog.pg_statistic")
        return None

    def cannot_clean(self) -> tuple[str, ...]:
        return POSTGRES_CANNOT_CLEAN

    def before_placing(self, namespace: str, event_id: str, parent: str | None) -> None:
        """What placing one event asks (it and its parent, their records and children, the
        steps above the parent) in two round trips, the first with the BEGIN, instead of one
        per look-up."""
        self.prefetch(namespace, [event_id] if parent is None else [event_id, parent])

    def keyed_reads(self, namespace: str) -> KeyedReader:
        """A keyed view's reader that asks ahead in a few bulk answers (a round trip per
        statement), the events they bring kept in the call's event cache."""
        return ReadAhead(self, namespace, self.event_rows.learn_events)

    def scan_bytes(
        self, key: str, fingerprints: frozenset[str], lock: AbstractContextManager[Any]
    ) -> StoreScan:
        """Every row, TOAST chunk and planner statistic of the store's schema, read through
        SQL on a connection of its own in autocommit (no transaction of the pool's held);
        pages are the server's (``cannot_clean``). ``lock`` is not needed."""
        try:
            db = psycopg.connect(self.url, autocommit=True)
        except psycopg.Error as error:
            cause = type(error).__name__
            return StoreScan({}, (f"PostgreSQL: cannot connect to read the rows ({cause})",))
        with db:
            hits, unread = postgres_row_hits(db, key, fingerprints)
        return StoreScan(hits, tuple(unread), (SHORT_IN_FILES,))

    def _clear_stats_of_empty_tables(self) -> None:
        """ANALYZE keeps a table's statistics when an erase left it without rows, so the
        sample values of the rows it held would stay (a forget receipt's byte check found
        them in ``tree_keys``): ``bytescan.clear_postgres_stats_of_empty``. Store maintenance
        over every namespace, like the VACUUM: run on the session's connection directly."""
        clear_postgres_stats_of_empty(self._connection(), TEXT_TABLES)

    # -- orders SQL cannot promise under every collation ---------------------------------
    # The shared queries order some results by id; PostgreSQL sorts text by the database's
    # collation, SQLite and the engine by code point. These sort in Python instead.

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            self._conn = None
            pool.close()
