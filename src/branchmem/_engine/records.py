"""Records and their revisions (SPEC §2): writing, indexing for search, reading back.

A revision's sources are resolved and its gate computed when it is written
(``Resolution``), so visibility later reads an index instead of walking sources. A new
revision of a record leaves what cited the old one stale (``dependents.mark_stale``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .._core.provenance import (
    EVENT,
    UNKNOWN,
    RevisionNode,
    SourceRef,
    new_revision,
    parse_pin,
)
from .._core.validation import (
    Keep,
    check_batch_item,
    check_id,
    check_meta,
    check_optional_str,
    check_sources,
    check_text,
)
from ..errors import ConflictError, CycleError, ErasedError, InvalidInput, NotFoundError
from ..model import ERASED, RETRACTION_KIND, REVISED, Record
from .dependents import mark_stale
from .namespace import Namespace
from .supersede import supersede


def add_record(
    ns: Namespace,
    record_id: str,
    sources: object,
    content: object,
    kind: str,
    key: object,
    scope: object,
    meta: object,
    supersedes: tuple[str, ...],
    *,
    batch: RecordBatch | None = None,
) -> RevisionNode:
    """Write revision 1 (a re-add with the same fields is a no-op) and its supersedes.

    Within ``add_records`` (``batch``) the write waits in the batch and the batch logs one
    audit entry; the batch is written out first whenever this record reads what it holds."""
    check_id(record_id, "record id")
    what = f"record {record_id!r}"
    checked_sources = check_sources(sources, what)
    if not isinstance(content, str):
        raise InvalidInput(f"{what}: content must be a string")
    checked_key = check_optional_str(key, f"{what}: key")
    checked_scope = check_optional_str(scope, f"{what}: scope")
    checked_meta = check_meta(meta, what)
    check_text(kind, f"{what}: kind")
    check_text(content, f"{what}: content")
    store, namespace = ns.store, ns.name
    if batch is not None:
        batch.before_reading(record_id, checked_sources or ())
    existing = store.get_revisions(namespace, record_id)
    if existing and store.statuses(namespace, [record_id]).get(record_id) == ERASED:
        raise ErasedError(f"record {record_id!r} was erased; its id cannot be reused")
    if existing:
        first = existing[0]
        same = (first.content, first.sources, first.kind, first.key, first.scope) == (
            content,
            checked_sources,
            kind,
            checked_key,
            checked_scope,
        )
        if same and not supersedes:
            return existing[-1]
        if same and batch and set(supersedes) <= set(store.superseded_by(namespace, record_id)):
            return existing[-1]  # a batch retried after it committed: nothing to add
        raise ConflictError(f"{what} already exists with different fields; use revise()")
    if store.get_event(namespace, record_id) is not None:
        raise ConflictError(f"id {record_id!r} is already an event in namespace {namespace!r}")
    resolution = ns.resolution() if batch is None else batch.resolution
    refs = resolution.refs(checked_sources)
    resolution.check_cycle(record_id, refs)
    node = new_revision(
        record_id, 1, kind, content, checked_sources, refs, checked_key, checked_scope,
        checked_meta, store.next_seq(namespace), resolution.gate(refs),
    )  # fmt: skip
    if batch is not None:
        batch.hold(node)
        if not supersedes and record_id not in batch.awaited:
            noted(ns, node, supersedes, cited=False)
            return node  # nothing cites it yet: record_arrived would find nothing to pin
        batch.flush()
    else:
        store.put_revision(namespace, node)
        index(ns, node)
        ns.audit("add_record", (record_id,), revision=1)
    for old_id in supersedes:
        supersede(ns, record_id, old_id)
    noted(ns, node, supersedes, cited=resolution.record_arrived(record_id, 1))
    return node


def noted(ns: Namespace, node: RevisionNode, supersedes: tuple[str, ...], *, cited: bool) -> None:
    """Tell the kept search views what a new record changed: nothing but itself when it is
    under no key, cites events only, supersedes nothing and nothing named it before it
    existed (``_engine.viewcache.Appended``); else more than that."""
    views = ns.views
    if views is None:
        return
    refs = node.refs or ()
    if cited or supersedes or node.key is not None or not refs:
        views.not_only_adding()
    elif all(ref.kind == EVENT for ref in refs):
        views.added_record(ns.name, node)
    else:
        views.not_only_adding()


class RecordBatch:
    """New revisions of one ``add_records`` call, held back to be written with one statement
    per table. Held revisions are invisible to the store's reads, so the batch is written out
    before a record reads one of them (it cites or repeats a held id), before a supersede, and
    before a record that something already names arrives (``record_arrived`` reads citing)."""

    def __init__(self, ns: Namespace, ids: list[str]) -> None:
        self.ns = ns
        self.resolution = ns.resolution()  # one for the batch: the same for every record
        self.held: dict[str, RevisionNode] = {}
        self.awaited = {target for target, _ in ns.store.citing_any(ns.name, ids)}

    def before_reading(self, record_id: str, sources: tuple[str, ...]) -> None:
        held = self.held
        if not held:
            return
        if record_id in held:
            self.flush()
            return
        for source in sources:
            if source in held or ((pin := parse_pin(source)) is not None and pin[0] in held):
                self.flush()
                return

    def hold(self, node: RevisionNode) -> None:
        self.held[node.record_id] = node
        for ref in node.refs or ():
            if ref.kind == UNKNOWN:  # a later record of the batch may be what it names
                self.awaited.update((ref.target, ref.text))

    def flush(self) -> None:
        nodes = list(self.held.values())
        self.held.clear()
        self.ns.store.put_revisions(self.ns.name, nodes)
        index(self.ns, *nodes)


RECORD_FIELDS = frozenset(
    {"id", "sources", "content", "kind", "key", "scope", "meta", "supersedes"}
)


def record_spec(item: Mapping[str, Any] | Record, index: int) -> dict[str, Any]:
    """The arguments of ``add_record`` for one item of ``add_records``, checked up front so a
    bad item is refused before anything is written."""
    if isinstance(item, Record):
        item = {
            "id": item.id,
            "sources": item.sources,
            "content": item.content,
            "kind": item.kind,
            "key": item.key,
            "scope": item.scope,
            "meta": item.meta,
        }
    item = check_batch_item(item, f"records[{index}]", RECORD_FIELDS, ("id", "sources"))
    record_id, kind, supersedes = item["id"], item.get("kind", "fact"), item.get("supersedes", ())
    where = f"records[{index}] (id {record_id!r})"
    try:
        check_id(record_id, "record id")
        check_id(kind, "kind")
    except InvalidInput as error:
        raise InvalidInput(f"{where}: {error}") from None
    if kind == RETRACTION_KIND:
        raise InvalidInput(f"{where}: kind 'retraction' is reserved: use retract()")
    if isinstance(supersedes, str) or not isinstance(supersedes, list | tuple):
        raise InvalidInput(f"{where}: supersedes must be a list of record ids")
    return {
        "record_id": record_id,
        "sources": item["sources"],
        "content": item.get("content", ""),
        "kind": kind,
        "key": item.get("key"),
        "scope": item.get("scope"),
        "meta": item.get("meta"),
        "supersedes": tuple(supersedes),
    }


def add_records(ns: Namespace, specs: list[dict[str, Any]]) -> list[RevisionNode]:
    """Write checked specs in order, each able to cite those before it, and log them as one
    audit entry. The caller's transaction makes the batch all or nothing; an error names the
    item it stopped at."""
    listed = [spec["sources"] for spec in specs if isinstance(spec["sources"], list | tuple)]
    sources = [s for names in listed for s in names if isinstance(s, str)]
    ids = [spec["record_id"] for spec in specs]
    ns.store.prefetch(
        ns.name,
        ids + sources,
        children=False,  # a record places no event
        ancestry=_merged_sources(specs),
        citing=ids,  # what the batch asks first: does anything already name these ids
    )
    batch = RecordBatch(ns, ids)
    nodes: list[RevisionNode] = []
    for number, spec in enumerate(specs):
        record_id = spec["record_id"]
        try:
            nodes.append(add_record(ns, **spec, batch=batch))
            if number == len(specs) - 1:
                batch.flush()  # a stored text the database refuses still names its item
        except (InvalidInput, ConflictError, CycleError, ErasedError, NotFoundError) as error:
            raise type(error)(f"records[{number}] (id {record_id!r}): {error}") from None
    if nodes:
        ns.audit("add_records", [node.record_id for node in nodes])
    return nodes


def _merged_sources(specs: list[dict[str, Any]]) -> list[str]:
    """The sources whose places an ancestor test compares when the batch's gates merge
    frontiers (a record citing two or more): those named, and through a record of the batch
    named (plainly or pinned to a revision: ``"f1@1"``), that record's own (a summary of
    facts merges the facts' events)."""
    cites = {
        spec["record_id"]: [s for s in spec["sources"] if isinstance(s, str)]
        for spec in specs
        if isinstance(spec["sources"], list | tuple)
    }
    merged: dict[str, None] = {}
    for names in cites.values():
        if len(names) < 2:
            continue  # one source: its frontiers are its source's, nothing is merged
        pending, seen = list(names), set(names)
        while pending:
            name = pending.pop()
            merged[name] = None
            pinned = parse_pin(name)
            for deeper in cites.get(name if pinned is None else pinned[0], ()):
                if deeper not in seen:
                    seen.add(deeper)
                    pending.append(deeper)
    return list(merged)


