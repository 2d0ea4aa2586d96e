"""Read a JSON export one top-level value at a time, in memory bounded by the largest value.

A ChatGPT or Claude ``conversations.json`` is one array that can reach gigabytes; the
standard ``json.load`` would hold all of it (and every parsed conversation) at once. This
reader decodes UTF-8 incrementally and hands each array element to
``json.JSONDecoder.raw_decode`` as soon as its text is complete. A value cut at the end of
a chunk fails to decode; the reader then reads a chunk twice as large and retries, so a
huge single value costs amortized linear time, not quadratic.

Bytes alone do not bound memory: ``{},`` is three bytes of text and about 72 bytes of
Python objects, so 60 MiB of it would build 1.4 GB. So the values a decode may build are
bounded first: every JSON value but the first follows a bracket, comma or colon, so their
count in the buffered text (``str.count``, C speed) bounds the values of any value starting
there. While that bound is within ``ImportLimits.max_conversation_values`` (and what is
left of ``max_export_values``) the decoder runs as before; past it, a scanner (one regular
expression, no objects built) finds where the value ends and counts its values exactly,
refusing before anything is decoded.
"""

from __future__ import annotations

import codecs
import json
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from .errors import ImportFormatError, ImportTooLarge
from .limits import ImportLimits

_WHITESPACE = " \t\n\r"
_CHUNK = 1 << 16
# Nesting levels the C JSON decoder may use on the main thread (one level per object or
# array). A recursive LibreChat export nests two levels per message; the default limit of
# 1000 would stop at ~500 messages, while 20 000 levels are far from the C stack's end.
_DEEP_NESTING = 20_000
_NUMBER_TAIL = frozenset("0123456789+-.eE")
_MARKS = "[{,:"

# One JSON token after any separators: a whole string, an opening bracket (group 1), a
# closing bracket (group 2), a string not closed yet (group 3), or a run of anything else
# (a number or literal; junk too, which the decoder then reports). Every character starts
# one of these, so consecutive matches cover the text without gaps.
_TOKEN = re.compile(
    r'[ \t\n\r,:]*(?:"[^"\\]*(?:\\.[^"\\]*)*"|([\[{])|([\]}])|(")|[^ \t\n\r,:"\[\]{}]+)',
    re.DOTALL,
)
_OPEN, _CLOSE, _UNCLOSED = 1, 2, 3


def count_values(text: str, allowed: int) -> int:
    """The JSON values in ``text`` (object keys included), counting stops past ``allowed``.

    Objects, arrays, strings, numbers, true, false and null each count one; the text is
    only scanned, so the count costs no memory however many values there are.
    """
    values = 0
    for token in _TOKEN.finditer(text):
        kind = token.lastindex
        if kind is None or kind == _OPEN:
            values += 1
            if values > allowed:
                break
    return values


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


def marks_bound(text: str) -> int:
    """An upper bound on the JSON values in ``text``: one more than its marks."""
    return 1 + _marks(text, 0, len(text))


def _marks(text: str, start: int, end: int) -> int:
    """Brackets, commas and colons in ``text[start:end]``: a JSON text of n values (keys
    included) has at least n - 1 of them, since every value but the first follows one."""
    return sum(text.count(mark, start, end) for mark in _MARKS)


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
        # Values decoded so far, for max_export_values: exact where ``_scan`` counted them,
        # else the upper bound of their marks.
        self.values_read = 0
        self._marks_total = 0  # marks in the whole buffer
        self._marks_upto = 0  # how far ``_marks_before`` has counted
        self._marks_before = 0

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
        self._marks_total = _marks(self._buffer, 0, len(self._buffer))
        self._marks_upto = self._marks_before = 0
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
        """Decode the next JSON value; ImportFormatError at ``path`` if invalid or cut off,
        ImportTooLarge before decoding if it holds more values than the limits allow.

        Every value is under a cheap upper bound: one per bracket, comma and colon in the
        buffered text from here (strings included), counted at C speed. While that bound
        is within the limits the decoder runs directly; past it, ``_scan`` counts the
        value's tokens exactly before anything is decoded.
        """
        if not self.peek():
            raise ImportFormatError("file ends before this value (truncated JSON)", path=path)
        limits = self._limits
        allowed = min(limits.max_conversation_values, limits.max_export_values - self.values_read)
        size = self._chunk_size
        started = self.bytes_read
        exact: int | None = None
        while True:
            if exact is None and 1 + self._marks_after_pos() > allowed:
                exact = self._scan(path, allowed)  # the value is now whole in the buffer
            try:
                with deep_nesting():
                    value, end = self._json.raw_decode(self._buffer, self._pos)
            except RecursionError:
                raise ImportFormatError("JSON nested too deeply to read", path=path) from None
            except json.JSONDecodeError as error:
                if exact is None and self._fill_value(size, started, path):
                    size *= 2
                    continue
                raise self._decode_failure(error, path) from None
            # A number decoded up to the end of the buffer, or up to a character that can
            # continue a number ("1" of "1.5", "1e" of "1e5"), may go on in the next chunk.
            number = isinstance(value, int | float) and not isinstance(value, bool)
            cut = end == len(self._buffer) or (number and self._buffer[end] in _NUMBER_TAIL)
            if exact is None and cut and self._fill_value(size, started, path):
                continue
            break
        bound = 1 + self._advance_marks(end)
        self.values_read += bound if exact is None else exact
        self._pos = end
        return value

    def _marks_after_pos(self) -> int:
        """Brackets, commas and colons from ``_pos`` to the end of the buffer."""
        self._advance_marks(self._pos)
        return self._marks_total - self._marks_before

    def _advance_marks(self, to: int) -> int:
        """Move the count of marks before ``_marks_upto`` on to ``to``; the marks passed."""
        passed = _marks(self._buffer, self._marks_upto, to)
        self._marks_before += passed
        self._marks_upto = to
        return passed

    def _scan(self, path: str, allowed: int) -> int:
        """Read until the value at ``_pos`` is whole in the buffer (or the file ends),
        counting its values exactly; refuse as soon as there are more than ``allowed``."""
        size = self._chunk_size
        started = self.bytes_read
        at = self._pos  # the first token not counted yet
        depth = values = 0
        while True:
            buffer = self._buffer
            length = len(buffer)
            for token in _TOKEN.finditer(buffer, at):
                if token.end() == length and not self._eof:
                    break  # may go on in the next chunk ("1" of "12", a string cut short)
                kind = token.lastindex
                if kind == _CLOSE:
                    depth -= 1
                    if depth <= 0:
                        return values
                elif kind == _UNCLOSED:
                    break  # only at the end of the file: the decoder says it is truncated
                else:
                    values += 1
                    if values > allowed:
                        raise self._too_many(values, path)
                    if kind == _OPEN:
                        depth += 1
                    elif depth == 0:
                        return values
                at = token.end()
            if self._eof:
                return values  # unfinished: the decoder reports where
            offset = at - self._pos
            self._fill_value(size, started, path)
            at = self._pos + offset
            size *= 2

    def _too_many(self, values: int, path: str) -> ImportTooLarge:
        limits = self._limits
        if values > limits.max_conversation_values:
            return limits.refuse(
                "max_conversation_values",
                f"more than {limits.max_conversation_values:,} JSON values in one "
                f"conversation of {self._source} (each becomes a Python object when parsed)",
                path=path,
            )
        return limits.refuse(
            "max_export_values",
            f"more than {limits.max_export_values:,} JSON values in {self._source}",
            path=path,
        )

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
