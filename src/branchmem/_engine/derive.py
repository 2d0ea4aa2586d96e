"""A search view after the Memory's own writes that only added, derived from the view kept
before them instead of deciding every record again (``_engine.viewcache``).

An agent writes a turn, then searches at it: without this, every such search decides the
whole view anew (every visible record's gate, supersession, staleness), which costs what the
view holds, not what the write added. The derivation is exact, or not made (None: the
caller decides the view itself), under these conditions:

- the kept view is of one tree at an attached anchor, and the new anchor is that anchor or
  an event added below it through added events only (``SearchViews.base``), so the path
  only grew by events that nothing already there names;
- every added record is placed in some tree (one placed nowhere, its events detached, is a
  candidate at every anchor), and each placed in this tree (a candidate here, on the path
  or in the tree's index) is shown at the new anchor with nothing missing, and is not retracted,
  superseded or stale there — the rule itself decides that (``keyed.KeyedView``), one record
  at a time. Such a record is in the view when it passes the filters and counts as one
  visible record, as a fresh decision would count it. What was there decides as before:
  an added record is under no key, supersedes nothing and cites events only, and nothing
  named it before it existed (``viewcache.Appended``), so no decision already made moves;
- a fresh decision at the new anchor would take the same route (the tree's index, or the
  path): the kept route bounds the index size, and each added record adds one entry.

Anything else — another tree's anchor, a record off the new path, a write that did more
than add, another process's commit — leaves the view to be decided in full.
"""

from __future__ import annotations

from bisect import insort
from collections import Counter

from .._core.provenance import RevisionNode, path_places
from .._core.topology import EventNode
from ..model import VISIBLE
from .namespace import Namespace
from .viewcache import Route, SearchView


def derived(
    ns: Namespace,
    kept: SearchView,
    added_records: list[RevisionNode],
    at: EventNode,
    mode: str,
    kind: str | None,
    key: str | None,
    scope: str | None,
) -> SearchView | None:
    """The view at ``at`` (a search's filters ``kind``, ``key``, ``scope``) from ``kept``,
    a view at ``at`` or above it, and the records added since it was decided (None: not
    derivable)."""
    before = kept.anchor
    tree = at.tree
    if before is None or tree is None or before.tree != tree:
        return None
    if not (before.attached and at.attached):
        return None
    if any(not added.gate.frontiers for added in added_records):
        return None  # placed nowhere (its events detached): a candidate at every anchor
    placed = [r for r in added_records if r.gate.frontier_in(tree) is not None]
    route = same_route(ns, kept.route, at, len(placed))
    if route is None:
        return None
    rule = ns.keyed_view(at, mode)
    shown: list[RevisionNode] = []
    for added in placed:
        record_id = added.record_id
        revision = rule.shown(record_id)
        if revision is None or revision.revision != added.revision or rule.missing[record_id]:
            return None
        if rule.retracted(record_id) or rule.superseded(record_id) or rule.stale(record_id):
            return None
        if (
            (kind is None or revision.kind == kind)
            and (key is None or revision.key == key)
            and (scope is None or revision.scope == scope)
        ):
            shown.append(revision)
    nodes = list(kept.nodes)
    assert kept.places is not None  # a view at an attached anchor has its places
    place, places = dict(kept.places[0]), dict(kept.places[1])  # the old lists stay whole
    for revision in shown:  # where a fresh decision orders it: path place, arrival, id
        insort(nodes, revision, key=lambda node: _order(node, tree))
        at_depth = place[revision.record_id] = path_places(tree, (revision,))[revision.record_id]
        if at_depth is not None:
            places[at_depth] = sorted([*places.get(at_depth, ()), revision.record_id])
    index, kept.index = kept.index, None  # the new view takes it over, grown
    if index is not None:
        index.add({revision.record_id: revision.content for revision in shown})
    vectors = None
    if kept.vectors is not None:
        asked = [(revision.record_id, revision.revision) for revision in shown]
        read = ns.store.vectors(ns.name, asked) if asked else {}
        vectors = kept.vectors.with_rows({record_id: v for (record_id, _), v in read.items()})
    counts = Counter(kept.counts)
    if shown:
        counts[VISIBLE] += len(shown)
    return SearchView(
        at,
        nodes,
        {**kept.by_id, **{revision.record_id: revision for revision in shown}},
        counts,
        uses=kept.uses + 1,
        superseded=kept.superseded,
        index=index,
        vectors=vectors,
        places=(place, places),
        voices=dict(kept.voices),
        quiet=kept.quiet,
        route=route,
    )


def same_route(ns: Namespace, route: Route, at: EventNode, added: int) -> Route | None:
    """The route a fresh decision at ``at`` takes, when the kept ``route`` and ``added`` new
    index entries settle it (``views.tree_index`` compares the index size with the path's
    depth); None when they do not."""
    steps = ns.path_events_per_entry
    how, bound = route
    if steps is None or how == "whole":
        return route if steps is None and how == "whole" else None
    if steps == 0:  # the index whenever the anchor allows, whatever its size
        return route if how == "index" else None
    assert at.depth is not None
    limit = at.depth // steps
    if how == "index" and bound + added <= limit:
        return ("index", bound + added)  # at most that many entries: the index again
    if how == "past" and bound + added >= limit:
        return ("past", bound + added)  # more than that many: the path again
    return None


def _order(node: RevisionNode, tree: str) -> tuple[tuple[int, int, int], str]:
    """``rules.position`` on an attached one-tree path, then the id: ``visible()``'s order."""
    frontier = node.gate.frontier_in(tree)
    where = (1, frontier.depth, node.seq) if frontier is not None else (0, 0, node.seq)
    return where, node.record_id
