"""``BranchMem0``: a real ``mem0.Memory`` whose memories carry source events.

Mem0 keeps no link from a memory to the messages it came from (mem0ai issue #7047), so a
memory written on an abandoned branch, an UPDATE driven by a sibling's message, or a
DELETE issued from another branch all look the same as a fact of the current conversation.
The wrapper lets Mem0 run unchanged and mirrors each of its decisions into a branchmem store
as a record whose sources are the event ids of the ``add`` call that caused it (how each
decision maps to a record: ``mirror``). Reads gate by visibility at an anchor and merge in
the revisions whose text Mem0 has forgotten (``reads``).
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import threading
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from branchmem.errors import InvalidInput, NotFoundError
from branchmem.receipt import Receipt, WrappedReceiptCheck

from .forget import forget_in_mem0, verify_in_mem0
from .mirror import MEM0_KIND, SCOPE_CHANGE_KIND, mirror, write_revision
from .observe import (
    CALLER_LOOP,
    IDENTITY_KEYS,
    UNSET,
    AddOutcome,
    AmbiguousHead,
    MemoryNotVisible,
    Observed,
    UnknownMemory,
    Unset,
    awaited,
    extracted_texts,
    is_memory_record,
    not_found_message,
    read_identity,
    record_id_for,
    tap,
)
from .reads import (
    VisibleAt,
    archived_item,
    archived_revisions,
    gated,
    mem0_get_all,
    mem0_search,
    scored_archived,
)
from .rows import history_rows

if TYPE_CHECKING:
    from branchmem import Explanation, Memory, Record

__all__ = [
    "DEFAULT_TREE",
    "MEM0_KIND",
    "SCOPE_CHANGE_KIND",
    "AddOutcome",
    "AmbiguousHead",
    "BranchMem0",
    "MemoryNotVisible",
    "UnknownMemory",
    "record_id_for",
]

# The conversation a BranchMem0 built without ``tree=`` records and follows.
DEFAULT_TREE = "mem0-chat"


class BranchMem0:
    """A Mem0 memory whose reads answer as seen from an anchor event.

    ``memory`` is a ``mem0.Memory`` (1.0.x or 2.x; detected from its ``search`` signature;
    default ``mem0.Memory()``), ``store`` the branchmem ``Memory`` holding the conversation
    and the provenance (default: a new in-memory one). Every method of Mem0's public API is
    here with Mem0's parameters, so swapping the class in works. Where a call stands (its
    anchor, and for writes the events it derives from) is, in order: the call's
    ``anchor=``/``event_ids=``, a view bound with ``at(...)``, else the head of the
    conversation ``tree`` (``head()``): the wrapper *follows the head* (``follow=False``
    refuses a call that names no anchor instead).

    ``record`` says who writes the conversation: True (the default when no ``tree`` is
    given) makes ``add`` record its messages as events below the head and move the head to
    the last one, so a plain Mem0 call sequence builds a one-branch chat; False (the default
    with ``tree=``) means the application records the tree with ``store.add_event`` and an
    ``add`` without ``event_ids`` derives from the head it set.
    """

    def __init__(
        self,
        memory: Any = None,
        store: Memory | None = None,
        *,
        namespace: str = "default",
        overfetch: int = 4,
        tree: str | None = None,
        record: bool | None = None,
        follow: bool = True,
    ) -> None:
        if overfetch < 1:
            raise InvalidInput(f"overfetch must be >= 1, got {overfetch}")
        if memory is None:
            from mem0 import Memory as Mem0  # type: ignore[import-untyped, import-not-found, unused-ignore]

            memory = Mem0()
        if store is None:
            from branchmem import Memory

            store = Memory()
        self.memory = memory
        self.store = store
        self.namespace = namespace
        self.overfetch = overfetch
        self.tree = tree if tree is not None else DEFAULT_TREE
        self.record = tree is None if record is None else bool(record)
        self.follow = bool(follow)
        self.filters_api = "top_k" in inspect.signature(memory.search).parameters
        self._lock = threading.RLock()
        self._vectors: dict[str, list[float]] = {}
        self._bound_anchor: str | Unset | None = UNSET
        self._bound_events: tuple[str, ...] | None = None
        self._picked: Counter[str] = Counter()

    @classmethod
    def from_config(cls, config_dict: dict[str, Any], **options: Any) -> BranchMem0:
        """``mem0.Memory.from_config(config_dict)`` wrapped (``options``: this class's)."""
        from mem0 import Memory as Mem0  # type: ignore[import-untyped, import-not-found, unused-ignore]

        return cls(Mem0.from_config(config_dict), **options)

    def at(self, anchor: str | None, event_ids: Sequence[str] | None = None) -> BranchMem0:
        """A view standing at ``anchor``: its reads see what is visible there and its
        writes derive from ``event_ids`` (default: the anchor itself)."""
        view = copy.copy(self)
        view._bound_anchor = anchor
        view._bound_events = tuple(event_ids) if event_ids is not None else None
        return view

    def head(self) -> str | None:
        """The event the conversation ``tree`` is at now, where a call with no anchor stands.

        The head the application set (``store.set_head``; the wrapper sets it when it
        records) wins. Without one, a tree with one leaf is at that leaf. Several leaves (a
        fork nobody chose between): strict mode raises ``AmbiguousHead`` naming the tree and
        the leaves; compat mode takes the latest to arrive and counts it in ``report()``.
        None while the conversation has no event."""
        head = self.store.head(self.tree, namespace=self.namespace)
        if head is not None:
            return head
        try:
            events = self.store.tree_events(self.tree, namespace=self.namespace).events
        except NotFoundError:
            return None
        parents = {e.parent for e in events}
        leaves = [e.id for e in events if e.id not in parents]  # arrival order
        if len(leaves) == 1:
            return leaves[0]
        if self.store.mode == "strict":
            raise AmbiguousHead(self.tree, leaves)
        self._picked["latest_leaf"] += 1
        return leaves[-1]

    def report(self) -> dict[str, Any]:
        """The store's ``report()`` for this namespace, plus ``"mem0"``: how often a call
        with no anchor stood at a head compat mode picked among several leaves."""
        found = self.store.report(namespace=self.namespace)
        found["mem0"] = {"tree": self.tree, "head_picked": dict(self._picked)}
        return found

    def _anchor(self, anchor: str | Unset | None) -> str | None:
        if anchor is not UNSET:
            return anchor
        if self._bound_anchor is not UNSET:
            return self._bound_anchor
        if self.follow:
            return self.head()
        raise InvalidInput(
            "no anchor: pass anchor=, bind one with at(anchor), or build BranchMem0 with "
            "follow=True to stand at the conversation's head"
        )

    def _sources(self, event_ids: Sequence[str] | None, count: int) -> tuple[str, ...]:
        """The events a write derives from: given, bound, or the anchor alone."""
        if event_ids is not None:
            return self._check_events(event_ids, count)
        if self._bound_events is not None:
            return self._check_events(self._bound_events, len(self._bound_events))
        anchor = self._anchor(UNSET)
        if anchor is None:
            raise InvalidInput(
                f"no event to source the write at: conversation {self.tree!r} has no event "
                "yet and the anchor is None; pass event_ids= or record the message first"
            )
        return self._check_events([anchor], 1)

    def _recording(self, event_ids: Sequence[str] | None) -> bool:
        """Whether this ``add`` records its messages: nothing placed it anywhere else."""
        return (
            event_ids is None
            and self._bound_anchor is UNSET
            and self._bound_events is None
            and self.follow
            and self.record
        )

    def _record(
        self, messages: list[dict[str, Any]], identity: dict[str, str | None]
    ) -> tuple[str, ...]:
        """The messages as a chain of events below the head, and the head moved to the last
        (one transaction: a failed write leaves neither)."""
        parent = self.head()
        meta = {k: v for k, v in identity.items() if v is not None}
        ids: list[str] = []
        specs: list[dict[str, Any]] = []
        for message in messages:
            event_id = f"mem0-message:{uuid.uuid4().hex}"
            ids.append(event_id)
            content = message.get("content")
            specs.append(
                {
                    "id": event_id,
                    "parent": parent,
                    "tree": self.tree if parent is None else None,
                    "role": str(message.get("role") or "user"),
                    "content": content if isinstance(content, str) else json.dumps(content),
                    "meta": meta,
                }
            )
            parent = event_id
        if not ids:
            raise InvalidInput("add has no message to record")
        with self.store.transaction(self.namespace):
            self.store.add_events(specs, namespace=self.namespace)
            self.store.set_head(ids[-1], namespace=self.namespace)
        return tuple(ids)

    # ----------------------------------------------------------------- writes

    def add(
        self,
        messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        event_ids: Sequence[str] | None = None,
        delete_scope: str = "branch",
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Run Mem0's ``add`` and mirror its decisions, sourced on ``event_ids``.

        ``delete_scope`` says how a DELETE Mem0 decides in this call acts: ``"branch"``
        hides the memory below these events only (Mem0 cannot tell a change of mind on one
        branch from "forget this"), ``"tree"`` hides it in every view, for a message the
        application knows is the user's "forget this everywhere".
        Returns Mem0's result with a ``"branchmem"`` entry (``AddOutcome.as_dict``).
        """
        if delete_scope not in ("branch", "tree"):
            raise InvalidInput(f"delete_scope must be 'branch' or 'tree', got {delete_scope!r}")
        listed = self._messages(messages)
        identity = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        with self._lock:  # the head read and the messages recorded below it are one step
            if self._recording(event_ids):
                sources = self._record(listed, identity)
                anchor = sources[-1]  # a chain: the last is the deepest
            else:
                sources = self._sources(event_ids, len(listed))
                anchor = self._deepest(sources)
            return self._add(
                listed, sources, anchor, identity, metadata, infer, delete_scope, kwargs
            )

    def _add(
        self,
        listed: list[dict[str, Any]],
        sources: tuple[str, ...],
        anchor: str,
        identity: dict[str, str | None],
        metadata: dict[str, Any] | None,
        infer: bool,
        delete_scope: str,
        kwargs: dict[str, Any],
    ) -> dict[str, Any]:
        """Mem0's ``add`` under the taps, then its decisions mirrored at ``anchor``."""
        observed = Observed()

        def on_llm(response: Any) -> None:
            observed.extracted.extend(extracted_texts(response))

        def on_search(hits: Any) -> None:
            for hit in hits or []:
                payload = getattr(hit, "payload", None)
                if payload is not None and str(hit.id) not in observed.neighbours:
                    observed.neighbours[str(hit.id)] = dict(payload)

        with (
            self._lock,
            tap(self.memory.llm, "generate_response", on_llm),
            tap(self.memory.vector_store, "search", on_search),
        ):
            result = self._done(
                self.memory.add(
                    listed,
                    user_id=identity["user_id"],
                    agent_id=identity["agent_id"],
                    run_id=identity["run_id"],
                    metadata=metadata,
                    infer=infer,
                    **kwargs,
                )
            )
            outcome = mirror(
                self, result, observed, sources, anchor, identity, listed, infer, delete_scope
            )
        out = dict(result) if isinstance(result, dict) else {"results": result}
        out["branchmem"] = outcome.as_dict()
        return out

    # ------------------------------------------------------------------ reads

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        threshold: float | None = None,
        anchor: str | Unset | None = UNSET,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> dict[str, list[dict[str, Any]]]:
        """Mem0's search, answered as seen from the anchor: ``top_k`` (1.0.x: ``limit``)
        results at most; a parameter left out takes the installed Mem0's default.

        Over-fetch and gate: Mem0 ranks (its hybrid scoring stays intact), the wrapper
        drops what is not visible and asks for more until enough visible hits are found
        or Mem0 has nothing left. Gating inside Mem0 would need an id filter, which Mem0
        does not offer on ids and few of its vector stores implement reliably on payloads.
        ``user_id``/``agent_id``/``run_id`` are also taken at the top level (1.0.x style)
        and moved into ``filters`` for 2.x. Other keywords (``rerank``, ``explain``, ...)
        go to Mem0 as they are.
        """
        size = self._size(top_k, limit, "search")
        identity = read_identity(filters, user_id, agent_id, run_id)
        if threshold is None:
            threshold = self._default("search", "threshold")
        visible = self._visible(self._anchor(anchor))
        if not visible:
            return {"results": []}

        def fetch(n: int) -> list[dict[str, Any]]:
            return mem0_search(self, query, identity, n, threshold, filters, kwargs)

        with self._lock:  # an add in flight taps Mem0's search; do not feed it our queries
            hits = gated(fetch, visible, size, self.overfetch)
            archived = archived_revisions(self, visible, identity, {str(h["id"]) for h in hits})
            if archived:
                hits.extend(scored_archived(self, query, archived, threshold))
                hits.sort(key=lambda h: -float(h.get("score") or 0.0))
        return {"results": hits[:size]}

    def get_all(
        self,
        *,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        anchor: str | Unset | None = UNSET,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> dict[str, list[dict[str, Any]]]:
        """Every memory visible at the anchor in Mem0's order, archived texts last."""
        size = self._size(top_k, limit, "get_all")
        identity = read_identity(filters, user_id, agent_id, run_id)
        visible = self._visible(self._anchor(anchor))
        if not visible:
            return {"results": []}

        def fetch(n: int) -> list[dict[str, Any]]:
            return mem0_get_all(self, identity, n, filters, kwargs)

        with self._lock:
            hits = gated(fetch, visible, size, self.overfetch)
            archived = archived_revisions(self, visible, identity, {str(h["id"]) for h in hits})
        hits.extend(archived_item(r) for r in archived)
        return {"results": hits[:size]}

    def get(self, memory_id: str, *, anchor: str | Unset | None = UNSET) -> dict[str, Any] | None:
        """Mem0's ``get``, as seen from the anchor: None when the memory is not visible
        there; the revision visible there when Mem0 holds a later text."""
        record = VisibleAt(self, self._anchor(anchor)).get(str(memory_id))
        if record is None:
            return None
        stored = self._done(self.memory.get(str(memory_id)))
        if isinstance(stored, dict) and stored.get("memory") == record.content:
            return {**stored, "revision": record.revision}
        return archived_item(record)

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        expiration_date: Any = UNSET,
        data: str | None = None,
        *,
        anchor: str | Unset | None = UNSET,
        event_ids: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Mem0's ``update`` as a revision: sourced on the call's events plus the sources
        of the revision visible here, so it holds below this point only; Mem0 itself gets
        the new text (it ranks the newest), other branches keep theirs (archived)."""
        new_text = text if text is not None else data
        if not isinstance(new_text, str):
            raise InvalidInput(f"update of memory {memory_id!r} needs text")
        memory_id = str(memory_id)
        anchor_id = self._anchor(anchor)
        prior = VisibleAt(self, anchor_id).get(memory_id)
        if prior is None:
            raise MemoryNotVisible(not_found_message(memory_id, anchor_id))
        sources = self._sources(event_ids, 1) if event_ids is not None else self._write_sources()
        if expiration_date is not UNSET:
            kwargs["expiration_date"] = expiration_date
        if metadata is not None:
            kwargs["metadata"] = metadata
        with self._lock:
            if self.filters_api:
                result = self._done(self.memory.update(memory_id, text=new_text, **kwargs))
            else:
                result = self._done(self.memory.update(memory_id, data=new_text, **kwargs))
            meta = {k: prior.meta[k] for k in IDENTITY_KEYS if k in prior.meta}
            joined = tuple(prior.sources or ()) + sources
            write_revision(self, memory_id, new_text, joined, {**meta, "mem0_event": "UPDATE"})
        return dict(result) if isinstance(result, dict) else {"message": str(result)}

    def delete(
        self,
        memory_id: str,
        *,
        anchor: str | Unset | None = UNSET,
        event_ids: Sequence[str] | None = None,
        scope: str = "branch",
    ) -> dict[str, str]:
        """Mem0's ``delete`` as a retraction sourced on the call's events: the memory is
        hidden below them (``scope="tree"``: everywhere) and stays on every other branch,
        so Mem0's own copy is kept."""
        memory_id = str(memory_id)
        anchor_id = self._anchor(anchor)
        if memory_id not in VisibleAt(self, anchor_id):
            raise MemoryNotVisible(not_found_message(memory_id, anchor_id))
        sources = self._sources(event_ids, 1) if event_ids is not None else self._write_sources()
        self._retract([memory_id], sources, scope, "mem0 delete")
        return {"message": "Memory deleted successfully!"}

    def delete_all(
        self,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        *,
        anchor: str | Unset | None = UNSET,
        event_ids: Sequence[str] | None = None,
        scope: str = "branch",
    ) -> dict[str, str]:
        """Mem0's ``delete_all``: one retraction of every memory of that user/agent/run
        visible at the anchor (Mem0 requires one of the three, and so does this)."""
        identity = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        if all(v is None for v in identity.values()):
            raise InvalidInput("delete_all needs user_id, agent_id or run_id")
        visible = self._visible(self._anchor(anchor))
        targets = [
            memory_id
            for memory_id, record in visible.items()
            if all(v is None or record.meta.get(k) == v for k, v in identity.items())
        ]
        if targets:
            sources = (
                self._sources(event_ids, 1) if event_ids is not None else self._write_sources()
            )
            self._retract(targets, sources, scope, "mem0 delete_all")
        return {"message": "Memories deleted successfully!"}

    def history(self, memory_id: str, *, provenance: bool = False) -> list[dict[str, Any]]:
        """Mem0's ``history``: one row per change, oldest first, with exactly the keys of
        Mem0's rows (``rows.HISTORY_KEYS``: UUID ``id``, ISO ``created_at``/``updated_at``,
        ``actor_id``, ``role``...); every branch's changes are listed, and a change Mem0
        logged too has Mem0's row id. ``provenance=True`` adds each row's branchmem
        ``revision`` and ``sources`` (where it holds). A memory ``reset`` withdrew keeps its
        rows, the reset last as a DELETE. An id never written through the wrapper raises
        ``UnknownMemory`` naming it (Mem0's ``[]`` would read as "never changed")."""
        return history_rows(self, str(memory_id), provenance)

    def reset(self) -> None:
        """Mem0's ``reset``, and every memory's record withdrawn (hidden in every view,
        kept in the audit log: branchmem forgets nothing silently)."""
        with self._lock:
            self._done(self.memory.reset())
            for entry in self.store.audit(op="add_record", namespace=self.namespace):
                for record_id in entry.ids:
                    if is_memory_record(record_id):
                        self.store.withdraw(
                            record_id, reason="mem0 reset", namespace=self.namespace
                        )
            self._vectors.clear()

    # ------------------------------------------------------------ forget (issue #27)

    def forget(self, kind: str, id: str, *, dry_run: bool = False) -> Receipt:
        """``Memory.forget`` on the store, then the same memories and messages out of Mem0:
        its vector store (``Memory.delete``) and its history database (``history`` and
        ``messages`` rows, file rewritten). The receipt's ``stores`` has a ``"mem0"``
        section (ids and counts per table, a byte check of Mem0's files); its content hash
        and audit entry cover it. ``dry_run`` changes nothing in either."""
        with self._lock:
            return self.store.forget_with(
                kind,
                id,
                also=lambda receipt, texts: (forget_in_mem0(self, receipt, texts),),
                dry_run=dry_run,
                namespace=self.namespace,
            )

    def verify_receipt(self, receipt: Receipt | Mapping[str, Any]) -> WrappedReceiptCheck:
        """``Memory.verify_receipt`` on the store (hash, audit entry, ids still erased, the
        store's files), and Mem0's files checked again for the receipt's fingerprints (the
        history database and a local vector store's files, as the forget checked them).
        ``ok`` is both. A receipt of a plain store forget is checked against Mem0 too: its
        text still in Mem0 shows as hits."""
        found = receipt if isinstance(receipt, Receipt) else Receipt.from_json(receipt)
        with self._lock:
            return verify_in_mem0(self, found)

    def close(self) -> None:
        """Close Mem0 (its own ``close``); the store stays its owner's."""
        close = getattr(self.memory, "close", None)
        if callable(close):
            self._done(close())

    def chat(self, query: str) -> Any:
        """Mem0's ``chat`` (not implemented by Mem0 itself): passed through."""
        return self._done(self.memory.chat(query))

    @staticmethod
    def _done(result: Any) -> Any:
        """A Mem0 call's result; an ``AsyncMemory`` coroutine is run on the event loop
        ``AsyncBranchMem0`` called from (this code runs in its worker thread)."""
        if not inspect.isawaitable(result):
            return result
        loop = CALLER_LOOP.get(None)
        if loop is None:
            close = getattr(result, "close", None)
            if callable(close):
                close()
            raise InvalidInput("an async Mem0 (mem0.AsyncMemory) is wrapped by AsyncBranchMem0")
        return asyncio.run_coroutine_threadsafe(awaited(result), loop).result()

    def _write_sources(self) -> tuple[str, ...]:
        return self._sources(None, 1)

    def _retract(
        self, memory_ids: Sequence[str], sources: tuple[str, ...], scope: str, reason: str
    ) -> None:
        if scope not in ("branch", "tree"):
            raise InvalidInput(f"scope must be 'branch' or 'tree', got {scope!r}")
        self.store.retract(
            f"mem0:delete:{uuid.uuid4().hex}",
            sources=list(sources),
            targets=[record_id_for(m) for m in memory_ids],
            scope=scope,
            reason=reason,
            namespace=self.namespace,
        )

    def _size(self, top_k: int | None, limit: int | None, method: str) -> int:
        size = top_k if top_k is not None else limit
        if size is None:
            default = self._default(method, "top_k" if self.filters_api else "limit")
            size = int(default) if isinstance(default, int) else 20
        if size < 1:
            raise InvalidInput(f"top_k must be >= 1, got {size}")
        return size

    def _default(self, method: str, parameter: str) -> Any:
        """The installed Mem0's default for a parameter (None if it has none)."""
        found = inspect.signature(getattr(self.memory, method)).parameters.get(parameter)
        if found is None or found.default is inspect.Parameter.empty:
            return None
        return found.default

    def explain(self, memory_id: str, anchor: str | None) -> Explanation:
        """Why a Mem0 memory is (not) visible at ``anchor`` (``Memory.explain``)."""
        return self.store.explain(record_id_for(memory_id), anchor, namespace=self.namespace)

    # ---------------------------------------------------------------- helpers

    def _visible(self, anchor: str | None) -> dict[str, Record]:
        """Mem0 memory id -> the record revision visible at ``anchor`` (the store's mode
        decides what no anchor means: nothing in strict mode)."""
        records = self.store.visible(anchor, kind=MEM0_KIND, namespace=self.namespace)
        return {str(r.meta.get("mem0_id", r.id.removeprefix("mem0:"))): r for r in records}

    def _known(self, memory_id: str) -> bool:
        return self._exists(record_id_for(memory_id))

    def _exists(self, record_id: str) -> bool:
        try:
            self.store.get_record(record_id, namespace=self.namespace)
        except NotFoundError:
            return False
        return True

    @staticmethod
    def _messages(
        messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
    ) -> list[dict[str, Any]]:
        if isinstance(messages, str):
            return [{"role": "user", "content": messages}]
        if isinstance(messages, Mapping):
            return [dict(messages)]
        return [dict(m) for m in messages]

    def _check_events(self, event_ids: Sequence[str], count: int) -> tuple[str, ...]:
        if isinstance(event_ids, str):
            raise InvalidInput("event_ids must be a sequence of event ids, not one string")
        ids = tuple(event_ids)
        if not ids:
            raise InvalidInput("event_ids is empty: every add needs the events it derives from")
        if len(ids) != count:
            raise InvalidInput(
                f"event_ids has {len(ids)} ids for {count} messages; give one id per message"
            )
        for event_id in ids:
            self.store.get_event(event_id, namespace=self.namespace)  # NotFoundError names it
        return ids

    def _deepest(self, event_ids: tuple[str, ...]) -> str:
        """The event among ``event_ids`` whose root path holds all the others (walking up
        from it: the cost is the distance the ids span, not the conversation's depth)."""
        if len(event_ids) == 1:
            return event_ids[0]
        wanted = set(event_ids)
        for candidate in reversed(event_ids):
            if self._above(candidate, wanted):
                return candidate
        raise InvalidInput(f"event_ids {list(event_ids)} do not lie on one root path")

    def _above(self, event_id: str | None, wanted: set[str]) -> bool:
        """Whether every id of ``wanted`` is ``event_id`` or one of its known ancestors."""
        missing = set(wanted)
        while event_id is not None:
            missing.discard(event_id)
            if not missing:
                return True
            try:
                event_id = self.store.get_event(event_id, namespace=self.namespace).parent
            except NotFoundError:  # ancestry not arrived yet: the rest cannot be checked
                return False
        return False
