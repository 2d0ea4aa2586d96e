"""Turn a file or an in-memory value into an ImportPlan, streaming what can be streamed.

A file is one of: a JSON array of conversations (ChatGPT, Claude, Open WebUI; read element
by element), one JSON object (a single conversation), or JSON lines (SillyTavern; one chat
per file). The format is detected from the first conversation only, so detection costs
one conversation's memory whatever the file's size.
"""

from __future__ import annotations

import os
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from .errors import ImportFormatError, ImportTooLarge
from .formats import FORMATS, PARSERS, detect
from .jsonpath import Cursor
from .jsonstream import JsonReader, count_values, iter_array, loads, marks_bound
from .limits import ImportLimits
from .plan import ConversationPlan, ImportPlan, Producer
from .sillytavern import FORMAT as SILLYTAVERN
from .storable import storable_plan

Export = dict[str, Any] | list[Any]


def load(
    source: str | os.PathLike[str] | Export,
    format: str = "auto",
    *,
    name: str | None = None,
    limits: ImportLimits | None = None,
) -> ImportPlan:
    """Plan the import of an export file or an already parsed export.

    ``format`` is ``"auto"`` or one of ``FORMATS``. ``name`` names a SillyTavern chat
    given as a value (a file's own name is used otherwise). ``limits`` bound what the
    import may read and store (``ImportLimits()`` by default); going over one raises
    ImportTooLarge, except a message over ``max_message_chars``, which fails only its
    conversation.
    """
    if format != "auto" and format not in PARSERS:
        raise ImportFormatError(f"unknown format {format!r}; choose auto or one of {FORMATS}")
    limits = limits if limits is not None else ImportLimits()
    if isinstance(source, dict | list):
        return _load_value(source, format, name, limits)
    if isinstance(source, str | os.PathLike):
        return _load_file(Path(source), format, name, limits)
    raise ImportFormatError(f"cannot import a {type(source).__name__}: give a path or JSON")


def _parse_one(
    format: str, cursor: Cursor, index: int, name: str | None, limits: ImportLimits
) -> ConversationPlan:
    """Parse one conversation; its failure becomes an error plan, never an exception."""
    try:
        return storable_plan(PARSERS[format](cursor, index, name), limits)
    except ImportFormatError as error:
        return _failed(format, index, cursor.path, error)
    except RecursionError:
        return _failed(
            format, index, cursor.path, ImportFormatError("nested too deeply", path=cursor.path)
        )


def _failed(format: str, index: int, path: str, error: ImportFormatError) -> ConversationPlan:
    if error.conversation is None:  # failed before its id was read: name it by position
        error = ImportFormatError(error.reason, conversation=f"#{index}", path=error.path)
    return ConversationPlan(format=format, index=index, path=path, tree=None, error=error)


def _choose(format: str, sample: Any, where: str) -> tuple[str, str]:
    if format != "auto":
        return format, "given"
    detected = detect(sample)
    if detected is None:
        raise ImportFormatError(
            f"no known chat export has this shape; pass a format, one of {FORMATS}", path=where
        )
    name, shape = detected
    return name, f"auto: {where} is {shape}"


def _is_chat_lines(value: Export) -> bool:
    """A list that is one SillyTavern chat (its lines), not a list of conversations."""
    if not isinstance(value, list) or not value:
        return False
    detected = detect(value[0])
    return detected is not None and detected[0] == SILLYTAVERN


def _load_value(value: Export, format: str, name: str | None, limits: ImportLimits) -> ImportPlan:
    if isinstance(value, list) and not value:
        chosen, reason = (format, "given") if format != "auto" else ("none", "empty list")
        return ImportPlan(
            format=chosen,
            format_reason=reason,
            source="<value>",
            produce=lambda: iter(()),
            total=0,
            unit="conversations",
        )
    if isinstance(value, dict) or _is_chat_lines(value):
        sample = value[0] if isinstance(value, list) else value
        chosen, reason = _choose(format, sample, "$[0]" if isinstance(value, list) else "$")
        whole: Any = [value] if chosen == SILLYTAVERN and isinstance(value, dict) else value

        def produce_single() -> Iterator[tuple[ConversationPlan, int]]:
            yield _parse_one(chosen, Cursor(whole, "$"), 0, name, limits), 1

        return ImportPlan(
            format=chosen,
            format_reason=reason,
            source="<value>",
            produce=produce_single,
            total=1,
            unit="conversations",
        )
    chosen, reason = _choose(format, value[0], "$[0]")
    items = value

    def produce() -> Iterator[tuple[ConversationPlan, int]]:
        for index, item in enumerate(items):
            yield _parse_one(chosen, Cursor(item, f"$[{index}]"), index, name, limits), index + 1

    return ImportPlan(
        format=chosen,
        format_reason=reason,
        source="<value>",
        produce=produce,
        total=len(items),
        unit="conversations",
    )


