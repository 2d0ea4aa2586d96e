"""The supported formats and detection by shape."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import chatgpt, claude, librechat, openwebui, sillytavern
from .jsonpath import Cursor
from .plan import ConversationPlan

Parser = Callable[[Cursor, int, str | None], ConversationPlan]

PARSERS: dict[str, Parser] = {
    chatgpt.FORMAT: chatgpt.parse,
    openwebui.FORMAT: openwebui.parse,
    librechat.FORMAT: librechat.parse,
    sillytavern.FORMAT: sillytavern.parse,
    claude.FORMAT: claude.parse,
}
FORMATS = tuple(PARSERS)

# Checked in order; each test looks at the keys that only its format has.
_SHAPES: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    (chatgpt.FORMAT, chatgpt.matches, "an object with a 'mapping' of nodes"),
    (claude.FORMAT, claude.matches, "an object with 'chat_messages'"),
    (openwebui.FORMAT, openwebui.matches, "an object with 'chat.history.messages'"),
    (librechat.FORMAT, librechat.matches, "an object with 'conversationId' and 'messages'"),
    (sillytavern.FORMAT, sillytavern.matches, "a SillyTavern header or message line"),
)


def detect(value: Any) -> tuple[str, str] | None:
    """The format whose shape ``value`` (one conversation or chat line) has, and why."""
    for name, matches, shape in _SHAPES:
        if matches(value):
            return name, shape
    return None
