"""The write path: each decision Mem0's ``add`` made, mirrored as a branchmem record.

Every record's sources are the event ids of the ``add`` call that caused it:

- ADD -> a new record (id ``mem0:<memory id>``) sourced on the call's events;
- UPDATE -> a new revision of that record. Its sources are the call's events plus the
  sources of the revision visible where the call happened; when the updated memory was not
  visible there (a sibling branch's memory), only the call's events: joining sources from
  two sibling branches would make the revision visible nowhere and lose the new fact;
- DELETE -> a branch-scope retraction sourced on the call's events: the memory disappears
  below the deleting message and stays on every other branch;
- a fact Mem0 skipped because the same text was already stored (2.x hash dedup, or a 1.x
  NONE) while the stored copy is not visible here -> a revision with the same text sourced
  on this call, so the fact is attested on this branch too;
- a 1.x NONE that rewrote a memory's ``agent_id``/``run_id`` -> a ``mem0_scope_change``
  record, so the move shows in the audit log.

Plain functions over the wrapper (not a mixin): they write through its store and namespace
and read what is visible at the call's anchor.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from .observe import (
    MEM0_KIND,
    SCOPE_CHANGE_KIND,
    AddOutcome,
    Observed,
    deletion_id,
    md5_hex,
    record_id_for,
)
from .reads import VisibleAt

if TYPE_CHECKING:
    from .wrapper import BranchMem0

__all__ = ["MEM0_KIND", "SCOPE_CHANGE_KIND", "mirror", "write_revision"]


def mirror(
    wrapper: BranchMem0,
    result: Any,
    observed: Observed,
    sources: tuple[str, ...],
    anchor: str,
    identity: dict[str, str | None],
    messages: list[dict[str, Any]],
    infer: bool,
    delete_scope: str,
) -> AddOutcome:
    """Write one ``add`` call's decisions (Mem0's ``result`` and what was ``observed``
    during the call) to the wrapper's store, sourced on ``sources``."""
    store, namespace = wrapper.store, wrapper.namespace
    outcome = AddOutcome(anchor=anchor)
    items = result.get("results", []) if isinstance(result, dict) else result or []
    hashes = {md5_hex(text) for text in observed.extracted}
    # decided before this call writes: the memories it may revise or attest, not the view
    here = VisibleAt(wrapper, anchor).decide(
        [str(item.get("id")) for item in items if item.get("event") == "UPDATE"]
        + [m for m, payload in observed.neighbours.items() if payload.get("hash") in hashes]
    )
    reported: set[str] = set()
    meta = {k: v for k, v in identity.items() if v is not None}
    verbatim = verbatim_sources(messages, sources) if not infer else []
    for item in items:
        memory_id = str(item.get("id"))
        reported.add(memory_id)
        event = item.get("event")
        text = str(item.get("memory", ""))
        if event == "ADD":
            # infer=False stores each message as it is: its source is that message alone
            own = verbatim.pop(0) if verbatim else sources
            store.add_record(
                record_id_for(memory_id),
                sources=list(own),
                content=text,
                kind=MEM0_KIND,
                meta={**meta, "mem0_id": memory_id, "mem0_event": "ADD"},
                namespace=namespace,
            )
            outcome.added.append(memory_id)
        elif event == "UPDATE":
            prior = here.get(memory_id)
            joined = tuple(prior.sources or ()) + sources if prior is not None else sources
            write_revision(wrapper, memory_id, text, joined, {**meta, "mem0_event": "UPDATE"})
            outcome.revised.append(memory_id)
        elif event == "DELETE":
            if not wrapper._known(memory_id):
                outcome.unknown.append(memory_id)
                continue
            store.retract(
                deletion_id(memory_id),
                sources=list(sources),
                targets=[record_id_for(memory_id)],
                scope=delete_scope,
                reason="mem0 DELETE",
                namespace=namespace,
            )
            outcome.retracted.append(memory_id)
    attest_duplicates(wrapper, observed, reported, here, sources, meta, outcome)
    if identity.get("agent_id") or identity.get("run_id"):
        record_scope_moves(wrapper, observed, reported, sources, outcome)
    return outcome


def verbatim_sources(
    messages: list[dict[str, Any]], sources: tuple[str, ...]
) -> list[tuple[str, ...]]:
    """With ``infer=False`` Mem0 ADDs one memory per non-system message, in order."""
    if len(sources) == 1:  # one event for the whole call: each message is sourced on it
        sources = sources * len(messages)
    return [
        (event_id,)
        for message, event_id in zip(messages, sources, strict=True)
        if message.get("role") not in (None, "system") and message.get("content") is not None
    ]


def attest_duplicates(
    wrapper: BranchMem0,
    observed: Observed,
    reported: set[str],
    here: VisibleAt,
    sources: tuple[str, ...],
    meta: dict[str, str],
    outcome: AddOutcome,
) -> None:
    """Facts Mem0 skipped as already stored, attested here when the stored copy is not."""
    hashes = {md5_hex(text) for text in observed.extracted}
    for memory_id, payload in observed.neighbours.items():
        if memory_id in reported or payload.get("hash") not in hashes:
            continue
        if memory_id in here:
            continue  # a true duplicate: already stated on this path
        text = str(payload.get("data", ""))
        write_revision(wrapper, memory_id, text, sources, {**meta, "mem0_event": "DUPLICATE"})
        outcome.attested.append(memory_id)


def record_scope_moves(
    wrapper: BranchMem0,
    observed: Observed,
    reported: set[str],
    sources: tuple[str, ...],
    outcome: AddOutcome,
) -> None:
    """Memories whose ``agent_id``/``run_id`` Mem0 rewrote without reporting it (1.x NONE)."""
    for memory_id, before in observed.neighbours.items():
        if memory_id in reported:
            continue
        stored = wrapper.memory.vector_store.get(vector_id=memory_id)
        after = dict(getattr(stored, "payload", None) or {})
        moved = {k: (before.get(k), after.get(k)) for k in ("agent_id", "run_id")}
        moved = {k: v for k, v in moved.items() if v[0] != v[1]}
        if stored is None or not moved:
            continue
        wrapper.store.add_record(
            f"mem0:{memory_id}:scope:{uuid.uuid4().hex[:12]}",
            sources=list(sources),
            content=json.dumps({k: list(v) for k, v in moved.items()}),
            kind=SCOPE_CHANGE_KIND,
            meta={"mem0_id": memory_id, "mem0_event": "NONE"},
            namespace=wrapper.namespace,
        )
        outcome.scope_changes.append(memory_id)


def write_revision(
    wrapper: BranchMem0,
    memory_id: str,
    text: str,
    sources: tuple[str, ...],
    meta: dict[str, str],
) -> None:
    """A new revision of the memory's record, or its first one when Mem0 wrote the memory
    before the wrapper was in place."""
    unique = list(dict.fromkeys(sources))
    full_meta = {**meta, "mem0_id": memory_id}
    if wrapper._known(memory_id):
        wrapper.store.revise(
            record_id_for(memory_id),
            content=text,
            sources=unique,
            meta=full_meta,
            namespace=wrapper.namespace,
        )
    else:
        wrapper.store.add_record(
            record_id_for(memory_id),
            sources=unique,
            content=text,
            kind=MEM0_KIND,
            meta=full_meta,
            namespace=wrapper.namespace,
        )
