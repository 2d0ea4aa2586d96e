"""Reading through a view (SPEC §3–§5): which records ``visible``, ``explain`` and ``stale``
return at an anchor, and the counts ``report`` sums up.

The decisions themselves live in ``visibility.View``; this module builds the view for a
call, filters and orders its decisions, and tallies what was asked about.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from .._core.provenance import RevisionNode
from .._core.questions import Questions, TreeIndex
from .._core.topology import EventNode
from .._core.validation import check_id, check_mode
from .._core.visibility import Decision, View, ViewReader
from ..errors import NotFoundError
from ..model import Explanation, Record
from .asof import AsOfReader
from .events import PathMessages
from .namespace import Namespace
from .viewcache import WHOLE, Route


def view(
    ns: Namespace, anchor: str | None, cross_tree: bool, mode: str | None, as_of: int | None = None
) -> View:
    """The view of ``anchor`` (which must exist) for a caller holding only its id: the id is
    checked and read here, once; a caller holding the node asks ``view_at``."""
    return view_at(ns, ns.anchor_node(anchor), cross_tree, mode, as_of)


def view_at(
    ns: Namespace,
    at: EventNode | None,
    cross_tree: bool,
    mode: str | None,
    as_of: int | None = None,
    anchor_path: Sequence[str] | None = None,
) -> View:
    """The view at the anchor's event ``at`` (None: no anchor) in ``mode`` (default: the
    Memory's); ``as_of``: the arrival number to answer as of (``_engine.asof``), None: now;
    ``anchor_path``: the anchor's path ids, root first, if already read."""
    reader: ViewReader = ns.store if as_of is None else AsOfReader(ns.store, ns.name, as_of)
    return View(
        reader,
        ns.name,
        None if at is None else at.id,
        ns.mode if mode is None else check_mode(mode),
        cross_tree=bool(cross_tree),
        anchor_path=anchor_path,
        anchor_node=at,
    )


def tally(ns: Namespace, shown: View, decisions: Iterable[Decision]) -> None:
    """Count the decisions a caller was given, plus what the view met on the way."""
    shown.count(decisions)
    ns.counts.update(shown.counts)


def chosen(
    shown: View,
    kind: str | None,
    key: str | None,
    scope: str | None,
    include_superseded: bool,
    include_stale: bool,
) -> list[Decision]:
    """The view's returned decisions matching the filters, in path order."""
    found = [
        d
        for d in shown.decisions().values()
        if d.revision is not None
        and d.returned(include_superseded, include_stale)
        and (kind is None or d.revision.kind == kind)
        and (key is None or d.revision.key == key)
        and (scope is None or d.revision.scope == scope)
    ]
    found.sort(key=lambda d: shown.sort_key(d.revision) if d.revision else ((0, 0, 0), ""))
    return found


def visible_in(
    ns: Namespace,
    shown: View,
    kind: str | None = None,
    key: str | None = None,
    scope: str | None = None,
    include_superseded: bool = False,
    include_stale: bool = False,
) -> list[RevisionNode]:
    """The revisions ``visible()`` returns in an already built view, counted in the report."""
    found = chosen(shown, kind, key, scope, include_superseded, include_stale)
    tally(ns, shown, found)
    return [d.revision for d in found if d.revision is not None]


# Deciding one index entry (a key's winner, an unkeyed record) costs about as much as this
# many path events of a full view (~3 embedded in bench/agent_history.py; on PostgreSQL it was
# ~11 before keyed reads asked in bulk, and 8 is kept as the one threshold for every backend);
# a view reads the tree's index instead of its path when the index has at most
# depth / PATH_EVENTS_PER_ENTRY entries. The default of ``Memory(path_events_per_entry=...)``
# (0: whenever the anchor allows; None: never — the differential tests run both).
PATH_EVENTS_PER_ENTRY: Final = 8


