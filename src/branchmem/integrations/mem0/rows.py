"""``history()`` rows in Mem0's shape, told from branchmem's history of the memory's record.

Mem0's ``Memory.history`` returns one row per change with exactly the keys of its SQLite
``history`` table (``HISTORY_KEYS``): a UUID ``id``, ISO-8601 ``created_at`` (the memory's
creation time, on every row) and ``updated_at`` (when that change happened), ``is_deleted``,
and the ``actor_id``/``role`` of the message the memory came from. The wrapper's rows are
branchmem's changes (every branch's), so a change Mem0 also logged takes Mem0's row's id,
timestamps, actor and role: the same change has the same id in both histories. A change
only branchmem knows (a branch-scope delete, a fact attested on a second branch) gets a
stable UUID derived from its audit sequence number and the time branchmem logged it.

Plain functions over the wrapper (not a mixin): they read its store and its Mem0.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from branchmem.errors import NotFoundError

from .observe import UnknownMemory, record_id_for

if TYPE_CHECKING:
    from .wrapper import BranchMem0

# The columns of Mem0's history table, in its order (1.0.x and 2.x alike).
HISTORY_KEYS: Final = (
    "id",
    "memory_id",
    "old_memory",
    "new_memory",
    "event",
    "created_at",
    "updated_at",
    "is_deleted",
    "actor_id",
    "role",
)
# Derives the ids of rows only branchmem logged (uuid5: the same row, the same id).
_ROW_NAMESPACE: Final = uuid.UUID("5d0c3f6e-4b7a-5a34-9c1e-0b6f1d2e8a90")


def iso(timestamp: float) -> str:
    """An epoch time as Mem0 writes times: ``datetime.now(timezone.utc).isoformat()``."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


def history_rows(wrapper: BranchMem0, memory_id: str, provenance: bool) -> list[dict[str, Any]]:
    """The memory's changes, oldest first, as Mem0's rows (``provenance`` adds the
    branchmem ``revision`` and ``sources`` of each row). A memory withdrawn by ``reset``
    keeps its rows, the reset being a DELETE row: Mem0's reset empties Mem0's history, the
    store's audit log does not. An id the store never recorded raises ``UnknownMemory``:
    Mem0 answers ``[]``, which reads as "known and never changed"."""
    record_id = record_id_for(memory_id)
    try:
        entries = wrapper.store.history(record_id, namespace=wrapper.namespace)
    except NotFoundError:
        raise UnknownMemory(unknown_message(wrapper, memory_id)) from None
    theirs = _mem0_rows(wrapper, memory_id)
    created = _created_at(theirs, entries)
    actor: Any = None
    role: Any = None
    previous: str | None = None
    rows: list[dict[str, Any]] = []
    for entry in entries:
        happened, revision = entry["happened"], entry["revision"]
        if happened in ("added", "revised") and revision is not None:
            held = wrapper.store.get_record(
                record_id, revision=revision, namespace=wrapper.namespace
            )
            event = "ADD" if happened == "added" else "UPDATE"
            old, new = previous, held.content
            previous = held.content
            sources = list(held.sources or ())
            actor = held.meta.get("actor_id", actor)
            role = held.meta.get("role", role)
        elif happened in ("retracted", "withdrawn"):
            event, old, new, sources = "DELETE", previous, None, []
        elif happened == "restored" and previous is not None:
            event, old, new, sources = "ADD", None, previous, []
        else:
            continue
        match = _take(theirs, event, new)
        if match is not None:
            actor, role = match.get("actor_id", actor), match.get("role", role)
            row = {
                "id": match.get("id"),
                "created_at": match.get("created_at"),
                "updated_at": match.get("updated_at"),
            }
        else:
            when = iso(entry["time"])
            row = {
                "id": str(
                    uuid.uuid5(_ROW_NAMESPACE, f"{wrapper.namespace}/{record_id}/{entry['seq']}")
                ),
                "created_at": created,
                "updated_at": created if event == "ADD" else when,
            }
        row.update(
            memory_id=memory_id,
            old_memory=old,
            new_memory=new,
            event=event,
            is_deleted=event == "DELETE",
            actor_id=actor,
            role=role,
        )
        shaped = {key: row[key] for key in HISTORY_KEYS}
        if provenance:
            shaped.update(revision=revision, sources=sources)
        rows.append(shaped)
    return rows


def unknown_message(wrapper: BranchMem0, memory_id: str) -> str:
    """Why an id has no history here, and whether Mem0 itself knows it."""
    theirs = len(_mem0_rows(wrapper, memory_id))
    if theirs:
        return (
            f"memory {memory_id!r} was never written through BranchMem0 (no record, no "
            f"sources); Mem0 itself holds {theirs} history rows of it"
        )
    return f"memory {memory_id!r} is unknown: neither the store nor Mem0 has a row of it"


def _mem0_rows(wrapper: BranchMem0, memory_id: str) -> list[dict[str, Any]]:
    """Mem0's own history of the memory (its public ``history``); nothing when Mem0 gives
    no list of rows (a test double)."""
    found = wrapper._done(wrapper.memory.history(memory_id))
    if not isinstance(found, list):
        return []
    return [dict(row) for row in found if isinstance(row, dict)]


def _created_at(theirs: list[dict[str, Any]], entries: list[dict[str, Any]]) -> str | None:
    """The memory's creation time: Mem0's (every one of its rows carries it), else when
    branchmem first recorded the memory."""
    for row in theirs:
        if isinstance(row.get("created_at"), str):
            return str(row["created_at"])
    return iso(entries[0]["time"]) if entries else None


def _take(theirs: list[dict[str, Any]], event: str, new: str | None) -> dict[str, Any] | None:
    """The first of Mem0's rows not yet used that logged the same change."""
    for index, row in enumerate(theirs):
        if row.get("event") == event and row.get("new_memory") == new:
            return theirs.pop(index)
    return None
