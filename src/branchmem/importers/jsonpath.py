"""Typed reads from parsed JSON that fail with the JSON path of the offending value.

Exports are untrusted: every field access goes through ``Cursor`` so that a wrong type
becomes an ``ImportFormatError`` naming the conversation and the path, never a
``KeyError`` or ``TypeError`` from deep inside a parser.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

from .errors import ImportFormatError

T = TypeVar("T")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

_TYPE_NAMES: dict[type, str] = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
}


def _step(key: str | int) -> str:
    if isinstance(key, int):
        return f"[{key}]"
    if _IDENTIFIER.match(key):
        return f".{key}"
    escaped = key.replace("\\", "\\\\").replace('"', '\\"')
    return f'["{escaped}"]'


def _describe(value: object) -> str:
    if value is None:
        return "null"
    for kind, name in _TYPE_NAMES.items():
        if type(value) is kind:
            return name
    return type(value).__name__


class Cursor:
    """A JSON value plus where it sits in the file, for error messages.

    The path is built only when an error needs it: parsers create one cursor per field
    read, and formatting every path eagerly would dominate the import's run time.
    """

    __slots__ = ("_key", "_parent", "_root", "conversation", "value")

    def __init__(
        self,
        value: Any,
        path: str = "$",
        conversation: str | None = None,
        *,
        parent: Cursor | None = None,
        key: str | int | None = None,
    ) -> None:
        self.value = value
        self.conversation = conversation
        self._root = path
        self._parent = parent
        self._key = key

    @property
    def path(self) -> str:
        keys: list[str | int] = []
        cursor: Cursor | None = self
        while cursor is not None and cursor._parent is not None:
            assert cursor._key is not None
            keys.append(cursor._key)
            cursor = cursor._parent
        path = cursor._root if cursor is not None else "$"
        return "".join([path, *(_step(key) for key in reversed(keys))])

    def _child(self, value: Any, key: str | int) -> Cursor:
        return Cursor(value, conversation=self.conversation, parent=self, key=key)

    def fail(self, message: str) -> ImportFormatError:
        return ImportFormatError(message, conversation=self.conversation, path=self.path)

    def named(self, conversation: str) -> Cursor:
        """The same place, with errors attributed to ``conversation``."""
        return Cursor(self.value, self._root, conversation, parent=self._parent, key=self._key)

    def is_object(self) -> bool:
        return isinstance(self.value, dict)

    def object(self) -> dict[str, Any]:
        if not isinstance(self.value, dict):
            raise self.fail(f"expected an object, found {_describe(self.value)}")
        return self.value

    def array(self) -> list[Any]:
        if not isinstance(self.value, list):
            raise self.fail(f"expected an array, found {_describe(self.value)}")
        return self.value

    def has(self, key: str) -> bool:
        return key in self.object()

    def get(self, key: str) -> Cursor:
        """The member ``key`` (null when absent)."""
        return self._child(self.object().get(key), key)

    def at(self, index: int) -> Cursor:
        return self._child(self.array()[index], index)

    def items(self) -> Iterator[tuple[str, Cursor]]:
        for key, value in self.object().items():
            yield key, self._child(value, key)

    def elements(self) -> Iterator[Cursor]:
        for index, value in enumerate(self.array()):
            yield self._child(value, index)

    def is_null(self) -> bool:
        return self.value is None

    def text(self) -> str:
        if not isinstance(self.value, str):
            raise self.fail(f"expected a string, found {_describe(self.value)}")
        return self.value

    def ident(self) -> str:
        """A non-empty id; JSON numbers are accepted and written in decimal."""
        value = self.value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str) or not value:
            raise self.fail(f"expected a non-empty id string, found {_describe(value)}")
        return value

    def opt_ident(self) -> str | None:
        return None if self.value is None or self.value == "" else self.ident()

    def flag(self) -> bool:
        """A boolean where absent or null means false."""
        if self.value is None:
            return False
        if not isinstance(self.value, bool):
            raise self.fail(f"expected a boolean, found {_describe(self.value)}")
        return self.value

    def opt_int(self) -> int | None:
        value = self.value
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"expected an integer, found {_describe(value)}")
        return value

    def timestamp(self) -> float | None:
        """Seconds since the epoch from a number (s or ms) or an ISO 8601 string.

        Timestamps are informational, so an unreadable one becomes None rather than
        failing the whole conversation.
        """
        value = self.value
        if isinstance(value, bool) or value is None:
            return None
        if isinstance(value, int | float):
            try:
                seconds = float(value)
            except OverflowError:
                return None
            if not math.isfinite(seconds):
                return None
            # Open WebUI and SillyTavern sometimes write milliseconds.
            return seconds / 1000.0 if abs(seconds) > 1e11 else seconds
        if isinstance(value, str):
            try:
                parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                return None
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            try:
                return parsed.timestamp()
            except (OverflowError, OSError, ValueError):
                return None
        return None
