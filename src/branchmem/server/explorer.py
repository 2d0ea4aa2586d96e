"""What the ``/ui`` explorer shows: the conversations, one tree, every record's decision.

These read the namespace as a whole (a tree's events, every record id), which the public
``Memory`` API deliberately does not offer for views; they are for looking, not for prompts.
Each runs in one read snapshot of the store, taken through ``Memory``'s own read scope.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import BranchmemError, NotFoundError
from ..memory import Memory
from ..model import ERASED


def trees(memory: Memory, namespace: str) -> list[dict[str, Any]]:
    """One summary per tree: its roots, how many events it has, its head."""
    found: dict[str, dict[str, Any]] = {}
    with memory._read(namespace):
        heads = memory.store.heads(namespace)
        for node in memory.store.iter_events(namespace):
            if node.tree is None:
                continue  # detached, tree unknown yet: shown once its ancestry arrives
            summary = found.setdefault(
                node.tree,
                {"tree": node.tree, "roots": [], "events": 0, "head": heads.get(node.tree)},
            )
            summary["events"] += 1
            if node.parent is None:
                summary["roots"].append(node.id)
    return [found[tree] for tree in sorted(found)]


def tree(memory: Memory, namespace: str, tree_id: str) -> dict[str, Any]:
    """The attached events of ``tree_id`` in arrival order, and its head."""
    with memory._read(namespace):
        nodes = [n for n in memory.store.iter_events(namespace, tree_id) if n.tree == tree_id]
        head = memory.store.heads(namespace).get(tree_id)
    if not nodes:
        raise NotFoundError(f"tree {tree_id!r} not found in namespace {namespace!r}")
    nodes.sort(key=lambda n: n.seq)
    return {
        "tree": tree_id,
        "head": head,
        "events": [dataclasses.asdict(n.to_event(namespace)) for n in nodes],
    }


def record_views(
    memory: Memory,
    namespace: str,
    anchor: str | None,
    *,
    cross_tree: bool = False,
    mode: str | None = None,
    include_superseded: bool = False,
    include_stale: bool = False,
) -> list[dict[str, Any]]:
    """Every record of the namespace decided at ``anchor``: the explanation and its text."""
    with memory._read(namespace):
        record_ids = sorted(memory.store.record_ids(namespace))
        erased = {
            item
            for item, status in memory.store.statuses(namespace, record_ids).items()
            if status == ERASED
        }
    views = []
    for record_id in record_ids:
        explanation = memory.explain(
            record_id, anchor, cross_tree=cross_tree, mode=mode,
            include_superseded=include_superseded, include_stale=include_stale,
            namespace=namespace,
        )  # fmt: skip
        kind = key = content = None
        if record_id not in erased:
            try:
                shown = explanation.revision
                record = memory.get_record(record_id, revision=shown, namespace=namespace)
                kind, key, content = record.kind, record.key, record.content
            except BranchmemError:  # erased meanwhile: the tombstone has no text
                pass
        views.append(
            {
                "explanation": dataclasses.asdict(explanation),
                "kind": kind,
                "key": key,
                "content": content,
            }
        )
    return views