def tree_index(ns: Namespace, at: EventNode, key: str | None) -> tuple[TreeIndex | None, Route]:
    """The tree's index at an attached anchor (``questions.TreeIndex``; only ``key``'s groups
    when one is asked), or None when it is larger than the path is long (walking the path is
    the shorter read) or the Memory never reads it; and the route that says which."""
    assert at.attached and at.tree is not None and at.depth is not None
    steps = ns.path_events_per_entry
    if steps is None:
        return None, WHOLE
    limit = at.depth // steps if steps else sys.maxsize
    index = ns.store.answer(ns.name, Questions(index_tree=at.tree, index_limit=limit)).tree_index
    if not isinstance(index, TreeIndex):
        return None, ("past", limit)
    if key is not None:  # other keys' winners cannot be returned
        index = replace(index, groups=tuple(g for g in index.groups if g[0] == key))
    return index, ("index", limit)


def indexed_visible(
    ns: Namespace,
    at: EventNode,
    index: TreeIndex,
    mode: str | None,
    kind: str | None,
    key: str | None,
    scope: str | None,
    include_stale: bool,
) -> list[RevisionNode]:
    """``visible()`` at an attached anchor from its tree's ``index``, at the cost of the
    tree's keys and unkeyed records, not of the path or of superseded history."""
    keyed = ns.keyed_view(at, ns.mode if mode is None else check_mode(mode))
    found = [
        revision
        for revision in keyed.visible(index, include_stale)
        if (kind is None or revision.kind == kind)
        and (key is None or revision.key == key)
        and (scope is None or revision.scope == scope)
    ]
    keyed.count(found)
    ns.counts.update(keyed.counts)
    return found


def index_may_lend(ns: Namespace, index: TreeIndex) -> bool:
    """Whether a record the tree's ``index`` decides may lend its rank to one the view shows
    superseded (``retrieval.supersession``), asked before anything is decided: a key's
    record may (the index has a group), and so may one that explicitly supersedes another
    (one bulk read over the unkeyed records, all the index can show when it has no group)."""
    if index.groups:
        return True
    ids = frozenset(revision.record_id for revision in index.unkeyed)
    asked = Questions(superseded_by=ids)
    return bool(ids) and any(ns.store.answer(ns.name, asked).superseded_by.values())


@dataclass(frozen=True, slots=True)
class Decided:
    """What one pass down from an anchor decides (``decided``): the revisions shown, in path
    order, and, for a ranking that lends, the whole view at the anchor, which says what it
    shows superseded (None when not asked for, or, beside the index, when no record may
    lend); ``route``: whether the tree's index or the path decided them (``Route``)."""

    revisions: list[RevisionNode]
    whole: View | None
    route: Route = WHOLE


def decided(
    ns: Namespace,
    at: EventNode | None,
    cross_tree: bool,
    mode: str | None,
    kind: str | None = None,
    key: str | None = None,
    scope: str | None = None,
    include_superseded: bool = False,
    include_stale: bool = False,
    messages: PathMessages | None = None,
    as_of: int | None = None,
    *,
    lending: bool = False,
) -> Decided:
    """The revisions shown at the anchor's event ``at`` (None: no anchor), and with
    ``lending`` the whole view too. Which reads answer is settled first, so that the anchor
    goes down once and a ranking never needs it again: the tree's index when that is the
    shorter read (one tree, attached anchor, superseded ones not asked for, the present),
    else the whole view, which takes its path from ``messages`` (the anchor's, for a
    context) when they are read whole at once; beside the index, a lending read takes the
    whole view as well when a record may lend (``index_may_lend``). The indexes hold the
    present only, so a read ``as_of`` builds the whole view."""
    index, route = None, WHOLE
    if at is not None and at.attached and not (cross_tree or include_superseded) and as_of is None:
        index, route = tree_index(ns, at, key)
    whole = None
    if at is None or index is None or (lending and index_may_lend(ns, index)):
        anchor_path = None if messages is None else messages.whole_path()
        whole = view_at(ns, at, cross_tree, mode, as_of, anchor_path)
    if at is None or index is None:
        assert whole is not None
        found = visible_in(ns, whole, kind, key, scope, include_superseded, include_stale)
    else:
        found = indexed_visible(ns, at, index, mode, kind, key, scope, include_stale)
    return Decided(found, whole if lending else None, route)


