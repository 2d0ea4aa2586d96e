"""Make a parsed conversation storable on every backend, or refuse it by name.

JSON can spell text that no store keeps: a lone UTF-16 surrogate (``"\\ud800"``) has no
UTF-8 form, and PostgreSQL cannot hold NUL. Chat exports do contain them (a reply cut in
the middle of an emoji's surrogate pair). Such a character is replaced by U+FFFD, the
replacement character, in every text and id of the conversation, and the summary lists
each event changed, so an import writes the same thing on every backend and never stops
halfway on a driver error.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from .errors import ImportFormatError
from .limits import ImportLimits
from .plan import ConversationPlan

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> tuple[str, int]:
    """``text`` with each NUL and lone surrogate replaced, and how many were."""
    if text.isascii() and "\x00" not in text:
        return text, 0
    return _UNSTORABLE.subn(REPLACEMENT, text)


def _clean(events: tuple[dict[str, Any], ...]) -> bool:
    """Whether no text of the events needs replacing: the common case, checked at C speed.

    ``json.dumps`` without ASCII escaping writes a lone surrogate as is and NUL as the
    escape ``\\u0000`` (a literal backslash-u0000 in a text only costs the slow path).
    """
    dumped = json.dumps(events, ensure_ascii=False, check_circular=False)
    return "\\u0000" not in dumped and (dumped.isascii() or _SURROGATE.search(dumped) is None)


def _storable(value: Any) -> tuple[Any, int]:
    """A JSON value (meta) with every string and key made storable."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, list):
        items = [_storable(item) for item in value]
        return [item for item, _ in items], sum(count for _, count in items)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        total = 0
        for key, item in value.items():
            new_key, in_key = storable_text(key) if isinstance(key, str) else (key, 0)
            out[new_key], in_item = _storable(item)
            total += in_key + in_item
        return out, total
    return value, 0


def storable_plan(plan: ConversationPlan, limits: ImportLimits) -> ConversationPlan:
    """``plan`` checked against ``max_message_chars`` and with unstorable text replaced.

    Raises ImportTooLarge (for the message) or ImportFormatError naming the conversation.
    """
    for event in plan.events:
        if len(event["content"]) > limits.max_message_chars:
            raise limits.refuse(
                "max_message_chars",
                f"message {event['id']!r} has {len(event['content']):,} characters",
                conversation=plan.label,
                path=plan.path,
            )
    if _clean(plan.events):
        return plan
    events: list[dict[str, Any]] = []
    notes: list[str] = []
    for event in plan.events:
        fixed: dict[str, Any] = {}
        changed: list[str] = []
        for name, value in event.items():
            fixed[name], count = _storable(value) if name != "ts" else (value, 0)
            if count:
                changed.append(f"{name} ({count})")
        if changed:
            notes.append(
                f"conversation {plan.label}: event {fixed['id']!r}: "
                f"{', '.join(changed)} NUL or lone surrogate replaced by U+FFFD"
            )
        events.append(fixed)
    if not notes:
        return plan
    if len({event["id"] for event in events}) != len(events):
        raise ImportFormatError(
            "two message ids differ only in characters no store can keep (NUL or a lone "
            "surrogate), so they cannot both be imported",
            conversation=plan.label,
            path=plan.path,
        )
    head = storable_text(plan.head)[0] if plan.head is not None else None
    tree = storable_text(plan.tree)[0] if plan.tree is not None else None
    title = storable_text(plan.title)[0] if plan.title is not None else None
    return dataclasses.replace(
        plan, events=tuple(events), head=head, tree=tree, title=title, replaced=tuple(notes)
    )