def revise(
    ns: Namespace, record_id: str, content: object, sources: object, meta: object
) -> RevisionNode:
    """Write the next revision of a record, with its own sources."""
    latest = ns.latest(record_id)
    if latest.kind == RETRACTION_KIND:
        raise InvalidInput(f"retraction {record_id!r} cannot be revised; withdraw it instead")
    what = f"record {record_id!r}"
    node = next_revision(ns, latest, content, sources, what, meta=meta)
    put_new_revision(ns, node, "revise")
    return node


def next_revision(
    ns: Namespace,
    latest: RevisionNode,
    content: object,
    sources: object,
    what: str,
    *,
    meta: object = None,
    refuse_erased: bool = False,
) -> RevisionNode:
    """The revision after ``latest`` with this content and sources, checked and gated (not yet
    stored); ``refuse_erased``: a source erased meanwhile is an ``ErasedError``. ``KEEP``
    takes ``latest``'s sources with their pins as they stand (a late arrival has already
    pinned them), so keeping them never re-points a source at a newer revision."""
    resolution = ns.resolution()
    if isinstance(sources, Keep):
        checked_sources, refs = latest.sources, latest.refs
    else:
        checked_sources = check_sources(sources, what)
        refs = resolution.refs(checked_sources)
        resolution.check_cycle(latest.record_id, refs)
    if not isinstance(content, str):
        raise InvalidInput(f"{what}: content must be a string")
    if refuse_erased:
        check_not_built_on_erased(ns, what, refs)
    return replace(
        latest,
        revision=latest.revision + 1,
        content=content,
        sources=checked_sources,
        refs=refs,
        meta=latest.meta if meta is None else check_meta(meta, what),
        seq=ns.store.next_seq(ns.name),
        gate=resolution.gate(refs),
    )


