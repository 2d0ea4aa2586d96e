"""Read a JSON export one top-level value at a time, in memory bounded by the largest value.

A ChatGPT or Claude ``conversations.json`` is one array that can reach gigabytes; the
standard ``json.load`` would hold all of it (and every parsed conversation) at once. This
reader decodes UTF-8 incrementally and hands each array element to
``json.JSONDecoder.raw_decode`` as soon as its text is complete. A value cut at the end of
a chunk fails to decode; the reader then reads a chunk twice as large and retries, so a
huge single value costs amortized linear time, not quadratic.
"""

from __future__ import annotations

import codecs
import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from .errors import ImportFormatError
from .limits import ImportLimits

_WHITESPACE = " \t\n\r"
_NUMBER_TAIL = frozenset("0123456789+-.eE")
_CHUNK = 1 << 16
# Nesting levels the C JSON decoder may use on the main thread (one level per object or
# array). A recursive LibreChat export nests two levels per message; the default limit of
# 1000 would stop at ~500 messages, while 20 000 levels are far from the C stack's end.
_DEEP_NESTING = 20_000


@contextmanager
def deep_nesting() -> Iterator[None]:
    """Let ``json`` decode deeply nested values; main thread only (other stacks are small)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, _DEEP_NESTING))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def loads(text: str, *, path: str = "$") -> Any:
    """``json.loads`` whose failures are ImportFormatError at ``path``."""
    try:
        with deep_nesting():
            return json.loads(text)
    except RecursionError:
        raise ImportFormatError("JSON nested too deeply to read", path=path) from None
    except json.JSONDecodeError as error:
        raise ImportFormatError(f"invalid JSON: {error}", path=path) from None


class ByteSource(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class JsonReader:
    """A cursor over the text of a binary stream, decoding values one at a time.

    A value still unfinished after ``limits.max_conversation_bytes`` more bytes are read
    is refused with ImportTooLarge: reads are capped at that allowance, so the buffer
    never holds more than the limit plus what was read ahead before the value began.
    """

    def __init__(
        self,
        stream: ByteSource,
        *,
        chunk_size: int = _CHUNK,
        limits: ImportLimits | None = None,
        source: str = "the export",
    ) -> None:
        self._stream = stream
        self._source = source
        self._limits = limits if limits is not None else ImportLimits()
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self._json = json.JSONDecoder()
        self._chunk_size = chunk_size
        self._buffer = ""
        self._pos = 0
        self._eof = False
        self.bytes_read = 0

    def _fill(self, size: int) -> bool:
        """Append up to ``size`` more bytes of text; False at the end of the stream."""
        if self._eof:
            return False
        raw = self._stream.read(size)
        try:
            text = self._decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as error:
            raise ImportFormatError(
                f"not UTF-8 text near byte {self.bytes_read + error.start}"
            ) from None
        self.bytes_read += len(raw)
        if not raw:
            self._eof = True
        self._buffer = self._buffer[self._pos :] + text
        self._pos = 0
        return True

    def peek(self) -> str:
        """The next non-whitespace character, or "" at the end of the stream."""
        while True:
            buffer, pos = self._buffer, self._pos
            while pos < len(buffer) and buffer[pos] in _WHITESPACE:
                pos += 1
            self._pos = pos
            if pos < len(buffer):
                return buffer[pos]
            if not self._fill(self._chunk_size):
                return ""

    def expect(self, char: str, *, path: str) -> None:
        found = self.peek()
        if found != char:
            shown = repr(found) if found else "the end of the file"
            raise ImportFormatError(f"expected {char!r}, found {shown}", path=path)
        self._pos += 1

    def value(self, *, path: str) -> Any:
        """Decode the next JSON value; ImportFormatError at ``path`` if invalid or cut off."""
        if not self.peek():
            raise ImportFormatError("file ends before this value (truncated JSON)", path=path)
        size = self._chunk_size
        started = self.bytes_read
        while True:
            try:
                with deep_nesting():
                    value, end = self._json.raw_decode(self._buffer, self._pos)
            except RecursionError:
                raise ImportFormatError("JSON nested too deeply to read", path=path) from None
            except json.JSONDecodeError as error:
                if self._fill_value(size, started, path):
                    size *= 2
                    continue
                raise self._decode_failure(error, path) from None
            # A number decoded up to the end of the buffer, or up to a character that can
            # continue a number ("1" of "1.5", "1e" of "1e5"), may go on in the next chunk.
            number = isinstance(value, int | float) and not isinstance(value, bool)
            cut = end == len(self._buffer) or (number and self._buffer[end] in _NUMBER_TAIL)
            if cut and self._fill_value(size, started, path):
                continue
            self._pos = end
            return value

    def _fill_value(self, size: int, started: int, path: str) -> bool:
        """``_fill`` for an unfinished value, within what one value may take."""
        allowance = self._limits.max_conversation_bytes - (self.bytes_read - started)
        if allowance <= 0 and not self._eof:
            raise self._limits.refuse(
                "max_conversation_bytes",
                f"still unfinished after {self._limits.max_conversation_bytes:,} bytes of "
                f"{self._source} (a conversation is held in memory whole)",
                path=path,
            )
        return self._fill(min(size, allowance))

    def _decode_failure(self, error: json.JSONDecodeError, path: str) -> ImportFormatError:
        truncated = error.pos >= len(self._buffer) - 1 or error.msg.startswith("Unterminated")
        if truncated:
            return ImportFormatError("file ends inside this value (truncated JSON)", path=path)
        return ImportFormatError(f"invalid JSON: {error.msg}", path=path)

    def at_end(self) -> bool:
        return self.peek() == ""


def iter_array(reader: JsonReader) -> Iterator[tuple[int, Any]]:
    """Elements of the top-level array ``reader`` is positioned at, one by one."""
    reader.expect("[", path="$")
    index = 0
    if reader.peek() == "]":
        reader.expect("]", path="$")
    else:
        while True:
            yield index, reader.value(path=f"$[{index}]")
            index += 1
            if reader.peek() == "]":
                reader.expect("]", path="$")
                break
            reader.expect(",", path=f"$[{index}]")
    if not reader.at_end():
        raise ImportFormatError("unexpected data after the top-level array", path="$")