def visible(
    ns: Namespace,
    at: EventNode | None,
    cross_tree: bool,
    mode: str | None,
    kind: str | None,
    key: str | None,
    scope: str | None,
    include_superseded: bool,
    include_stale: bool,
    as_of: int | None = None,
) -> list[Record]:
    """The records shown at the anchor's event ``at`` (read once, by the caller)."""
    nodes = decided(
        ns, at, cross_tree, mode, kind, key, scope, include_superseded, include_stale,
        as_of=as_of,
    ).revisions  # fmt: skip
    return [ns.to_record(node) for node in nodes]


def current(
    ns: Namespace,
    key: str,
    anchor: str | None,
    scope: str | None,
    cross_tree: bool,
    mode: str | None,
    as_of: int | None = None,
) -> Record | None:
    """The value of ``(scope, key)`` at ``anchor``: ``visible(key=...)[-1]``.

    At an attached anchor (cross-tree: with every head attached) it is read from the key's
    frontier-ordered index (``keyed.KeyedView``), at the cost of the answer, not of the
    path or of the key's superseded history. A partial path (a detached anchor or head)
    makes "undecided" depend on its whole known chain: the whole view decides that, and
    so does a read ``as_of`` an earlier point (the index holds the present only).

    Outside a write transaction the answer is kept (``_engine.viewcache``) under the store's
    commit stamp, which moves with every commit of any process, and given again while the
    stamp holds (the Memory drops every kept answer after each of its own writes)."""
    check_id(key, "key")
    if as_of is not None:
        at = ns.anchor_node(anchor)
        found = visible(ns, at, cross_tree, mode, None, key, scope, False, False, as_of)
        return found[-1] if found else None
    kept_views = ns.views
    stamp = None
    if kept_views is not None and kept_views.usable():
        stamp = ns.store.commit_stamp()
    if kept_views is None or stamp is None:
        revision, _ = _current(ns, key, anchor, scope, cross_tree, mode)
        return None if revision is None else ns.to_record(revision)
    chosen_mode = ns.mode if mode is None else check_mode(mode)
    kept_key = (ns.name, key, anchor, scope, bool(cross_tree), chosen_mode)
    kept = kept_views.current(kept_key, stamp) or kept_views.current_above(kept_key, stamp)
    if kept is None:
        revision, counted = _current(ns, key, anchor, scope, cross_tree, chosen_mode)
        kept_views.keep_current(kept_key, stamp, revision, counted)
    else:
        revision, counts = kept
        ns.counts.update(counts)  # counted as if decided again
    return None if revision is None else ns.to_record(revision)


def _current(
    ns: Namespace,
    key: str,
    anchor: str | None,
    scope: str | None,
    cross_tree: bool,
    mode: str | None,
) -> tuple[RevisionNode | None, Counter[str]]:
    """``current`` in the present, decided now, and what deciding it counted (added to the
    namespace's counts too)."""
    place = ns.place_lookup()
    node = None if anchor is None else ns.place(anchor, place)
    heads: dict[str, EventNode] | None = None
    if node is not None and node.attached and cross_tree:
        heads = {}
        for tree, head_id in ns.store.heads(ns.name).items():
            head = place(head_id)
            if tree != node.tree and head is not None:
                heads[tree] = head
    if (
        node is not None
        and node.attached
        and (heads is None or all(h.attached for h in heads.values()))
    ):
        chosen_mode = ns.mode if mode is None else check_mode(mode)
        counted: Counter[str] = Counter()
        revision = ns.keyed_view(node, chosen_mode, heads, counted).current(key, scope)
        ns.counts.update(counted)
        return revision, counted
    before = Counter(ns.counts)
    found = decided(ns, node, cross_tree, mode, None, key, scope).revisions
    return (found[-1] if found else None), ns.counts - before


