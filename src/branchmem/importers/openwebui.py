"""Open WebUI chat export: ``{id, title, chat: {history: {currentId, messages: {...}}}}``.

``messages[id] = {id, parentId, childrenIds[], role, content, timestamp}``; ``currentId`` is
the head. The export is one chat or a list of them; a bare ``chat`` object is accepted too.
Sibling order follows the parent's ``childrenIds``.
"""

from __future__ import annotations

from typing import Any

from .content import any_text
from .jsonpath import Cursor
from .plan import ConversationPlan, conversation_plan
from .tree import Message, event_id, keyed_nodes

FORMAT = "openwebui"


def _history_holder(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("history"), dict)


def matches(value: Any) -> bool:
    return isinstance(value, dict) and (
        _history_holder(value.get("chat"))
        or (_history_holder(value) and "messages" in value["history"])
    )


def parse(conversation: Cursor, index: int, name: str | None = None) -> ConversationPlan:
    conversation.object()
    chat = (
        conversation.get("chat")
        if _history_holder(conversation.value.get("chat"))
        else conversation
    )
    chat_id = conversation.get("id").opt_ident() or chat.get("id").opt_ident() or name
    if chat_id is None:
        raise conversation.fail("chat has no 'id'")
    title = conversation.value.get("title") or chat.value.get("title")
    title = title if isinstance(title, str) else None
    label = f"{chat_id!r} ({title!r})" if title else repr(chat_id)
    history = chat.named(label).get("history")
    entries = history.get("messages")

    nodes = keyed_nodes(entries, "childrenIds")
    messages = [_message(chat_id, key, node) for key, node in nodes]

    current = history.get("currentId")
    source_head = current.opt_ident()
    return conversation_plan(
        format=FORMAT,
        index=index,
        path=conversation.path,
        tree=chat_id,
        title=title,
        messages=messages,
        head=None if source_head is None else event_id(chat_id, source_head),
        head_reason="currentId" if source_head is not None else "currentId is null",
        head_path=current.path,
    )


def _message(chat_id: str, key: str, node: Cursor) -> Message:
    identity = event_id(chat_id, key)
    parent_key = node.get("parentId").opt_ident()
    meta: dict[str, Any] = {} if identity == key else {"source_id": key}
    model = node.get("model").value
    if isinstance(model, str):
        meta["model"] = model
    return Message(
        identity,
        event_id(chat_id, parent_key) if parent_key is not None else None,
        node.get("role").text(),
        any_text(node.get("content")),
        node,
        ts=node.get("timestamp").timestamp(),
        meta=meta,
    )
