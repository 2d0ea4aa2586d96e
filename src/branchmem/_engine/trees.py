"""The trees of a namespace as the explorer (``/ui``, ``branchmem tree``) draws them.

These read the namespace as a whole (a tree's events, every record id): for looking, not
for prompts, which get their records from ``visible`` and ``context``. Each is called inside
one read snapshot (``Memory._read``), so a tree, its head and every record's decision come
from the same moment.
"""

from __future__ import annotations

from .._core.provenance import RevisionNode
from .._core.validation import check_id
from ..errors import NotFoundError
from ..model import ERASED, RecordView, TreeEvents, TreeSummary
from . import views
from .namespace import Namespace


def trees(ns: Namespace) -> list[TreeSummary]:
    """One summary per tree with a known id, by tree id: its roots, size and head.

    A detached event whose tree is still unknown is in no tree until its ancestry arrives.
    """
    roots: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    for node in ns.store.iter_events(ns.name):
        if node.tree is None:
            continue
        counts[node.tree] = counts.get(node.tree, 0) + 1
        found = roots.setdefault(node.tree, [])
        if node.parent is None:
            found.append(node.id)
    heads = ns.store.heads(ns.name)
    return [
        TreeSummary(tree=tree, roots=tuple(roots[tree]), events=counts[tree], head=heads.get(tree))
        for tree in sorted(counts)
    ]


def tree_events(ns: Namespace, tree: str) -> TreeEvents:
    """The attached events of ``tree`` in arrival order, and its head."""
    check_id(tree, "tree")
    nodes = [n for n in ns.store.iter_events(ns.name, tree) if n.tree == tree]
    if not nodes:
        raise NotFoundError(f"tree {tree!r} not found in namespace {ns.name!r}")
    nodes.sort(key=lambda n: n.seq)
    return TreeEvents(
        tree=tree,
        head=ns.store.heads(ns.name).get(tree),
        events=tuple(n.to_event(ns.name) for n in nodes),
    )


def record_views(
    ns: Namespace,
    anchor: str | None,
    cross_tree: bool,
    mode: str | None,
    include_superseded: bool,
    include_stale: bool,
    tree: str | None,
    as_of: int | None = None,
) -> list[RecordView]:
    """Every record of the namespace (with ``tree``: those built from that conversation)
    decided at ``anchor`` in one view, by record id, each with the text of the revision
    decided (the latest where none was). Erased records carry no text. ``as_of``: the
    records written by then, decided as they stood then, the latest being then's."""
    marks: dict[str, list[str]] = {}
    if tree is None:
        record_ids = sorted(ns.store.record_ids(ns.name))
    else:
        marks = tree_sources(ns, check_id(tree, "tree"))
        record_ids = sorted(marks)
    shown = views.view(ns, anchor, cross_tree, mode, as_of=as_of)
    written: dict[str, RevisionNode] = {}
    if as_of is not None:  # those written by then, each with its latest revision then
        for record_id in record_ids:
            revisions = shown.reader.get_revisions(ns.name, record_id)
            if revisions:
                written[record_id] = revisions[-1]
        record_ids = [record_id for record_id in record_ids if record_id in written]
    decisions = [shown.decide(record_id) for record_id in record_ids]
    views.tally(ns, shown, decisions)
    erased = {
        item for item, status in ns.store.statuses(ns.name, record_ids).items() if status == ERASED
    }
    found = []
    for decision in decisions:
        record_id = decision.record_id
        kind = key = content = None
        if record_id not in erased:
            revision = decision.revision
            if revision is None:
                revision = written[record_id] if as_of is not None else ns.latest(record_id)
            kind, key, content = revision.kind, revision.key, revision.content
        found.append(
            RecordView(
                explanation=views.explanation(decision, anchor, include_superseded, include_stale),
                kind=kind,
                key=key,
                content=content,
                tree_sources=tuple(marks.get(record_id, ())),
            )
        )
    return found


def tree_sources(ns: Namespace, tree: str) -> dict[str, list[str]]:
    """record id -> the events of ``tree`` its revisions draw on: direct sources, and the
    frontier, which stands for the sources reached through cited records."""
    in_tree = {n.id for n in ns.store.iter_events(ns.name, tree) if n.tree == tree}
    marks: dict[str, set[str]] = {}
    for node in ns.store.revisions_at(ns.name, in_tree):
        found = marks.setdefault(node.record_id, set())
        frontier = node.gate.frontier_in(tree)
        if frontier is not None:
            found.add(frontier.event)
        found.update(ref.target for ref in node.event_refs if ref.target in in_tree)
    return {record_id: sorted(events) for record_id, events in marks.items()}
