"""ChatGPT data export (``conversations.json``): a list of conversations with a ``mapping``.

``mapping[id] = {id, message|null, parent, children[]}``. The root node carries no message
and hidden system nodes set ``metadata.is_visually_hidden_from_conversation``; both are
kept as hidden events so parent links stay exactly as exported. Sibling order is the
parent's ``children`` order (the mapping itself is not ordered). ``current_node`` is the
head: the leaf the app displays.
"""

from __future__ import annotations

from typing import Any

from .content import part_text, placeholder
from .jsonpath import Cursor
from .plan import ConversationPlan, conversation_plan
from .tree import Message, event_id, keyed_nodes

FORMAT = "chatgpt"


def matches(value: Any) -> bool:
    return isinstance(value, dict) and "mapping" in value


def parse(conversation: Cursor, index: int, name: str | None = None) -> ConversationPlan:
    conversation.object()
    conversation_id = (
        conversation.get("conversation_id").opt_ident() or conversation.get("id").opt_ident()
    )
    if conversation_id is None:
        raise conversation.fail("conversation has neither 'id' nor 'conversation_id'")
    title = conversation.value.get("title")
    title = title if isinstance(title, str) else None
    label = f"{conversation_id!r} ({title!r})" if title else repr(conversation_id)
    conversation = conversation.named(label)

    nodes = keyed_nodes(conversation.get("mapping"), "children")
    messages = [_message(conversation_id, key, node) for key, node in nodes]

    current = conversation.get("current_node")
    source_head = current.opt_ident()
    return conversation_plan(
        format=FORMAT,
        index=index,
        path=conversation.path,
        tree=conversation_id,
        title=title,
        messages=messages,
        head=None if source_head is None else event_id(conversation_id, source_head),
        head_reason="current_node" if source_head is not None else "current_node is null",
        head_path=current.path,
    )


def _message(conversation_id: str, key: str, node: Cursor) -> Message:
    identity = event_id(conversation_id, key)
    parent_key = node.get("parent").opt_ident()
    parent = event_id(conversation_id, parent_key) if parent_key is not None else None
    meta: dict[str, Any] = {} if identity == key else {"source_id": key}
    message = node.get("message")
    if message.is_null():
        return Message(identity, parent, "system", "", node, meta=meta, hidden=True)
    message.object()
    author = message.get("author")
    role = author.get("role").text() if not author.is_null() else "unknown"
    metadata = message.get("metadata")
    hidden = (
        metadata.is_object() and metadata.get("is_visually_hidden_from_conversation").value is True
    )
    status = message.get("status").value
    if isinstance(status, str) and status != "finished_successfully":
        meta["status"] = status
    if metadata.is_object():
        model = metadata.get("model_slug").value
        if isinstance(model, str):
            meta["model"] = model
    content, kind = _content(message.get("content"))
    if kind != "text":
        meta["content_type"] = kind
    return Message(
        identity,
        parent,
        role,
        content,
        node,
        ts=message.get("create_time").timestamp(),
        meta=meta,
        hidden=hidden,
    )


def _content(content: Cursor) -> tuple[str, str]:
    """Text and content type; parts that are not text become placeholders."""
    if content.is_null():
        return "", "text"
    content.object()
    kind_value = content.get("content_type").value
    kind = kind_value if isinstance(kind_value, str) else "unknown"
    parts = content.get("parts")
    if isinstance(parts.value, list):
        texts = [part_text(part, type_key="content_type") for part in parts.elements()]
        return "\n".join(text for text in texts if text), kind
    for field_name in ("text", "result"):
        text = content.get(field_name).value
        if isinstance(text, str):
            return text, kind
    return ("" if kind == "text" else placeholder(kind)), kind
