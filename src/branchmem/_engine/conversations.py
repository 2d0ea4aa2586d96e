"""The conversations of a namespace: one per tree, for a list a person picks from."""

from __future__ import annotations

from ..model import Conversation
from .namespace import Namespace


def conversations(ns: Namespace) -> list[Conversation]:
    """Every tree with a known id, most recently active first (ties by tree id).

    One pass over the namespace's events: a detached event whose tree is still unknown
    belongs to no conversation yet.
    """
    roots: dict[str, str] = {}
    titles: dict[str, str] = {}
    counts: dict[str, int] = {}
    latest: dict[str, int] = {}
    for node in ns.store.iter_events(ns.name):
        tree = node.tree
        if tree is None:
            continue
        counts[tree] = counts.get(tree, 0) + 1
        latest[tree] = max(latest.get(tree, node.seq), node.seq)
        if node.parent is None:
            roots[tree] = node.id
            title = node.meta.get("title")
            if isinstance(title, str) and title:
                titles[tree] = title
    heads = ns.store.heads(ns.name)
    found = [
        Conversation(
            tree=tree,
            root=roots.get(tree),
            head=heads.get(tree),
            title=titles.get(tree),
            events=counts[tree],
            updated_seq=latest[tree],
        )
        for tree in counts
    ]
    found.sort(key=lambda c: (-c.updated_seq, c.tree))
    return found
