"""The read path: Mem0's hits gated by visibility, merged with archived texts.

Mem0 physically forgets an UPDATEd text and a DELETEd memory, but the record keeps every
revision's text; such *archived* texts are ranked here with Mem0's own embedder (cosine,
the score Mem0 1.x's vector search returns) and merged with Mem0's hits.

Plain functions over the wrapper (not a mixin): they call its Mem0 and read its store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from branchmem.errors import NotFoundError

from .observe import IDENTITY_KEYS, MEM0_KIND, cosine, deletion_id, md5_hex, record_id_for

if TYPE_CHECKING:
    from branchmem import Record

    from .wrapper import BranchMem0

_MAX_FETCH = 100_000


class VisibleAt:
    """The revision of a memory visible at one anchor, decided one memory at a time.

    ``add``, ``get``, ``update`` and ``delete`` touch a few memories: asking the store
    about those (``explain``) costs the same at 100 memories as at 100,000, where reading
    the whole view (``visible``) costs every memory on the path. Decisions are kept, so
    ``decide`` first fixes them as they stood before the call wrote anything.
    """

    def __init__(self, wrapper: BranchMem0, anchor: str | None) -> None:
        self.wrapper = wrapper
        self.anchor = anchor
        self._found: dict[str, Record | None] = {}

    def decide(self, memory_ids: Iterable[str]) -> VisibleAt:
        for memory_id in memory_ids:
            self.get(memory_id)
        return self

    def get(self, memory_id: str) -> Record | None:
        if memory_id not in self._found:
            self._found[memory_id] = self._decided(memory_id)
        return self._found[memory_id]

    def __contains__(self, memory_id: str) -> bool:
        return self.get(memory_id) is not None

    def _decided(self, memory_id: str) -> Record | None:
        store, namespace = self.wrapper.store, self.wrapper.namespace
        record_id = record_id_for(memory_id)
        try:
            why = store.explain(record_id, self.anchor, namespace=namespace)
        except NotFoundError:
            return None
        if not why.visible or why.revision is None:
            return None
        record = store.get_record(record_id, revision=why.revision, namespace=namespace)
        return record if record.kind == MEM0_KIND else None


def gated(
    fetch: Callable[[int], list[dict[str, Any]]],
    visible: dict[str, Record],
    limit: int,
    overfetch: int,
) -> list[dict[str, Any]]:
    """Mem0's hits whose text is the revision visible here, growing the request until
    ``limit`` pass or Mem0 returns fewer than asked (it has no more)."""
    size = max(limit * overfetch, limit + 10)
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


def archived_revisions(
    wrapper: BranchMem0,
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
        latest = wrapper.store.get_record(record_id_for(memory_id), namespace=wrapper.namespace)
        deleted = wrapper._exists(deletion_id(memory_id))
        if deleted or latest.content != record.content:
            out.append(record)
    return out


def archived_item(record: Record) -> dict[str, Any]:
    """An archived revision in the shape of a Mem0 result item."""
    item: dict[str, Any] = {
        "id": record.meta.get("mem0_id", record.id.removeprefix("mem0:")),
        "memory": record.content,
        "revision": record.revision,
        "archived": True,
    }
    item.update({k: record.meta[k] for k in IDENTITY_KEYS if k in record.meta})
    return item


def scored_archived(
    wrapper: BranchMem0, query: str, records: list[Record], threshold: float | None
) -> list[dict[str, Any]]:
    """Archived revisions scored against ``query`` as Mem0 would, below ``threshold`` dropped."""
    query_vector = wrapper.memory.embedding_model.embed(query, "search")
    items = []
    for record in records:
        score = cosine(query_vector, vector(wrapper, record.content))
        if threshold is None or score >= threshold:
            items.append({**archived_item(record), "score": score})
    return items


def vector(wrapper: BranchMem0, text: str) -> list[float]:
    """``text``'s embedding by Mem0's embedder, cached on the wrapper by the text's hash."""
    key = md5_hex(text)
    if key not in wrapper._vectors:
        wrapper._vectors[key] = list(wrapper.memory.embedding_model.embed(text, "search"))
    return wrapper._vectors[key]


def mem0_search(
    wrapper: BranchMem0,
    query: str,
    identity: dict[str, str | None],
    size: int,
    threshold: float | None,
    filters: dict[str, Any] | None,
    options: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """Mem0's own ``search``, in the installed version's dialect (2.x filters, 1.x keywords)."""
    scope = {k: v for k, v in identity.items() if v is not None}
    extra: dict[str, Any] = dict(options)
    if threshold is not None:
        extra["threshold"] = threshold
    memory = wrapper.memory
    if wrapper.filters_api:
        found = wrapper._done(
            memory.search(query, top_k=size, filters={**(filters or {}), **scope}, **extra)
        )
    else:
        rest = {k: v for k, v in (filters or {}).items() if k not in IDENTITY_KEYS}
        found = wrapper._done(
            memory.search(query, limit=size, filters=rest or None, **scope, **extra)
        )
    return list(found.get("results", []) if isinstance(found, dict) else found)


def mem0_get_all(
    wrapper: BranchMem0,
    identity: dict[str, str | None],
    size: int,
    filters: dict[str, Any] | None,
    options: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """Mem0's own ``get_all``, in the installed version's dialect."""
    scope = {k: v for k, v in identity.items() if v is not None}
    memory = wrapper.memory
    if wrapper.filters_api:
        found = wrapper._done(
            memory.get_all(filters={**(filters or {}), **scope}, top_k=size, **options)
        )
    else:
        rest = {k: v for k, v in (filters or {}).items() if k not in IDENTITY_KEYS}
        if rest:
            options = {**options, "filters": rest}
        found = wrapper._done(memory.get_all(limit=size, **scope, **options))
    return list(found.get("results", []) if isinstance(found, dict) else found)
