"""Message text from the content shapes exports use, with placeholders for non-text parts.

Images, audio, tool calls and the like have no text to store; a short bracketed
placeholder keeps the transcript's shape (the user sees that something was there)
instead of dropping the part or failing the conversation.
"""

from __future__ import annotations

from .jsonpath import Cursor


def placeholder(kind: object) -> str:
    name = kind if isinstance(kind, str) and kind else "attachment"
    return "[image]" if name in {"image_asset_pointer", "image", "image_url"} else f"[{name}]"


def part_text(part: Cursor, *, type_key: str) -> str:
    """A text part as is; an object part by its ``text``, else a placeholder."""
    value = part.value
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        text = value.get("text")
        kind = value.get(type_key)
        if isinstance(text, str) and kind in (None, "text", "audio_transcription"):
            return text
        return placeholder(kind)
    return placeholder(None)


def blocks_text(blocks: Cursor, *, type_key: str = "type") -> str:
    """Text of a list of content blocks (Claude, LibreChat agents, OpenAI-style parts)."""
    texts = [part_text(block, type_key=type_key) for block in blocks.elements()]
    return "\n\n".join(text for text in texts if text)


def any_text(content: Cursor) -> str:
    """Content that is a string, null, or a list of blocks."""
    if content.value is None:
        return ""
    if isinstance(content.value, str):
        return content.value
    if isinstance(content.value, list):
        return blocks_text(content)
    raise content.fail("expected a string or a list of content blocks")
