"""What the ``/ui`` explorer shows: the conversations, one tree, every record's decision.

These read the namespace as a whole (a tree's events, every record id), which the public
``Memory`` API deliberately does not offer for views; they are for looking, not for prompts.
Each runs in one read snapshot of the store, taken through ``Memory``'s own read scope.

``LocalSession`` is how ``branchmem serve`` on a loopback address opens the explorer without
anyone typing a key: a random token, held only in the server's memory and printed once in
the link's fragment (``/ui#token=...``; a fragment never reaches a server log or a proxy). It
reads every namespace and writes nothing, and dies with the process. Nothing is granted by
address: behind a reverse proxy every request comes from 127.0.0.1.
"""

from __future__ import annotations

import dataclasses
import hmac
import secrets
import time
from typing import Any, Final

from ..errors import BranchmemError, NotFoundError
from ..memory import Memory
from ..model import ERASED
from .keys import ApiKey

LOCAL_KEY_ID: Final = "local"
READ_METHODS: Final = frozenset({"GET", "HEAD"})


class LocalSession:
    """A read-only grant over every namespace for whoever holds this process's token."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(32)
        self.grant = ApiKey(LOCAL_KEY_ID, "local explorer", ("*",), time.time())

    def admits(self, method: str, presented: str) -> bool:
        """True for a read presenting this session's token (constant-time comparison)."""
        same = hmac.compare_digest(presented.encode(), self.token.encode())
        return same and method.upper() in READ_METHODS

    def link(self, host: str, port: int) -> str:
        """The explorer's address with the token in the fragment."""
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/ui#token={self.token}"


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
    tree: str | None = None,
) -> list[dict[str, Any]]:
    """Every record of the namespace decided at ``anchor``: the explanation and its text.

    With ``tree``, only the records built from that conversation (a revision with a source,
    direct or through the records it cites, among the tree's events), each with
    ``tree_sources``: those events, so the explorer can mark them on the tree.
    """
    marks: dict[str, list[str]] = {}
    with memory._read(namespace):
        if tree is None:
            record_ids = sorted(memory.store.record_ids(namespace))
        else:
            marks = _tree_sources(memory, namespace, tree)
            record_ids = sorted(marks)
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
                "tree_sources": marks.get(record_id, []),
            }
        )
    return views


def _tree_sources(memory: Memory, namespace: str, tree_id: str) -> dict[str, list[str]]:
    """record id -> the events of ``tree_id`` its revisions draw on (direct sources and the
    frontier, which stands for the sources reached through cited records)."""
    in_tree = {n.id for n in memory.store.iter_events(namespace, tree_id) if n.tree == tree_id}
    marks: dict[str, set[str]] = {}
    for node in memory.store.revisions_at(namespace, in_tree):
        found = marks.setdefault(node.record_id, set())
        frontier = node.gate.frontier_in(tree_id)
        if frontier is not None:
            found.add(frontier.event)
        found.update(ref.target for ref in node.event_refs if ref.target in in_tree)
    return {record_id: sorted(events) for record_id, events in marks.items()}
