"""Source messages to events in parent-before-child order, with the checks every format shares.

Each format parser reduces its export to ``Message`` values (ids already made
namespace-global) listed in the app's sibling order; ``order_tree`` then rejects what
would make the engine refuse or silently mangle the conversation: duplicate ids with
different content, parents that are not in the conversation, and cycles.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ImportFormatError
from .jsonpath import Cursor

# Exports write these instead of null for "no parent" (LibreChat; Claude's web API).
ROOT_SENTINELS = frozenset(
    {"00000000-0000-0000-0000-000000000000", "00000000-0000-4000-8000-000000000000"}
)


@dataclass(frozen=True, slots=True)
class Message:
    """One message of an export, already mapped to event fields."""

    id: str
    parent: str | None
    role: str
    content: str
    source: Cursor  # where the message sits in the export, for error paths
    ts: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    hidden: bool = False

    def as_event(self, tree: str) -> dict[str, Any]:
        meta = dict(self.meta)
        if self.hidden:
            meta["hidden"] = True
        return {
            "id": self.id,
            "parent": self.parent,
            "tree": tree,
            "role": self.role,
            "content": self.content,
            "meta": meta,
            "ts": self.ts,
        }


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")


def is_uuid(text: str) -> bool:
    return _UUID.match(text) is not None


def event_id(conversation_id: str, source_id: str) -> str:
    """The namespace-global event id for a message id of one conversation.

    UUIDs are globally unique already and stay verbatim, so the app's own message ids work
    as anchors; anything else (ChatGPT's ``client-created-root``, numeric ids) is prefixed
    with the conversation id so two conversations cannot collide.
    """
    return source_id if is_uuid(source_id) else f"{conversation_id}:{source_id}"


def keyed_nodes(entries: Cursor, children_field: str) -> list[tuple[str, Cursor]]:
    """The ``{id: node}`` map of a tree export, siblings in their parent's children order.

    The map's own order is arbitrary (a child may precede its parent); the app shows
    siblings in the order of the parent's ``children_field`` list, so that order is kept.
    """
    sibling_rank: dict[str, int] = {}
    nodes: list[tuple[str, Cursor]] = []
    for key, node in entries.items():
        node.object()
        node_id = node.get("id").opt_ident() or key
        if node_id != key:
            raise node.get("id").fail(f"node id {node_id!r} differs from its key")
        children = node.get(children_field)
        for rank, child in enumerate(() if children.is_null() else children.elements()):
            sibling_rank.setdefault(child.ident(), rank)
        nodes.append((key, node))
    order = sorted(
        range(len(nodes)), key=lambda at: (sibling_rank.get(nodes[at][0], len(nodes)), at)
    )
    return [nodes[at] for at in order]


def order_tree(messages: Iterable[Message], conversation: str) -> list[Message]:
    """Messages with every parent before its children, siblings in input order."""
    by_id: dict[str, Message] = {}
    for message in messages:
        known = by_id.get(message.id)
        if known is None:
            by_id[message.id] = message
        elif (known.parent, known.role, known.content) != (
            message.parent,
            message.role,
            message.content,
        ):
            raise ImportFormatError(
                f"duplicate message id {message.id!r} with different content "
                f"(first at {known.source.path})",
                conversation=conversation,
                path=message.source.path,
            )
    children: dict[str, list[str]] = {}
    roots: list[str] = []
    for message in by_id.values():
        if message.parent is None:
            roots.append(message.id)
        elif message.parent not in by_id:
            raise ImportFormatError(
                f"message {message.id!r} names parent {message.parent!r}, "
                "which is not in this conversation",
                conversation=conversation,
                path=message.source.path,
            )
        else:
            children.setdefault(message.parent, []).append(message.id)
    ordered: list[Message] = []
    queue = deque(roots)
    while queue:
        current = by_id[queue.popleft()]
        ordered.append(current)
        queue.extend(children.get(current.id, ()))
    if len(ordered) != len(by_id):
        placed = {message.id for message in ordered}
        stuck = next(message for message in by_id.values() if message.id not in placed)
        raise ImportFormatError(
            f"message {stuck.id!r} is on a parent cycle (never reaches a root)",
            conversation=conversation,
            path=stuck.source.path,
        )
    return ordered


def leaves(ordered: Sequence[Message]) -> list[Message]:
    """Messages without children, in order: each is the tip of one branch."""
    parents = {message.parent for message in ordered}
    return [message for message in ordered if message.id not in parents]


def latest_leaf(ordered: Sequence[Message]) -> tuple[Message | None, str]:
    """The most recent branch tip and how it was chosen, for exports with no head pointer.

    By timestamp when every leaf has one (ties go to the later in the export). Otherwise
    follow the last root and then the last child at each fork: siblings are listed oldest
    first, and the newest sibling is what the app displays by default.
    """
    tips = leaves(ordered)
    if not tips:
        return None, "empty conversation"
    stamped = [(tip.ts, position) for position, tip in enumerate(tips) if tip.ts is not None]
    if len(stamped) == len(tips):
        _, position = max(stamped)
        return tips[position], "latest leaf by timestamp (the export names no head)"
    last_child: dict[str | None, Message] = {}
    for message in ordered:  # siblings keep their export order in ``ordered``
        last_child[message.parent] = message
    current = last_child[None]
    while current.id in last_child:
        current = last_child[current.id]
    return current, "newest sibling at each fork (the export names no head)"