# What reading a damaged file or archive can raise, turned into one ImportFormatError.
_READ_ERRORS = (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error)


class _GuardedStream:
    """A binary stream whose read failures become ImportFormatError naming the export,
    and which refuses to read past ``limits.max_export_bytes``."""

    def __init__(self, stream: IO[bytes], label: str, limits: ImportLimits) -> None:
        self._stream = stream
        self._label = label
        self._limits = limits
        self._read = 0

    def _failure(self, error: Exception) -> ImportFormatError:
        return ImportFormatError(f"cannot read {self._label}: {error}")

    def _count(self, chunk: bytes) -> bytes:
        self._read += len(chunk)
        if self._read > self._limits.max_export_bytes:
            raise self._limits.refuse(
                "max_export_bytes",
                f"{self._label} holds more than {self._limits.max_export_bytes:,} bytes of JSON",
            )
        return chunk

    def read(self, size: int = -1, /) -> bytes:
        if size < 0:  # never unbounded: one byte past the limit is enough to refuse
            return self.read_whole(self._limits.max_export_bytes - self._read)
        try:
            chunk = self._stream.read(size)
        except _READ_ERRORS as error:
            raise self._failure(error) from None
        return self._count(chunk)

    def read_whole(self, limit: int) -> bytes:
        """The rest of the stream, read in chunks (no buffer of ``limit`` bytes is taken
        up front); more than ``limit`` bytes are cut at ``limit + 1``."""
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = self.read(min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)

    def readline(self, size: int, /) -> bytes:
        try:
            line = self._stream.readline(size)
        except _READ_ERRORS as error:
            raise self._failure(error) from None
        return self._count(line)


@dataclass(frozen=True, slots=True)
class ExportFile:
    """An export on disk: a plain file, or the JSON member of a zip archive (the ChatGPT
    and Claude exports arrive zipped, with ``conversations.json`` inside)."""

    path: Path
    member: str | None = None
    limits: ImportLimits = field(default_factory=ImportLimits)

    @property
    def label(self) -> str:
        return f"{self.path}!{self.member}" if self.member else str(self.path)

    @property
    def name(self) -> PurePosixPath | Path:
        return PurePosixPath(self.member) if self.member else self.path

    def size(self) -> int:
        try:
            if self.member is None:
                return self.path.stat().st_size
            with zipfile.ZipFile(self.path) as archive:
                return archive.getinfo(self.member).file_size
        except _READ_ERRORS as error:
            raise ImportFormatError(f"cannot read {self.label}: {error}") from None

    @contextmanager
    def open(self) -> Iterator[_GuardedStream]:
        with ExitStack() as opened:
            try:
                if self.member is None:
                    raw: IO[bytes] = opened.enter_context(self.path.open("rb"))
                else:
                    archive = opened.enter_context(zipfile.ZipFile(self.path))
                    raw = opened.enter_context(archive.open(self.member))
            except _READ_ERRORS as error:
                raise ImportFormatError(f"cannot read {self.label}: {error}") from None
            yield _GuardedStream(raw, self.label, self.limits)


def locate(path: Path, limits: ImportLimits | None = None) -> ExportFile:
    """The export inside ``path``: the file itself, or the zip member holding the chats.

    The sizes a file or archive declares are checked against ``limits`` here, before
    anything is decompressed; ``_GuardedStream`` counts again as the bytes arrive.
    """
    limits = limits if limits is not None else ImportLimits()
    try:
        zipped = zipfile.is_zipfile(path)
    except _READ_ERRORS as error:
        raise ImportFormatError(f"cannot read {path}: {error}") from None
    if not zipped:
        export = ExportFile(path, None, limits)
        size = export.size()
        if size > limits.max_export_bytes:
            raise limits.refuse("max_export_bytes", f"{path} is {size:,} bytes of JSON")
        return export
    _check_directory(path, limits)
    try:
        with zipfile.ZipFile(path) as archive:
            infos = [info for info in archive.infolist() if not info.is_dir()]
    except _READ_ERRORS as error:
        raise ImportFormatError(f"cannot read {path}: {error}") from None
    names = [info.filename for info in infos]
    preferred = [n for n in names if PurePosixPath(n).name == "conversations.json"]
    candidates = preferred or [n for n in names if n.lower().endswith((".json", ".jsonl"))]
    if len(candidates) != 1:
        listed = ", ".join(sorted(candidates)[:5]) or "none"
        raise ImportFormatError(
            f"{path} is a zip archive; expected one conversations.json or one JSON file "
            f"in it, found {len(candidates)} ({listed})"
        )
    member = next(info for info in infos if info.filename == candidates[0])
    if member.file_size > limits.max_export_bytes:
        raise limits.refuse(
            "max_export_bytes",
            f"{path}!{member.filename} is {member.file_size:,} bytes once decompressed "
            f"({member.compress_size:,} in the archive)",
        )
    return ExportFile(path, member.filename, limits)