def put_new_revision(ns: Namespace, node: RevisionNode, op: str) -> None:
    """Store, index and announce a revision; what cited the old one goes stale."""
    ns.store.put_revision(ns.name, node)
    index(ns, node)
    ns.audit(op, (node.record_id,), revision=node.revision)
    ns.resolution().record_arrived(node.record_id, node.revision)
    mark_stale(ns, node.record_id, REVISED)


def index(ns: Namespace, *nodes: RevisionNode) -> None:
    """Store the revisions' vectors when an embedder is set (their text is searched where it
    is), embedded in one call: a batch of records costs the embedder one batch."""
    written = [node for node in nodes if node.content]
    if ns.embedder is None or not written:
        return
    vectors = ns.embedder.embed([node.content for node in written])
    if len(vectors) != len(written):
        raise InvalidInput(f"the embedder returned {len(vectors)} vectors for {len(written)} texts")
    for node, vector in zip(written, vectors, strict=True):
        ns.store.put_vector(ns.name, (node.record_id, node.revision), vector)


def check_not_built_on_erased(ns: Namespace, what: str, refs: tuple[SourceRef, ...] | None) -> None:
    """A repair derived while its sources were being erased would write erased text back
    (erasure cascades only over what existed when it ran): refuse it. A caller's own
    add_record/revise citing an erased id is allowed; the record is simply never shown."""
    targets = [ref.target for ref in refs or ()]
    for target, status in ns.store.statuses(ns.name, targets).items():
        if status == ERASED:
            raise ErasedError(f"{what}: source {target!r} was erased")


def get_record(ns: Namespace, record_id: str, revision: int | None) -> Record:
    """The latest (or a named) revision, whatever any view would decide."""
    latest = ns.latest(record_id)
    if revision is None:
        return ns.to_record(latest)
    revisions = ns.store.get_revisions(ns.name, record_id)
    if not isinstance(revision, int) or not 1 <= revision <= len(revisions):
        raise NotFoundError(f"record {record_id!r} has no revision {revision!r}")
    return ns.to_record(revisions[revision - 1])
