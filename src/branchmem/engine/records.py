"""Records and their revisions (SPEC §2): writing, indexing for search, reading back.

A revision's sources are resolved and its gate computed when it is written
(``Resolution``), so visibility later reads an index instead of walking sources. A new
revision of a record leaves what cited the old one stale (``dependents.mark_stale``).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ConflictError, ErasedError, InvalidInput, NotFoundError
from ..model import ERASED, RETRACTION_KIND, REVISED, Record
from ..provenance import RevisionNode, SourceRef
from ..search.lexical import normalize
from ..validation import check_id, check_meta, check_optional_str, check_sources
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
) -> RevisionNode:
    """Write revision 1 (a re-add with the same fields is a no-op) and its supersedes."""
    check_id(record_id, "record id")
    what = f"record {record_id!r}"
    checked_sources = check_sources(sources, what)
    if not isinstance(content, str):
        raise InvalidInput(f"{what}: content must be a string")
    checked_key = check_optional_str(key, f"{what}: key")
    checked_scope = check_optional_str(scope, f"{what}: scope")
    checked_meta = check_meta(meta, what)
    store, namespace = ns.store, ns.name
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
        raise ConflictError(f"{what} already exists with different fields; use revise()")
    if store.get_event(namespace, record_id) is not None:
        raise ConflictError(f"id {record_id!r} is already an event in namespace {namespace!r}")
    resolution = ns.resolution()
    refs = resolution.refs(checked_sources)
    resolution.check_cycle(record_id, refs)
    node = RevisionNode(
        record_id=record_id,
        revision=1,
        kind=kind,
        content=content,
        sources=checked_sources,
        refs=refs,
        key=checked_key,
        scope=checked_scope,
        meta=checked_meta,
        seq=store.next_seq(namespace),
        gate=resolution.gate(refs),
    )
    store.put_revision(namespace, node)
    index(ns, node)
    ns.audit("add_record", (record_id,), revision=1)
    for old_id in supersedes:
        supersede(ns, record_id, old_id)
    resolution.record_arrived(record_id, 1)
    return node


def revise(
    ns: Namespace, record_id: str, content: object, sources: object, meta: object
) -> RevisionNode:
    """Write the next revision of a record, with its own sources."""
    latest = ns.latest(record_id)
    if latest.kind == RETRACTION_KIND:
        raise InvalidInput(f"retraction {record_id!r} cannot be revised; withdraw it instead")
    what = f"record {record_id!r}"
    checked_sources = check_sources(sources, what)
    if not isinstance(content, str):
        raise InvalidInput(f"{what}: content must be a string")
    resolution = ns.resolution()
    refs = resolution.refs(checked_sources)
    resolution.check_cycle(record_id, refs)
    node = replace(
        latest,
        revision=latest.revision + 1,
        content=content,
        sources=checked_sources,
        refs=refs,
        meta=latest.meta if meta is None else check_meta(meta, what),
        seq=ns.store.next_seq(ns.name),
        gate=resolution.gate(refs),
    )
    put_new_revision(ns, node, "revise")
    return node


def put_new_revision(ns: Namespace, node: RevisionNode, op: str) -> None:
    """Store, index and announce a revision; what cited the old one goes stale."""
    ns.store.put_revision(ns.name, node)
    index(ns, node)
    ns.audit(op, (node.record_id,), revision=node.revision)
    ns.resolution().record_arrived(node.record_id, node.revision)
    mark_stale(ns, node.record_id, REVISED)


def index(ns: Namespace, node: RevisionNode) -> None:
    """Make a revision findable: normalized text, and its vector when an embedder is set."""
    vector = None
    if ns.embedder is not None and node.content:
        vector = ns.embedder.embed([node.content])[0]
    ns.store.put_search(ns.name, (node.record_id, node.revision), normalize(node.content), vector)


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