# A zip's central directory: at least 46 bytes per entry. ``zipfile`` reads all of it (and
# builds an object per entry) on open, so its size is checked from the end record first.
_END = b"PK\x05\x06"
_END64_LOCATOR = b"PK\x06\x07"
_END64 = b"PK\x06\x06"
_DIRECTORY_BYTES_PER_ENTRY = 1024  # what the limit allows per entry, names included


def _check_directory(path: Path, limits: ImportLimits) -> None:
    try:
        entries, directory = _directory_size(path)
    except OSError as error:
        raise ImportFormatError(f"cannot read {path}: {error}") from None
    if entries > limits.max_zip_entries:
        raise limits.refuse("max_zip_entries", f"{path} lists {entries:,} entries")
    if directory > limits.max_zip_entries * _DIRECTORY_BYTES_PER_ENTRY:
        raise limits.refuse(
            "max_zip_entries",
            f"{path} has a directory of {directory:,} bytes (room for "
            f"{directory // 46:,} entries; {_DIRECTORY_BYTES_PER_ENTRY} bytes per allowed entry)",
        )


def _directory_size(path: Path) -> tuple[int, int]:
    """(entries, bytes) of the central directory, as the end record states them."""
    entries = directory = 0
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        start = max(0, size - (22 + 0xFFFF))  # the end record ends with a comment <= 64 KiB
        handle.seek(start)
        tail = handle.read()
        at = tail.rfind(_END)
        if at < 0 or len(tail) - at < 22:
            return entries, directory  # unreadable: zipfile says so, in its own words
        entries = int.from_bytes(tail[at + 10 : at + 12], "little")
        directory = int.from_bytes(tail[at + 12 : at + 16], "little")
        locator = tail[at - 20 : at] if at >= 20 else b""
        if locator[:4] == _END64_LOCATOR:
            handle.seek(int.from_bytes(locator[8:16], "little"))
            record = handle.read(56)
            if record[:4] == _END64 and len(record) == 56:
                entries = int.from_bytes(record[32:40], "little")
                directory = int.from_bytes(record[40:48], "little")
    return entries, directory


def _sniff(export: ExportFile) -> tuple[str, Any]:
    """The file's layout (array, object or lines) and its first conversation or line."""
    with export.open() as stream:
        reader = JsonReader(stream, limits=export.limits, source=export.label)
        first = reader.peek()
        if first == "[":
            for _, value in iter_array(reader):
                return "array", value
            return "array", None
        if first != "{":
            shown = repr(first) if first else "nothing"
            raise ImportFormatError(f"not a JSON export: the file starts with {shown}")
        if export.name.suffix.lower() == ".jsonl":
            return "lines", reader.value(path="$[0]")
        value = reader.value(path="$")
        if reader.at_end():
            return "object", value
        if reader.peek() == "{":
            return "lines", value
        raise ImportFormatError("unexpected data after the top-level object", path="$")


def _load_file(path: Path, format: str, name: str | None, limits: ImportLimits) -> ImportPlan:
    export = locate(path, limits)
    layout, sample = _sniff(export)
    own_name = name or export.name.stem
    if layout == "lines":
        chosen, reason = _choose(format, sample, "$[0]")
        if format == "auto":
            reason = "auto: JSON lines whose first line is a SillyTavern header or message"
        produce = _produce_lines(export, chosen, own_name)
    elif layout == "object":
        chosen, reason = _choose(format, sample, "$")
        produce = _produce_object(export, chosen, own_name)
    elif sample is None:
        chosen, reason = (format, "given") if format != "auto" else ("none", "empty array")
        produce = _produce_array(export, chosen, name)
    else:
        chosen, reason = _choose(format, sample, "$[0]")
        produce = (
            _produce_object(export, chosen, own_name)
            if chosen == SILLYTAVERN
            else _produce_array(export, chosen, name)
        )
    return ImportPlan(
        format=chosen,
        format_reason=reason,
        source=export.label,
        produce=produce,
        total=export.size(),
        unit="bytes",
    )


