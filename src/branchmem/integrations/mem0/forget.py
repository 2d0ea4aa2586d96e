"""``BranchMem0.forget``: a branchmem forget that also reaches Mem0's own stores.

branchmem's forget erases the ``mem0:`` mirror records, but Mem0 keeps the text twice more:
its vector store (each memory's payload ``data``) and its SQLite history database (``history``
rows with ``old_memory``/``new_memory``, and the ``messages`` table of the last messages per
user/agent/run, which 2.x feeds back into extraction). Mem0 has an API for the first
(``Memory.delete``, which also unlinks the memory from its entity store) and none for the
second: its ``delete`` even logs the deleted text as a ``DELETE`` history row. So the
history rows are deleted through Mem0's own connection (``memory.db``), and both SQLite
files are rewritten (``VACUUM``): a deleted row's bytes stay in a free page until then.

The section this returns goes into the receipt before its content hash is computed, so the
hash and the audit entry cover it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from branchmem.bytescan import scan_files, sqlite_file_hits, sqlite_row_hits
from branchmem.errors import ErasedError, NotFoundError
from branchmem.receipt import (
    ByteCheck,
    Receipt,
    StoreSection,
    WrappedReceiptCheck,
    verify_wrapped,
)

from .observe import is_memory_record

if TYPE_CHECKING:
    from .wrapper import BranchMem0

SECTION: Final = "mem0"
CANNOT_CLEAN: Final = (
    "Mem0's SQLite rollback journals and the disk blocks of the files before VACUUM "
    "rewrote them: the file system may keep those blocks until reused",
    "what Mem0 sent to its LLM and embedder (prompts, provider logs and retention)",
    "memories Mem0 wrote without this wrapper (they have no mirror record to follow)",
)


def forget_in_mem0(wrapper: BranchMem0, receipt: Receipt, texts: tuple[str, ...]) -> StoreSection:
    """Delete from Mem0 what the receipt's forget erased in the mirror (unless a dry run),
    then check Mem0's files for the receipt's fingerprints.

    Memories go by id (their mirror records); history rows by memory id or by a text the
    forget erased; ``messages`` rows by an erased text (a forgotten message as Mem0 saved
    it). ``texts`` is that erased text, held only for this call."""
    memory = wrapper.memory
    memory_ids = sorted(
        {
            record.removeprefix("mem0:")
            for record in receipt.erased.get("records", ())
            if is_memory_record(record)
        }
        | _erased_before(wrapper)
    )
    erased_texts = {text for text in texts if text}
    stored = [m for m in memory_ids if memory.vector_store.get(vector_id=m) is not None]
    if not receipt.dry_run:
        for memory_id in stored:
            wrapper._done(memory.delete(memory_id))  # also unlinks it from the entity store
        wrapper._vectors.clear()  # cached embeddings of archived texts
    history, messages = _history_rows(memory, set(memory_ids), erased_texts, receipt.dry_run)
    if not receipt.dry_run:
        _vacuum_vector_files(memory)
    erased = {"vector_store": tuple(stored), "history": history, "messages": messages}
    check, cannot = _check(memory, receipt.key, frozenset(receipt.fingerprints))
    return StoreSection(
        SECTION,
        erased,
        {table: len(ids) for table, ids in erased.items()},
        check,
        CANNOT_CLEAN + cannot,
    )


def verify_in_mem0(wrapper: BranchMem0, receipt: Receipt) -> WrappedReceiptCheck:
    """The store's check of ``receipt``, then Mem0's files searched again for its
    fingerprints: a memory Mem0 wrote back, or a history database restored from a backup,
    shows there, as it would in the store's files."""
    return verify_wrapped(
        wrapper.store.verify_receipt(receipt, namespace=wrapper.namespace),
        receipt,
        lambda key, fingerprints: _check(wrapper.memory, key, fingerprints)[0],
    )


def _erased_before(wrapper: BranchMem0) -> set[str]:
    """Memories whose mirror record an earlier erase took (a plain ``Memory.forget`` or
    ``erase`` on the store, or a forget whose Mem0 part failed): Mem0 may still hold them,
    and no later plan lists them. Reads every mirror record once: forget is rare."""
    found: set[str] = set()
    for entry in wrapper.store.audit(op="add_record", namespace=wrapper.namespace):
        for record_id in entry.ids:
            if not is_memory_record(record_id):
                continue
            try:
                wrapper.store.get_record(record_id, namespace=wrapper.namespace)
            except ErasedError:
                found.add(record_id.removeprefix("mem0:"))
            except NotFoundError:
                continue
    return found