def currents(
    ns: Namespace,
    anchor: str,
    cross_tree: bool,
    mode: str | None,
    wanted: Callable[[str], bool],
) -> list[Record] | None:
    """The current value of every key ``wanted`` accepts, at ``anchor``: what ``current``
    returns for each, read through the trees' key index (``questions.TreeIndex``) at the
    cost of the keys, not of the path or of their superseded history. None where a keyed
    read does not apply (a detached anchor or head), or where the keys outnumber the
    paths' events by ``PATH_EVENTS_PER_ENTRY`` (a shallow anchor with many keys: walking
    the paths is cheaper, as ``indexed_visible`` decides): the caller reads the whole view
    instead."""
    place = ns.place_lookup()
    node = ns.place(anchor, place)
    if not node.attached or node.tree is None:
        return None
    heads: dict[str, EventNode] = {}
    if cross_tree:
        for tree, head_id in ns.store.heads(ns.name).items():
            head = place(head_id)
            if tree != node.tree and head is not None:
                if not head.attached:
                    return None
                heads[tree] = head
    keys: set[str] = set()
    for tree in (node.tree, *sorted(heads)):
        index = ns.store.answer(ns.name, Questions(index_tree=tree)).tree_index
        assert isinstance(index, TreeIndex)  # asked without a limit
        keys.update(key for key, _ in index.groups if wanted(key))
    steps = ns.path_events_per_entry
    events = sum((n.depth or 0) + 1 for n in (node, *heads.values()))
    if steps is None or (steps and len(keys) > events // steps):
        return None
    chosen_mode = ns.mode if mode is None else check_mode(mode)
    keyed = ns.keyed_view(node, chosen_mode, heads if cross_tree else None)
    keyed.learn_keys(keys)
    found = [revision for key in sorted(keys) if (revision := keyed.current(key, None))]
    ns.counts.update(keyed.counts)
    return [ns.to_record(revision) for revision in found]


def explain(
    ns: Namespace,
    record_id: str,
    anchor: str | None,
    cross_tree: bool,
    mode: str | None,
    include_superseded: bool,
    include_stale: bool,
    as_of: int | None = None,
) -> Explanation:
    """Why ``record_id`` is or is not visible at ``anchor`` (``as_of``: then, where a record
    not yet written is not found, as one never written is now)."""
    check_id(record_id, "record id")
    if not ns.store.get_revisions(ns.name, record_id):
        raise NotFoundError(f"record {record_id!r} not found in namespace {ns.name!r}")
    shown = view(ns, anchor, cross_tree, mode, as_of=as_of)
    if as_of is not None and not shown.reader.get_revisions(ns.name, record_id):
        raise NotFoundError(
            f"record {record_id!r} not found in namespace {ns.name!r} as of seq {as_of}"
        )
    decision = shown.decide(record_id)
    tally(ns, shown, [decision])
    return explanation(decision, anchor, include_superseded, include_stale)


def explanation(
    decision: Decision, anchor: str | None, include_superseded: bool, include_stale: bool
) -> Explanation:
    """The public account of one decision (``explain``, and the explorer's every record)."""
    return Explanation(
        record_id=decision.record_id,
        anchor=anchor,
        visible=decision.returned(include_superseded, include_stale),
        reason=decision.reason,
        revision=decision.revision.revision if decision.revision else None,
        source=decision.source,
        fork=decision.fork,
    )


def stale(
    ns: Namespace,
    anchor: str | None,
    cross_tree: bool,
    mode: str | None,
    include_superseded: bool,
    as_of: int | None = None,
) -> list[Record]:
    """Records hidden at ``anchor`` only because something they were built on changed."""
    shown = view(ns, anchor, cross_tree, mode, as_of=as_of)
    found = [d for d in chosen(shown, None, None, None, include_superseded, True) if d.stale]
    tally(ns, shown, found)
    return [ns.to_record(d.revision) for d in found if d.revision]
