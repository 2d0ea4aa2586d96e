"""Claude conversations: the official export (linear) and the web API's tree.

The official ``conversations.json`` lists ``{uuid, name, chat_messages[]}`` with the
messages of the displayed branch only, oldest first: each message's parent is the one
before it and the last is the head. The web API's tree form adds
``parent_message_uuid`` to every message and names the head in
``current_leaf_message_uuid``; its roots point at a sentinel nil UUID.
"""

from __future__ import annotations

from typing import Any

from .content import any_text
from .jsonpath import Cursor
from .plan import ConversationPlan, conversation_plan
from .tree import ROOT_SENTINELS, Message, event_id

FORMAT = "claude"
_ROLES = {"human": "user", "assistant": "assistant"}


def matches(value: Any) -> bool:
    return isinstance(value, dict) and "chat_messages" in value


def parse(conversation: Cursor, index: int, name: str | None = None) -> ConversationPlan:
    conversation.object()
    conversation_id = conversation.get("uuid").ident()
    title = conversation.value.get("name")
    title = title if isinstance(title, str) and title else None
    label = f"{conversation_id!r} ({title!r})" if title else repr(conversation_id)
    conversation = conversation.named(label)
    entries = list(conversation.get("chat_messages").elements())
    branched = any(isinstance(e.value, dict) and "parent_message_uuid" in e.value for e in entries)

    messages: list[Message] = []
    previous: str | None = None
    for entry in entries:
        entry.object()
        key = entry.get("uuid").ident()
        if branched:
            declared = entry.get("parent_message_uuid").opt_ident()
            parent = (
                None
                if declared is None or declared in ROOT_SENTINELS
                else event_id(conversation_id, declared)
            )
        else:
            parent = previous
        identity = event_id(conversation_id, key)
        text = entry.get("text").value
        content = text if isinstance(text, str) and text else any_text(entry.get("content"))
        sender = entry.get("sender").text()
        meta: dict[str, Any] = {} if identity == key else {"source_id": key}
        messages.append(
            Message(
                identity,
                parent,
                _ROLES.get(sender, sender),
                content,
                entry,
                ts=entry.get("created_at").timestamp(),
                meta=meta,
            )
        )
        previous = identity

    if branched:
        current = conversation.get("current_leaf_message_uuid")
        source_head = current.opt_ident()
        head = None if source_head is None else event_id(conversation_id, source_head)
        reason = (
            "current_leaf_message_uuid"
            if source_head is not None
            else "current_leaf_message_uuid is absent"
        )
        head_path = current.path
    else:
        head = previous
        reason = "last message (the official export holds the displayed branch only)"
        head_path = conversation.path
    return conversation_plan(
        format=FORMAT,
        index=index,
        path=conversation.path,
        tree=conversation_id,
        title=title,
        messages=messages,
        head=head,
        head_reason=reason,
        head_path=head_path,
    )