def _history_rows(
    memory: Any, memory_ids: set[str], texts: set[str], dry_run: bool
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ``history`` and ``messages`` row ids that hold the forgotten memories or text,
    deleted (and the file rewritten) unless ``dry_run``."""
    db = getattr(memory, "db", None)
    connection = getattr(db, "connection", None)
    if not isinstance(connection, sqlite3.Connection):
        return (), ()
    with getattr(db, "_lock", None) or nullcontext():
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
        history: list[str] = []
        if "history" in tables:
            for row_id, memory_id, old, new in connection.execute(
                "SELECT id, memory_id, old_memory, new_memory FROM history"
            ):
                if memory_id in memory_ids or old in texts or new in texts:
                    history.append(str(row_id))
        messages: list[str] = []
        if "messages" in tables:
            for row_id, content in connection.execute("SELECT id, content FROM messages"):
                if content in texts:
                    messages.append(str(row_id))
        if not dry_run and (history or messages):
            with connection:  # a table listed here exists (1.0.x has no messages table)
                for table, ids in (("history", history), ("messages", messages)):
                    if ids:
                        connection.executemany(
                            f"DELETE FROM {table} WHERE id = ?", [(i,) for i in ids]
                        )
            connection.execute("VACUUM")  # the deleted rows' bytes leave the free pages
    return tuple(sorted(history)), tuple(sorted(messages))


def _vector_path(memory: Any) -> Path | None:
    """The directory of a local file-backed vector store (Qdrant's path mode), else None."""
    config = getattr(getattr(getattr(memory, "config", None), "vector_store", None), "config", None)
    path = getattr(config, "path", None)
    if getattr(config, "client", None) is not None or getattr(config, "url", None):
        return None
    if getattr(config, "host", None):
        return None
    return Path(path) if isinstance(path, str) and Path(path).is_dir() else None


def _sqlite_files(root: Path) -> Iterator[Path]:
    """The SQLite databases under ``root``, told by their header, which a child process
    reads: local Qdrant holds them open in this process (``branchmem.bytescan`` says why)."""
    for file in scan_files("", (), roots=[str(root)]).sqlite:
        yield Path(file)


def _vacuum_vector_files(memory: Any) -> None:
    """Rewrite a local Qdrant's SQLite files: a deleted point's pickled payload stays in a
    free page until then. Local Qdrant commits every write at once, so no transaction of
    its own connection is open here."""
    root = _vector_path(memory)
    if root is None:
        return
    for file in _sqlite_files(root):
        connection = sqlite3.connect(file, isolation_level=None)
        try:
            connection.execute("VACUUM")
        finally:
            connection.close()


def _check(
    memory: Any, key: str, fingerprints: frozenset[str]
) -> tuple[ByteCheck, tuple[str, ...]]:
    """Fingerprint hits in Mem0's history database and local vector store files; what
    cannot be read is named (``unchecked``) and said in the section's ``cannot_clean``."""
    locations: dict[str, int] = {}
    unchecked: list[str] = []
    cannot: list[str] = []
    history_path = str(getattr(getattr(memory, "config", None), "history_db_path", "") or "")
    if history_path in ("", ":memory:"):
        db = getattr(memory, "db", None)
        connection = getattr(db, "connection", None)
        if isinstance(connection, sqlite3.Connection):
            with getattr(db, "_lock", None) or nullcontext():
                rows = sqlite_row_hits(connection, key, fingerprints)
                locations["history (in-memory rows)"] = rows
        else:
            unchecked.append("history: Mem0 has no SQLite history database to read")
    else:  # Mem0 holds it open in this process: a child process reads the files
        locations.update(sqlite_file_hits(history_path, key, fingerprints, unchecked, "history "))
    root = _vector_path(memory)
    if root is None:
        provider = getattr(
            getattr(getattr(memory, "config", None), "vector_store", None), "provider", "?"
        )
        unchecked.append(f"vector store: {provider} keeps no local files this check can read")
        cannot.append(
            f"the {provider} vector store's own storage (server files, write-ahead logs, "
            "snapshots, replicas): its points were deleted through Mem0, their bytes not checked"
        )
    else:
        scanned = scan_files(key, fingerprints, roots=[str(root)])
        for file, hits in sorted(scanned.hits.items()):
            locations[f"vector store {Path(file).relative_to(root.parent)}"] = hits or 0
        unchecked.extend(f"vector store {file}: {why}" for file, why in scanned.errors.items())
    clean = not unchecked and not any(locations.values())
    check = ByteCheck("mem0", locations, tuple(unchecked), clean, time.time())
    return check, tuple(cannot)
