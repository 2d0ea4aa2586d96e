"""``forget`` carried into the saver a ``BranchCheckpointer`` wraps.

The saver keeps the graph's state at every checkpoint (messages included), outside the
Memory. A thread the forget erased whole (its conversation, or a branch from its root) loses
its checkpoints and writes (``delete_thread``; a SQLite saver's file is then rewritten, since
a deleted row's bytes stay in a free page). A thread erased in part keeps them: a saver
deletes whole threads only, so the section says so. Either way the saver's storage is then
searched for the receipt's fingerprints: an in-memory saver's serialized values, a SQLite
saver's database files, a PostgreSQL saver's rows (after a ``VACUUM (ANALYZE)`` of its
tables, as the store's own erase runs); any other saver is named as not checked.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from ...model import ERASED
from ...receipt import (
    ByteCheck,
    Receipt,
    StoreSection,
    clear_postgres_stats_of_empty,
    count_hits,
    postgres_row_hits,
    sqlite_file_hits,
    sqlite_row_hits,
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
    if _postgres_saver(saver):
        import psycopg

        try:
            with _postgres_connection(saver) as db:
                db.execute(f"VACUUM (ANALYZE) {', '.join(POSTGRES_TABLES)}")
                clear_postgres_stats_of_empty(db, POSTGRES_TABLES)
        except psycopg.Error as error:  # e.g. a connection not in autocommit
            return (f"the PostgreSQL saver's tables were not vacuumed: {error}",)
        return POSTGRES_CANNOT_CLEAN
    connection = getattr(saver, "conn", None)
    if not isinstance(connection, sqlite3.Connection):
        return ()
    with getattr(saver, "lock", None) or nullcontext():
        connection.commit()
        connection.execute("VACUUM")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return ()


def _postgres_saver(saver: BaseCheckpointSaver[Any]) -> bool:
    """A ``PostgresSaver`` (the ``langgraph-checkpoint-postgres`` package, if installed)."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        return False
    return isinstance(saver, PostgresSaver)


@contextmanager
def _postgres_connection(saver: Any) -> Iterator[Any]:
    """The PostgreSQL saver's connection (or one of its pool's), under the saver's lock."""
    import psycopg

    with saver.lock:
        connection = saver.conn
        if isinstance(connection, psycopg.Connection):
            yield connection
        else:  # a psycopg_pool pool
            with connection.connection() as held:
                yield held


def _check(
    saver: BaseCheckpointSaver[Any], key: str, fingerprints: frozenset[str]
) -> tuple[ByteCheck, tuple[str, ...]]:
    """Fingerprint hits in the saver's storage, per location; what cannot be read is named
    (``unchecked``) and said in the section's ``cannot_clean``."""
    locations: dict[str, int] = {}
    unchecked: list[str] = []
    cannot: list[str] = []
    connection = getattr(saver, "conn", None)
    if isinstance(saver, InMemorySaver):
        for name in ("storage", "writes", "blobs"):
            data = b"\n".join(_bytes_in(getattr(saver, name, {})))
            locations[f"in-memory saver {name}"] = count_hits(key, fingerprints, data)
    elif isinstance(connection, sqlite3.Connection):
        files = [Path(row[2]) for row in connection.execute("PRAGMA database_list") if row[2]]
        if not files:  # an in-memory SQLite database: its rows are what it holds
            for table in ("checkpoints", "writes"):
                try:
                    with getattr(saver, "lock", None) or nullcontext():
                        hits = sqlite_row_hits(connection, key, fingerprints, [table])
                except sqlite3.Error as error:  # never set up: nothing saved, or unreadable
                    unchecked.append(f"sqlite saver {table}: {error}")
                    continue
                locations[f"sqlite saver {table}"] = hits
        for main in files:
            locations.update(sqlite_file_hits(main, key, fingerprints, "sqlite saver"))
    elif _postgres_saver(saver):
        import psycopg

        try:
            with _postgres_connection(saver) as db:
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