# Over a size limit the import stops (ImportTooLarge propagates); any other read failure
# becomes the failed conversation where the file breaks.


def _produce_array(export: ExportFile, format: str, name: str | None) -> Producer:
    limits = export.limits

    def produce() -> Iterator[tuple[ConversationPlan, int]]:
        with export.open() as stream:
            reader = JsonReader(stream, limits=limits, source=export.label)
            seen = 0
            try:
                for index, value in iter_array(reader):
                    plan = _parse_one(format, Cursor(value, f"$[{index}]"), index, name, limits)
                    yield plan, reader.bytes_read
                    seen = index + 1
            except ImportTooLarge:
                raise
            except ImportFormatError as error:
                # Past a syntax error nothing can be resynchronised: report it once, at the
                # conversation where the file breaks, after the ones already read.
                yield _failed(format, seen, error.path, error), reader.bytes_read

    return produce


def _produce_object(export: ExportFile, format: str, name: str) -> Producer:
    limits = export.limits

    def produce() -> Iterator[tuple[ConversationPlan, int]]:
        raw = b""
        try:
            with export.open() as stream:
                raw = stream.read_whole(limits.max_conversation_bytes)
            if len(raw) > limits.max_conversation_bytes:
                raise limits.refuse(
                    "max_conversation_bytes",
                    f"{export.label} is one conversation of more than "
                    f"{limits.max_conversation_bytes:,} bytes",
                )
            try:
                text = raw.decode("utf-8-sig")
            except UnicodeDecodeError as error:
                raise ImportFormatError(f"not UTF-8 text near byte {error.start}") from None
            allowed = _values_allowed(limits)
            if marks_bound(text) > allowed:  # else it cannot hold more values than allowed
                _check_values(export, count_values(text, allowed), "$")
            value = loads(text)
        except ImportTooLarge:
            raise
        except ImportFormatError as error:
            yield _failed(format, 0, "$", error), len(raw)
            return
        if format == SILLYTAVERN and isinstance(value, dict):
            value = [value]
        yield _parse_one(format, Cursor(value, "$"), 0, name, limits), len(raw)

    return produce


def _produce_lines(export: ExportFile, format: str, name: str) -> Producer:
    """A JSON-lines chat is one conversation, held whole: its bytes count as one value."""
    limits = export.limits

    def produce() -> Iterator[tuple[ConversationPlan, int]]:
        lines: list[Any] = []
        done = values = 0
        try:
            with export.open() as stream:
                while True:
                    allowance = limits.max_conversation_bytes - done
                    raw = stream.readline(allowance + 1)
                    if not raw:
                        break
                    done += len(raw)
                    if done > limits.max_conversation_bytes:
                        raise limits.refuse(
                            "max_conversation_bytes",
                            f"{export.label} is one chat of more than "
                            f"{limits.max_conversation_bytes:,} bytes",
                            path=f"$[{len(lines)}]",
                        )
                    if raw.strip():
                        where = f"$[{len(lines)}]"
                        try:
                            text = raw.decode("utf-8-sig")
                        except UnicodeDecodeError:
                            raise ImportFormatError("not UTF-8 text", path=where) from None
                        values += count_values(text, _values_allowed(limits) - values)
                        _check_values(export, values, where)
                        lines.append(loads(text, path=where))
        except ImportTooLarge:
            raise
        except ImportFormatError as error:
            yield _failed(format, 0, "$", error), done
            return
        yield _parse_one(format, Cursor(lines, "$"), 0, name, limits), done

    return produce


def _values_allowed(limits: ImportLimits) -> int:
    return min(limits.max_conversation_values, limits.max_export_values)


def _check_values(export: ExportFile, values: int, path: str) -> None:
    """Refuse a conversation read whole (one object, a JSON-lines chat) with more JSON
    values than the limits allow, before it is decoded."""
    limits = export.limits
    if values <= _values_allowed(limits):
        return
    name = (
        "max_conversation_values"
        if limits.max_conversation_values <= limits.max_export_values
        else "max_export_values"
    )
    raise limits.refuse(
        name,
        f"{export.label} is one conversation of more than {getattr(limits, name):,} JSON "
        "values (each becomes a Python object when parsed)",
        path=path,
    )
