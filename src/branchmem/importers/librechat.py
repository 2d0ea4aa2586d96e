"""LibreChat conversation export: ``{conversationId, title, messages: [...]}``.

Messages carry ``messageId`` and ``parentMessageId`` (the all-zero UUID marks a root;
several roots mean the first message was edited) and may nest their replies in
``children`` (the "recursive" export). The format names no head, so the head is the
latest leaf: by ``createdAt`` when every leaf has it, else the newest sibling at each fork,
which is the branch LibreChat displays by default. ``isEdited`` marks an in-place edit:
the message keeps its id, its current text is imported and ``meta["edited"]`` is set.
"""

from __future__ import annotations

from typing import Any

from .content import blocks_text
from .jsonpath import Cursor
from .plan import ConversationPlan, conversation_plan
from .tree import ROOT_SENTINELS, Message, event_id

FORMAT = "librechat"


def matches(value: Any) -> bool:
    return isinstance(value, dict) and "conversationId" in value and "messages" in value


def parse(conversation: Cursor, index: int, name: str | None = None) -> ConversationPlan:
    conversation.object()
    conversation_id = conversation.get("conversationId").ident()
    title = conversation.value.get("title")
    title = title if isinstance(title, str) else None
    label = f"{conversation_id!r} ({title!r})" if title else repr(conversation_id)
    conversation = conversation.named(label)

    messages: list[Message] = []
    # Depth-first, pre-order, without recursion: exports nest one level per message.
    stack: list[tuple[Cursor, str | None]] = [
        (entry, None) for entry in reversed(list(conversation.get("messages").elements()))
    ]
    while stack:
        entry, enclosing = stack.pop()
        message = _message(conversation_id, entry, enclosing)
        messages.append(message)
        children = entry.get("children")
        if not children.is_null():
            stack.extend((child, message.id) for child in reversed(list(children.elements())))

    return conversation_plan(
        format=FORMAT,
        index=index,
        path=conversation.path,
        tree=conversation_id,
        title=title,
        messages=messages,
        head=None,
        head_reason="",
    )


def _message(conversation_id: str, entry: Cursor, enclosing: str | None) -> Message:
    entry.object()
    key = entry.get("messageId").ident()
    identity = event_id(conversation_id, key)
    declared = entry.get("parentMessageId").opt_ident()
    parent = (
        None
        if declared is None or declared in ROOT_SENTINELS
        else event_id(conversation_id, declared)
    )
    if enclosing is not None:
        if declared is not None and parent != enclosing:
            raise entry.get("parentMessageId").fail(
                f"parentMessageId {declared!r} disagrees with the message it is nested in"
            )
        parent = enclosing
    meta: dict[str, Any] = {} if identity == key else {"source_id": key}
    if entry.get("isEdited").value is True:
        meta["edited"] = True
    for field_name in ("sender", "model"):
        value = entry.get(field_name).value
        if isinstance(value, str):
            meta[field_name] = value
    if entry.get("unfinished").value is True:
        meta["unfinished"] = True
    if entry.get("error").value is True:
        meta["error"] = True
    text = entry.get("text").value
    if not isinstance(text, str) or not text:
        content = entry.get("content")
        if isinstance(content.value, list):
            text = blocks_text(content)
        elif text is None or isinstance(text, str):
            text = ""
        else:
            raise entry.get("text").fail("expected a string")
    return Message(
        identity,
        parent,
        "user" if entry.get("isCreatedByUser").flag() else "assistant",
        text,
        entry,
        ts=entry.get("createdAt").timestamp(),
        meta=meta,
    )
