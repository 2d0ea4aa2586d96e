"""``forget`` carried into the saver a ``BranchCheckpointer`` wraps.

The saver keeps the graph's state at every checkpoint (messages included), outside the
Memory. A thread the forget erased whole (its conversation, or a branch from its root) loses
its checkpoints and writes (``delete_thread``; a SQLite saver's file is then rewritten, since
a deleted row's bytes stay in a free page). A thread erased in part keeps them: a saver
deletes whole threads only, so the section says so. Either way the saver's storage is then
searched for the receipt's fingerprints: an in-memory saver's serialized values, a SQLite
saver's database files, a PostgreSQL saver's rows (after a ``VACUUM (ANALYZE)`` of its
tables, as the store's own erase runs); any other saver is named as not checked. The async
savers (``AsyncSqliteSaver``, ``AsyncPostgresSaver``) are cleaned and checked alike: their
statements run on the event loop their connection belongs to while this thread waits, as
LangGraph's own synchronous methods of those savers do, so a synchronous ``forget`` on that
loop is refused before anything is erased (``aforget`` runs it off the loop).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from ...bytescan import (
    clear_postgres_stats_of_empty,
    postgres_row_hits,
    sqlite_file_hits,
    sqlite_row_hits,
)
from ...model import ERASED
from ...receipt import (
    ByteCheck,
    Receipt,
    StoreSection,
    count_hits,
    verify_wrapped,
)
from .mapping import PREFIX

if TYPE_CHECKING:
    from ...receipt import WrappedReceiptCheck
    from .checkpointer import BranchCheckpointer

SECTION: Final = "langgraph"
CANNOT_CLEAN: Final = (
    "copies of the saver's storage outside it (backups, replicas, a server's write-ahead log)",
)
POSTGRES_TABLES: Final = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
POSTGRES_CANNOT_CLEAN: Final = (
    "free space VACUUM left in the PostgreSQL saver's table and TOAST pages (this check reads "
    "rows, TOAST chunks and statistics through SQL, not pages): VACUUM FULL rewrites them",
)


def forget_in_saver(checkpointer: BranchCheckpointer, receipt: Receipt) -> StoreSection:
    """Delete the checkpoints of every thread the receipt's forget erased whole (unless a
    dry run), then check the saver's storage for the receipt's fingerprints."""
    saver = checkpointer.saver
    whole, partial = _threads(checkpointer, receipt)
    cannot = [
        f"thread {thread!r}: erased in part; its checkpoints keep the graph's state at every "
        f"step, and a saver deletes whole threads only (forget the conversation "
        f"{PREFIX}:{thread} to remove them)"
        for thread in partial
    ]
    deleted: list[str] = []
    if not receipt.dry_run:
        for thread in whole:
            saver.delete_thread(thread)
            deleted.append(thread)
        if deleted:
            cannot.extend(_vacuum(saver))
    else:
        deleted = whole
    check, unreadable = _check(saver, receipt.key, frozenset(receipt.fingerprints))
    erased = {"threads": tuple(deleted)}
    return StoreSection(
        SECTION,
        erased,
        {"threads": len(deleted)},
        check,
        CANNOT_CLEAN + tuple(cannot) + unreadable,
    )


def verify_in_saver(checkpointer: BranchCheckpointer, receipt: Receipt) -> WrappedReceiptCheck:
    """The store's check of ``receipt``, then the saver's storage searched again for its
    fingerprints (a thread restored from a backup, a state that copied the text)."""
    return verify_wrapped(
        checkpointer.memory.verify_receipt(receipt, namespace=checkpointer.namespace),
        receipt,
        lambda key, fingerprints: _check(checkpointer.saver, key, fingerprints)[0],
    )


def _threads(checkpointer: BranchCheckpointer, receipt: Receipt) -> tuple[list[str], list[str]]:
    """(threads whose every mirrored event is erased, threads the forget erased in part),
    found by the trees of the erased events and by the trees whose root an earlier erase
    took (a ``Memory.forget`` past the checkpointer: no later plan lists them, and their
    checkpoints would stay); a dry run counts what it would erase."""
    memory, namespace = checkpointer.memory, checkpointer.namespace
    going = set(receipt.erased.get("events", ()))
    trees = {memory.get_event(event_id, namespace=namespace).tree for event_id in going}
    earlier = {
        summary.tree
        for summary in memory.trees(namespace=namespace)  # forget is rare: one pass of them
        if summary.tree.startswith(f"{PREFIX}:")
        and summary.tree in summary.roots
        and summary.tree not in trees
        and memory.get_event(summary.tree, namespace=namespace).role == ERASED
    }
    whole: list[str] = []
    partial: list[str] = []
    for tree in sorted(t for t in trees | earlier if t is not None and t.startswith(f"{PREFIX}:")):
        thread = tree.removeprefix(f"{PREFIX}:")
        events = memory.tree_events(tree, namespace=namespace).events
        # an event erased before keeps only its place: its role is the tombstone's
        gone = all(event.id in going or event.role == ERASED for event in events)
        if tree in earlier and not (gone and _saved(checkpointer.saver, thread)):
            continue  # not this forget's, and nothing of it to catch up with
        (whole if gone else partial).append(thread)
    return whole, partial


def _saved(saver: BaseCheckpointSaver[Any], thread: str) -> bool:
    """The saver still holds a checkpoint of ``thread``."""
    return saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}) is not None


def _vacuum(saver: BaseCheckpointSaver[Any]) -> tuple[str, ...]:
    """Rewrite a SQLite saver's database: deleted rows leave their bytes in free pages, and
    in WAL mode (SqliteSaver's) the old pages in the log until it is checkpointed. On a
    PostgreSQL saver, reclaim the deleted rows' dead tuples and renew the statistics that
    sampled them. Returns what it could not do."""
    kind = _kind(saver)
    if kind == "postgres":
        import psycopg

        try:
            with _database(saver) as db:
                db.execute(f"VACUUM (ANALYZE) {', '.join(POSTGRES_TABLES)}")
                clear_postgres_stats_of_empty(db, POSTGRES_TABLES)
        except psycopg.Error as error:  # e.g. a connection not in autocommit
            return (f"the PostgreSQL saver's tables were not vacuumed: {error}",)
        return POSTGRES_CANNOT_CLEAN
    if kind == "sqlite":
        with _database(saver) as db:
            db.commit()
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return ()


def _kind(saver: BaseCheckpointSaver[Any]) -> str | None:
    """``"postgres"`` for a (sync or async) PostgreSQL saver of ``langgraph-checkpoint-
    postgres``, ``"sqlite"`` for a saver on a SQLite connection (sqlite3 or aiosqlite)."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError:
        pass
    else:
        if isinstance(saver, PostgresSaver | AsyncPostgresSaver):
            return "postgres"
    connection = getattr(saver, "conn", None)
    if isinstance(connection, sqlite3.Connection):
        return "sqlite"
    try:
        import aiosqlite
    except ImportError:
        return None
    return "sqlite" if isinstance(connection, aiosqlite.Connection) else None


def saver_loop(saver: BaseCheckpointSaver[Any]) -> asyncio.AbstractEventLoop | None:
    """The event loop an async saver's connection belongs to (None for a sync saver)."""
    if _kind(saver) is None:
        return None
    loop = getattr(saver, "loop", None)
    return loop if isinstance(loop, asyncio.AbstractEventLoop) else None


def refuse_on_saver_loop(saver: BaseCheckpointSaver[Any], method: str) -> None:
    """Raise before anything is erased when an async saver's statements cannot run: a
    synchronous ``method`` called on the event loop they must run on would wait for itself,
    and a loop that no longer runs would never answer."""
    loop = saver_loop(saver)
    if loop is None:
        return
    if not loop.is_running():
        raise asyncio.InvalidStateError(
            f"BranchCheckpointer.{method} over {type(saver).__name__}: the event loop the "
            f"saver's connection belongs to is not running, so its statements cannot run "
            f"(await a{method}(...) while that loop runs)"
        )
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return
    if running is loop:
        raise asyncio.InvalidStateError(
            f"BranchCheckpointer.{method} over {type(saver).__name__} runs the saver's "
            f"statements on this event loop and would wait for itself: await "
            f"a{method}(...) instead"
        )


@contextmanager
def _database(saver: Any) -> Iterator[Any]:
    """The saver's connection, under the saver's lock, as a synchronous connection: an async
    saver's statements run on its event loop while this thread waits."""
    loop = saver_loop(saver)
    if loop is None:
        with getattr(saver, "lock", None) or nullcontext():
            connection = saver.conn
            if _kind(saver) == "postgres" and _pool(connection):
                with connection.connection() as held:
                    yield held
            else:
                yield connection
        return
    on = _OnLoop(loop)
    with on.holding(saver.lock):
        connection = saver.conn
        if _kind(saver) == "sqlite":
            yield _AiosqliteOnLoop(connection, on)
        elif _pool(connection):
            held = on.run(connection.getconn())
            try:
                yield _PsycopgOnLoop(held, on)
            finally:
                on.run(connection.putconn(held))
        else:
            yield _PsycopgOnLoop(connection, on)


def _pool(connection: Any) -> bool:
    """A psycopg_pool pool (sync or async) rather than one psycopg connection."""
    import psycopg

    return not isinstance(connection, psycopg.Connection | psycopg.AsyncConnection)


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


async def _released(lock: asyncio.Lock) -> None:
    lock.release()


class _OnLoop:
    """Runs an async saver's awaitables on its event loop, this thread waiting for each."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def run(self, awaitable: Awaitable[Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(_awaited(awaitable), self.loop).result()

    @contextmanager
    def holding(self, lock: asyncio.Lock) -> Iterator[None]:
        self.run(lock.acquire())
        try:
            yield
        finally:
            self.run(_released(lock))


class _AiosqliteOnLoop:
    """The few calls this module makes of a sqlite3 connection, on an aiosqlite one."""

    def __init__(self, connection: Any, on: _OnLoop) -> None:
        self.connection, self.on = connection, on

    def execute(self, sql: str, parameters: tuple[Any, ...] = ()) -> list[Any]:
        return list(self.on.run(self.connection.execute_fetchall(sql, parameters)))

    def commit(self) -> None:
        self.on.run(self.connection.commit())


class _PsycopgOnLoop:
    """The few calls ``receipt``'s PostgreSQL helpers make of a psycopg connection, on an
    async one."""

    def __init__(self, connection: Any, on: _OnLoop) -> None:
        self.connection, self.on = connection, on
        self.info = connection.info

    def execute(self, query: str, params: Any = None) -> None:
        self.on.run(self.connection.execute(query, params))

    @contextmanager
    def cursor(self, **options: Any) -> Iterator[_CursorOnLoop]:
        cursor = self.connection.cursor(**options)
        try:
            yield _CursorOnLoop(cursor, self.on)
        finally:
            self.on.run(cursor.close())


class _CursorOnLoop:
    def __init__(self, cursor: Any, on: _OnLoop) -> None:
        self.cursor, self.on = cursor, on

    def execute(self, query: str, params: Any = None) -> _CursorOnLoop:
        self.on.run(self.cursor.execute(query, params))
        return self

    def fetchall(self) -> list[Any]:
        result: list[Any] = self.on.run(self.cursor.fetchall())
        return result

    def fetchone(self) -> Any:
        return self.on.run(self.cursor.fetchone())

    def stream(self, query: str) -> list[Any]:
        """The rows at once: an async cursor's stream cannot be driven from here."""
        return self.execute(query).fetchall()


def _check(
    saver: BaseCheckpointSaver[Any], key: str, fingerprints: frozenset[str]
) -> tuple[ByteCheck, tuple[str, ...]]:
    """Fingerprint hits in the saver's storage, per location; what cannot be read is named
    (``unchecked``) and said in the section's ``cannot_clean``."""
    locations: dict[str, int] = {}
    unchecked: list[str] = []
    cannot: list[str] = []
    kind = _kind(saver)
    if isinstance(saver, InMemorySaver):
        for name in ("storage", "writes", "blobs"):
            data = b"\n".join(_bytes_in(getattr(saver, name, {})))
            locations[f"in-memory saver {name}"] = count_hits(key, fingerprints, data)
    elif kind == "sqlite":
        with _database(saver) as db:
            files = [Path(row[2]) for row in db.execute("PRAGMA database_list") if row[2]]
            if not files:  # an in-memory SQLite database: its rows are what it holds
                for table in ("checkpoints", "writes"):
                    try:
                        hits = sqlite_row_hits(db, key, fingerprints, [table])
                    except sqlite3.Error as error:  # never set up: nothing saved, or unreadable
                        unchecked.append(f"sqlite saver {table}: {error}")
                        continue
                    locations[f"sqlite saver {table}"] = hits
        for main in files:
            locations.update(  # read by a child process: the saver holds the file open
                sqlite_file_hits(str(main), key, fingerprints, unchecked, "sqlite saver ")
            )
    elif kind == "postgres":
        import psycopg

        try:
            with _database(saver) as db:
                rows, unread = postgres_row_hits(
                    db, key, fingerprints, POSTGRES_TABLES, "postgres saver "
                )
        except psycopg.Error as error:  # never set up, or unreadable
            unchecked.append(f"postgres saver: {error}")
        else:
            locations.update(rows)
            unchecked.extend(unread)
    else:
        kind = type(saver).__name__
        unchecked.append(f"saver {kind}: its storage is not one this check can read")
        cannot.append(
            f"the {kind} saver's storage (its tables, write-ahead log, backups): whole threads "
            "were deleted through the saver, their bytes not checked"
        )
    clean = not unchecked and not any(locations.values())
    return ByteCheck(SECTION, locations, tuple(unchecked), clean, time.time()), tuple(cannot)


def _bytes_in(value: object) -> Iterator[bytes]:
    """Every bytes and string value in nested containers (serialized checkpoints)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bytes | bytearray | memoryview):
            yield bytes(item)
        elif isinstance(item, str):
            yield item.encode("utf-8", "surrogatepass")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
