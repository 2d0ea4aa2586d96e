"""``BranchMem0``: a real ``mem0.Memory`` whose memories carry source events.

Mem0 keeps no link from a memory to the messages it came from (mem0ai issue #7047), so a
memory written on an abandoned branch, an UPDATE driven by a sibling's message, or a
DELETE issued from another branch all look the same as a fact of the current conversation.
The wrapper lets Mem0 run unchanged and mirrors each of its decisions into a branchmem store
as a record whose sources are the event ids of the ``add`` call that caused it:

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

Reads gate by visibility at an anchor. Mem0 physically forgets an UPDATEd text and a
DELETEd memory, but the record keeps every revision's text; such *archived* texts are
ranked by the wrapper with Mem0's own embedder (cosine, the score Mem0 1.x's vector search
returns) and merged with Mem0's hits.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from branchmem.errors import InvalidInput, NotFoundError

if TYPE_CHECKING:
    from branchmem import Explanation, Memory, Record

__all__ = ["MEM0_KIND", "SCOPE_CHANGE_KIND", "AddOutcome", "BranchMem0", "record_id_for"]

MEM0_KIND = "mem0_memory"
SCOPE_CHANGE_KIND = "mem0_scope_change"
_IDENTITY_KEYS = ("user_id", "agent_id", "run_id")
_MAX_FETCH = 100_000


def record_id_for(memory_id: str) -> str:
    """The branchmem record id mirroring a Mem0 memory (prefixed: one id space per namespace
    holds events and records, and Mem0's UUIDs must not collide with event ids)."""
    return f"mem0:{memory_id}"


def _deletion_id(memory_id: str) -> str:
    return f"mem0:{memory_id}:delete"


@dataclass
class AddOutcome:
    """What one ``add`` call wrote to the branchmem store, by Mem0 memory id."""

    anchor: str
    added: list[str] = field(default_factory=list)
    revised: list[str] = field(default_factory=list)
    retracted: list[str] = field(default_factory=list)
    attested: list[str] = field(default_factory=list)
    scope_changes: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON form, put under the ``"branchmem"`` key of Mem0's add result."""
        return {
            "anchor": self.anchor,
            "added": list(self.added),
            "revised": list(self.revised),
            "retracted": list(self.retracted),
            "attested": list(self.attested),
            "scope_changes": list(self.scope_changes),
            "unknown": list(self.unknown),
        }


@dataclass
class _Observed:
    """What Mem0's pipeline looked at during one add: the fact texts the LLM extracted and
    the stored memories its neighbour search returned (id -> payload, before any change)."""

    extracted: list[str] = field(default_factory=list)
    neighbours: dict[str, dict[str, Any]] = field(default_factory=dict)


@contextmanager
def _tap(target: Any, name: str, observe: Callable[[Any], None]) -> Iterator[None]:
    """Shadow ``target.name`` with a pass-through that hands each return value to
    ``observe``; the instance attribute is removed (or restored) afterwards."""
    had_own = name in vars(target)
    own = vars(target).get(name)
    original = getattr(target, name)

    def passthrough(*args: Any, **kwargs: Any) -> Any:
        value = original(*args, **kwargs)
        observe(value)
        return value

    setattr(target, name, passthrough)
    try:
        yield
    finally:
        if had_own:
            setattr(target, name, own)
        else:
            delattr(target, name)
            if not hasattr(target, name):
                # a Mock keeps its children outside ``__dict__`` and takes a delattr as
                # "this attribute is gone": put the original back instead
                setattr(target, name, original)


def _extracted_texts(response: Any) -> list[str]:
    """Fact texts in an extraction answer: 1.x ``{"facts": [...]}``, 2.x ``{"memory":
    [{"text": ...}]}``. 1.x update decisions (items with an ``event``) are not facts."""
    if not isinstance(response, str):
        return []
    text = response.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        parsed = json.loads(text, strict=False)
    except json.JSONDecodeError:
        return []
    if not isinstance(parsed, dict):
        return []
    out: list[str] = []
    for fact in parsed.get("facts") or []:
        if isinstance(fact, str):
            out.append(fact)
        elif isinstance(fact, dict) and isinstance(fact.get("fact") or fact.get("text"), str):
            out.append(str(fact.get("fact") or fact.get("text")))
    for item in parsed.get("memory") or []:
        if isinstance(item, dict) and "event" not in item and isinstance(item.get("text"), str):
            out.append(item["text"])
    return out


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


class BranchMem0:
    """A Mem0 memory whose reads answer as seen from an anchor event.

    ``memory`` is a ``mem0.Memory`` (1.0.x or 2.x; detected from its ``search`` signature),
    ``store`` a branchmem ``Memory`` that already holds the conversation's events: the
    caller records the tree with ``store.add_event`` and names, on each ``add``, the events
    the messages are.
    """

    def __init__(
        self,
        memory: Any,
        store: Memory,
        *,
        namespace: str = "default",
        overfetch: int = 4,
    ) -> None:
        if overfetch < 1:
            raise InvalidInput(f"overfetch must be >= 1, got {overfetch}")
        self.memory = memory
        self.store = store
        self.namespace = namespace
        self.overfetch = overfetch
        self.filters_api = "top_k" in inspect.signature(memory.search).parameters
        self._lock = threading.RLock()
        self._vectors: dict[str, list[float]] = {}

    # ----------------------------------------------------------------- writes

    def add(
        self,
        messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        event_ids: Sequence[str],
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
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
        sources = self._check_events(event_ids, len(listed))
        anchor = self._deepest(sources)
        identity = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        observed = _Observed()

        def on_llm(response: Any) -> None:
            observed.extracted.extend(_extracted_texts(response))

        def on_search(hits: Any) -> None:
            for hit in hits or []:
                payload = getattr(hit, "payload", None)
                if payload is not None and str(hit.id) not in observed.neighbours:
                    observed.neighbours[str(hit.id)] = dict(payload)

        with (
            self._lock,
            _tap(self.memory.llm, "generate_response", on_llm),
            _tap(self.memory.vector_store, "search", on_search),
        ):
            result = self.memory.add(
                listed,
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
                metadata=metadata,
                infer=infer,
                **kwargs,
            )
            outcome = self._mirror(
                result, observed, sources, anchor, identity, listed, infer, delete_scope
            )
        out = dict(result) if isinstance(result, dict) else {"results": result}
        out["branchmem"] = outcome.as_dict()
        return out

    def _mirror(
        self,
        result: Any,
        observed: _Observed,
        sources: tuple[str, ...],
        anchor: str,
        identity: dict[str, str | None],
        messages: list[dict[str, Any]],
        infer: bool,
        delete_scope: str,
    ) -> AddOutcome:
        outcome = AddOutcome(anchor=anchor)
        here = self._visible(anchor)
        items = result.get("results", []) if isinstance(result, dict) else result or []
        reported: set[str] = set()
        meta = {k: v for k, v in identity.items() if v is not None}
        verbatim = self._verbatim_sources(messages, sources) if not infer else []
        for item in items:
            memory_id = str(item.get("id"))
            reported.add(memory_id)
            event = item.get("event")
            text = str(item.get("memory", ""))
            if event == "ADD":
                # infer=False stores each message as it is: its source is that message alone
                own = verbatim.pop(0) if verbatim else sources
                self.store.add_record(
                    record_id_for(memory_id),
                    sources=list(own),
                    content=text,
                    kind=MEM0_KIND,
                    meta={**meta, "mem0_id": memory_id, "mem0_event": "ADD"},
                    namespace=self.namespace,
                )
                outcome.added.append(memory_id)
            elif event == "UPDATE":
                prior = here.get(memory_id)
                joined = tuple(prior.sources or ()) + sources if prior is not None else sources
                self._write_revision(memory_id, text, joined, {**meta, "mem0_event": "UPDATE"})
                outcome.revised.append(memory_id)
            elif event == "DELETE":
                if not self._known(memory_id):
                    outcome.unknown.append(memory_id)
                    continue
                self.store.retract(
                    _deletion_id(memory_id),
                    sources=list(sources),
                    targets=[record_id_for(memory_id)],
                    scope=delete_scope,
                    reason="mem0 DELETE",
                    namespace=self.namespace,
                )
                outcome.retracted.append(memory_id)
        self._attest_duplicates(observed, reported, here, sources, meta, outcome)
        if identity.get("agent_id") or identity.get("run_id"):
            self._record_scope_moves(observed, reported, sources, outcome)
        return outcome

    @staticmethod
    def _verbatim_sources(
        messages: list[dict[str, Any]], sources: tuple[str, ...]
    ) -> list[tuple[str, ...]]:
        """With ``infer=False`` Mem0 ADDs one memory per non-system message, in order."""
        return [
            (event_id,)
            for message, event_id in zip(messages, sources, strict=True)
            if message.get("role") not in (None, "system") and message.get("content") is not None
        ]

    def _attest_duplicates(
        self,
        observed: _Observed,
        reported: set[str],
        here: dict[str, Record],
        sources: tuple[str, ...],
        meta: dict[str, str],
        outcome: AddOutcome,
    ) -> None:
        hashes = {_md5(text) for text in observed.extracted}
        for memory_id, payload in observed.neighbours.items():
            if memory_id in reported or payload.get("hash") not in hashes:
                continue
            if memory_id in here:
                continue  # a true duplicate: already stated on this path
            text = str(payload.get("data", ""))
            self._write_revision(memory_id, text, sources, {**meta, "mem0_event": "DUPLICATE"})
            outcome.attested.append(memory_id)

    def _record_scope_moves(
        self,
        observed: _Observed,
        reported: set[str],
        sources: tuple[str, ...],
        outcome: AddOutcome,
    ) -> None:
        for memory_id, before in observed.neighbours.items():
            if memory_id in reported:
                continue
            stored = self.memory.vector_store.get(vector_id=memory_id)
            after = dict(getattr(stored, "payload", None) or {})
            moved = {k: (before.get(k), after.get(k)) for k in ("agent_id", "run_id")}
            moved = {k: v for k, v in moved.items() if v[0] != v[1]}
            if stored is None or not moved:
                continue
            self.store.add_record(
                f"mem0:{memory_id}:scope:{uuid.uuid4().hex[:12]}",
                sources=list(sources),
                content=json.dumps({k: list(v) for k, v in moved.items()}),
                kind=SCOPE_CHANGE_KIND,
                meta={"mem0_id": memory_id, "mem0_event": "NONE"},
                namespace=self.namespace,
            )
            outcome.scope_changes.append(memory_id)

    def _write_revision(
        self, memory_id: str, text: str, sources: tuple[str, ...], meta: dict[str, str]
    ) -> None:
        unique = list(dict.fromkeys(sources))
        full_meta = {**meta, "mem0_id": memory_id}
        if self._known(memory_id):
            self.store.revise(
                record_id_for(memory_id),
                content=text,
                sources=unique,
                meta=full_meta,
                namespace=self.namespace,
            )
        else:  # written by Mem0 before the wrapper was in place
            self.store.add_record(
                record_id_for(memory_id),
                sources=unique,
                content=text,
                kind=MEM0_KIND,
                meta=full_meta,
                namespace=self.namespace,
            )

    # ------------------------------------------------------------------ reads

    def search(
        self,
        query: str,
        *,
        anchor: str | None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 10,
        threshold: float | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, list[dict[str, Any]]]:
        """Mem0's search, answered as seen from ``anchor``, ``limit`` results at most.

        Over-fetch and gate: Mem0 ranks (its hybrid scoring stays intact), the wrapper
        drops what is not visible and asks for more until ``limit`` visible hits are found
        or Mem0 has nothing left. Gating inside Mem0 would need an id filter, which Mem0
        does not offer on ids and few of its vector stores implement reliably on payloads.
        """
        if limit < 1:
            raise InvalidInput(f"limit must be >= 1, got {limit}")
        identity = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        visible = self._visible(anchor)
        if not visible:
            return {"results": []}

        def fetch(n: int) -> list[dict[str, Any]]:
            return self._mem0_search(query, identity, n, threshold, filters)

        with self._lock:  # an add in flight taps Mem0's search; do not feed it our queries
            hits = self._gated(fetch, visible, limit)
            archived = self._archived(visible, identity, {str(h["id"]) for h in hits})
            if archived:
                query_vector = self.memory.embedding_model.embed(query, "search")
                for record in archived:
                    score = _cosine(query_vector, self._vector(record.content))
                    if threshold is None or score >= threshold:
                        hits.append({**self._archived_item(record), "score": score})
                hits.sort(key=lambda h: -float(h.get("score") or 0.0))
        return {"results": hits[:limit]}

    def get_all(
        self,
        *,
        anchor: str | None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
    ) -> dict[str, list[dict[str, Any]]]:
        """Every memory visible at ``anchor`` in Mem0's order, archived texts last."""
        if limit < 1:
            raise InvalidInput(f"limit must be >= 1, got {limit}")
        identity = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        visible = self._visible(anchor)
        if not visible:
            return {"results": []}

        def fetch(n: int) -> list[dict[str, Any]]:
            return self._mem0_get_all(identity, n)

        with self._lock:
            hits = self._gated(fetch, visible, limit)
            archived = self._archived(visible, identity, {str(h["id"]) for h in hits})
        hits.extend(self._archived_item(r) for r in archived)
        return {"results": hits[:limit]}

    def explain(self, memory_id: str, anchor: str | None) -> Explanation:
        """Why a Mem0 memory is (not) visible at ``anchor`` (``Memory.explain``)."""
        return self.store.explain(record_id_for(memory_id), anchor, namespace=self.namespace)

    def _gated(
        self,
        fetch: Callable[[int], list[dict[str, Any]]],
        visible: dict[str, Record],
        limit: int,
    ) -> list[dict[str, Any]]:
        """Mem0's hits whose text is the revision visible here, growing the request until
        ``limit`` pass or Mem0 returns fewer than asked (it has no more)."""
        size = max(limit * self.overfetch, limit + 10)
        while True:
            raw = fetch(size)
            passed = []
            for hit in raw:
                record = visible.get(str(hit.get("id")))
                if record is not None and record.content == hit.get("memory"):
                    passed.append({**hit, "revision": record.revision})
            if len(passed) >= limit or len(raw) < size or size >= _MAX_FETCH:
                return passed[:limit]
            size *= 2

    def _archived(
        self,
        visible: dict[str, Record],
        identity: dict[str, str | None],
        live: set[str],
    ) -> list[Record]:
        """Visible revisions whose text Mem0 no longer holds (updated over or deleted)."""
        out = []
        for memory_id, record in visible.items():
            if memory_id in live:
                continue
            if any(v is not None and record.meta.get(k) != v for k, v in identity.items()):
                continue
            latest = self.store.get_record(record_id_for(memory_id), namespace=self.namespace)
            deleted = self._exists(_deletion_id(memory_id))
            if deleted or latest.content != record.content:
                out.append(record)
        return out

    def _archived_item(self, record: Record) -> dict[str, Any]:
        item: dict[str, Any] = {
            "id": record.meta.get("mem0_id", record.id.removeprefix("mem0:")),
            "memory": record.content,
            "revision": record.revision,
            "archived": True,
        }
        item.update({k: record.meta[k] for k in _IDENTITY_KEYS if k in record.meta})
        return item

    def _vector(self, text: str) -> list[float]:
        key = _md5(text)
        if key not in self._vectors:
            self._vectors[key] = list(self.memory.embedding_model.embed(text, "search"))
        return self._vectors[key]

    def _mem0_search(
        self,
        query: str,
        identity: dict[str, str | None],
        size: int,
        threshold: float | None,
        filters: dict[str, Any] | None,
    ) -> list[dict[str, Any]]:
        scope = {k: v for k, v in identity.items() if v is not None}
        options: dict[str, Any] = {}
        if threshold is not None:
            options["threshold"] = threshold
        if self.filters_api:
            found = self.memory.search(
                query, top_k=size, filters={**(filters or {}), **scope}, **options
            )
        else:
            found = self.memory.search(query, limit=size, filters=filters, **scope, **options)
        return list(found.get("results", []) if isinstance(found, dict) else found)

    def _mem0_get_all(self, identity: dict[str, str | None], size: int) -> list[dict[str, Any]]:
        scope = {k: v for k, v in identity.items() if v is not None}
        if self.filters_api:
            found = self.memory.get_all(filters=scope, top_k=size)
        else:
            found = self.memory.get_all(limit=size, **scope)
        return list(found.get("results", []) if isinstance(found, dict) else found)

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
        """The event among ``event_ids`` whose root path holds all the others."""
        wanted = set(event_ids)
        for candidate in reversed(event_ids):
            on_path = {e.id for e in self.store.path(candidate, namespace=self.namespace)}
            if wanted <= on_path:
                return candidate
        raise InvalidInput(f"event_ids {list(event_ids)} do not lie on one root path")
