"""SillyTavern chat files (JSONL): a header line, then one message per line.

A message is ``{name, is_user, mes, swipes[], swipe_id, swipe_info[], extra}``. Swipes are
regenerations of the same turn: every swipe becomes a sibling event and ``swipe_id`` picks
the one the chat continues from, so the head is the chosen swipe of the last message.

Messages have no ids. An event id is derived from the chat, the message index and the
swipe index, plus a digest of the parent id and the text: an in-place edit or a deleted
message in SillyTavern then yields new events on a new branch (which is what it is for
memory) instead of a conflict with the earlier import. A branch file
(``chat_metadata.main_chat``) shares its main chat's tree, and its copied prefix derives
the same ids, so importing both files rebuilds the fork.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .jsonpath import Cursor
from .plan import ConversationPlan, conversation_plan
from .tree import Message

FORMAT = "sillytavern"
_HEADER_KEYS = ("chat_metadata", "user_name", "character_name")


def is_header(value: Any) -> bool:
    return isinstance(value, dict) and "mes" not in value and any(k in value for k in _HEADER_KEYS)


def is_message(value: Any) -> bool:
    return isinstance(value, dict) and "mes" in value and "is_user" in value


def matches(value: Any) -> bool:
    return is_header(value) or is_message(value)


def parse(lines: Cursor, index: int, name: str | None = None) -> ConversationPlan:
    """``lines`` is the whole file as an array (``$[0]`` is the header line)."""
    entries = list(lines.elements())
    header = entries[0] if entries and is_header(entries[0].value) else None
    own = name or _header_name(header)
    if own is None:
        raise lines.fail("chat has no name: pass the file (its name is the chat's id)")
    tree = own
    if header is not None:
        metadata = header.get("chat_metadata")
        main_chat = metadata.get("main_chat").value if metadata.is_object() else None
        if isinstance(main_chat, str) and main_chat:
            tree = main_chat
    label = repr(own)
    lines = lines.named(label)
    messages: list[Message] = []
    parent: str | None = None
    for number, entry in enumerate(entries[1:] if header is not None else entries):
        entry = entry.named(label)
        entry.object()
        parent = _turn(tree, number, entry, parent, messages)
    return conversation_plan(
        format=FORMAT,
        index=index,
        path=lines.path,
        tree=tree,
        title=own,
        tree_title=tree,  # a branch file shares its main chat's root
        messages=messages,
        head=parent,
        head_reason="swipe_id of the last message",
    )


def _header_name(header: Cursor | None) -> str | None:
    """SillyTavern names a chat file ``"<character> - <create_date>"``."""
    if header is None:
        return None
    character = header.get("character_name").value
    created = header.get("create_date").value
    if isinstance(character, str) and isinstance(created, str) and character and created:
        return f"{character} - {created}"
    return None


def _turn(tree: str, number: int, entry: Cursor, parent: str | None, out: list[Message]) -> str:
    """Append one message's swipes as sibling events; return the chosen swipe's id."""
    chosen_text = entry.get("mes").text()
    is_user = entry.get("is_user").flag()
    extra = entry.get("extra")
    narrator = extra.is_object() and extra.get("type").value == "narrator"
    role = "system" if narrator else "user" if is_user else "assistant"
    speaker = entry.get("name").value
    swipes_cursor = entry.get("swipes")
    swipes = [] if swipes_cursor.is_null() else [s.text() for s in swipes_cursor.elements()]
    chosen = entry.get("swipe_id").opt_int()
    if not swipes:
        swipes, chosen = [chosen_text], 0
    elif chosen is None and len(swipes) == 1:
        chosen = 0
    if chosen is None or not 0 <= chosen < len(swipes):
        raise entry.get("swipe_id").fail(
            f"swipe_id {chosen!r} does not select one of the {len(swipes)} swipes"
        )
    infos = entry.get("swipe_info")
    chosen_id = ""
    for swipe, text in enumerate(swipes):
        content = chosen_text if swipe == chosen else text
        meta: dict[str, Any] = {}
        if isinstance(speaker, str):
            meta["name"] = speaker
        if len(swipes) > 1:
            meta["swipe"] = swipe
        if entry.get("is_system").value is True:
            meta["hidden_from_prompt"] = True
        when = entry.get("send_date")
        if isinstance(infos.value, list) and swipe < len(infos.value):
            info = infos.at(swipe)
            if info.is_object() and info.has("send_date"):
                when = info.get("send_date")
        identity = derived_id(tree, parent, number, swipe, role, content)
        out.append(Message(identity, parent, role, content, entry, ts=when.timestamp(), meta=meta))
        if swipe == chosen:
            chosen_id = identity
    return chosen_id


def derived_id(
    tree: str, parent: str | None, number: int, swipe: int, role: str, content: str
) -> str:
    """``<chat>#<index>.<swipe>-<digest>``: stable for the same chat, position and text."""
    material = json.dumps([tree, parent, number, swipe, role, content])  # ASCII-safe
    digest = hashlib.sha256(material.encode("ascii")).hexdigest()[:16]
    return f"{tree}#{number}.{swipe}-{digest}"
