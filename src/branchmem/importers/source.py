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
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from .errors import ImportFormatError
from .formats import FORMATS, PARSERS, detect
from .jsonpath import Cursor
from .jsonstream import JsonReader, iter_array, loads
from .plan import ConversationPlan, ImportPlan, Producer
from .sillytavern import FORMAT as SILLYTAVERN

Export = dict[str, Any] | list[Any]


def load(
    source: str | os.PathLike[str] | Export,
    format: str = "auto",
    *,
    name: str | None = None,
) -> ImportPlan:
    """Plan the import of an export file or an already parsed export.

    ``format`` is ``"auto"`` or one of ``FORMATS``. ``name`` names a SillyTavern chat
    given as a value (a file's own name is used otherwise).
    """
    if format != "auto" and format not in PARSERS:
        raise ImportFormatError(f"unknown format {format!r}; choose auto or one of {FORMATS}")
    if isinstance(source, dict | list):
        return _load_value(source, format, name)
    if isinstance(source, str | os.PathLike):
        return _load_file(Path(source), format, name)
    raise ImportFormatError(f"cannot import a {type(source).__name__}: give a path or JSON")


def _parse_one(format: str, cursor: Cursor, index: int, name: str | None) -> ConversationPlan:
    """Parse one conversation; its failure becomes an error plan, never an exception."""
    try:
        return PARSERS[format](cursor, index, name)
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


def _load_value(value: Export, format: str, name: str | None) -> ImportPlan:
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
            yield _parse_one(chosen, Cursor(whole, "$"), 0, name), 1

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
            yield _parse_one(chosen, Cursor(item, f"$[{index}]"), index, name), index + 1

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
    """A binary stream whose read failures become ImportFormatError naming the export."""

    def __init__(self, stream: IO[bytes], label: str) -> None:
        self._stream = stream
        self._label = label

    def _failure(self, error: Exception) -> ImportFormatError:
        return ImportFormatError(f"cannot read {self._label}: {error}")

    def read(self, size: int = -1, /) -> bytes:
        try:
            return self._stream.read(size)
        except _READ_ERRORS as error:
            raise self._failure(error) from None

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                line = self._stream.readline()
            except _READ_ERRORS as error:
                raise self._failure(error) from None
            if not line:
                return
            yield line


@dataclass(frozen=True, slots=True)
class ExportFile:
    """An export on disk: a plain file, or the JSON member of a zip archive (the ChatGPT
    and Claude exports arrive zipped, with ``conversations.json`` inside)."""

    path: Path
    member: str | None = None

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
            yield _GuardedStream(raw, self.label)


def locate(path: Path) -> ExportFile:
    """The export inside ``path``: the file itself, or the zip member holding the chats."""
    try:
        if not zipfile.is_zipfile(path):
            return ExportFile(path)
        with zipfile.ZipFile(path) as archive:
            names = [info.filename for info in archive.infolist() if not info.is_dir()]
    except _READ_ERRORS as error:
        raise ImportFormatError(f"cannot read {path}: {error}") from None
    preferred = [n for n in names if PurePosixPath(n).name == "conversations.json"]
    candidates = preferred or [n for n in names if n.lower().endswith((".json", ".jsonl"))]
    if len(candidates) != 1:
        listed = ", ".join(sorted(candidates)[:5]) or "none"
        raise ImportFormatError(
            f"{path} is a zip archive; expected one conversations.json or one JSON file "
            f"in it, found {len(candidates)} ({listed})"
        )
    return ExportFile(path, candidates[0])


def _sniff(export: ExportFile) -> tuple[str, Any]:
    """The file's layout (array, object or lines) and its first conversation or line."""
    with export.open() as stream:
        reader = JsonReader(stream)
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


def _load_file(path: Path, format: str, name: str | None) -> ImportPlan:
    export = locate(path)
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


def _produce_array(export: ExportFile, format: str, name: str | None) -> Producer:
    def produce() -> Iterator[tuple[ConversationPlan, int]]:
        with export.open() as stream:
            reader = JsonReader(stream)
            seen = 0
            try:
                for index, value in iter_array(reader):
                    plan = _parse_one(format, Cursor(value, f"$[{index}]"), index, name)
                    yield plan, reader.bytes_read
                    seen = index + 1
            except ImportFormatError as error:
                # Past a syntax error nothing can be resynchronised: report it once, at the
                # conversation where the file breaks, after the ones already read.
                yield _failed(format, seen, error.path, error), reader.bytes_read

    return produce


def _produce_object(export: ExportFile, format: str, name: str) -> Producer:
    def produce() -> Iterator[tuple[ConversationPlan, int]]:
        raw = b""
        try:
            with export.open() as stream:
                raw = stream.read()
            try:
                text = raw.decode("utf-8-sig")
            except UnicodeDecodeError as error:
                raise ImportFormatError(f"not UTF-8 text near byte {error.start}") from None
            value = loads(text)
        except ImportFormatError as error:
            yield _failed(format, 0, "$", error), len(raw)
            return
        if format == SILLYTAVERN and isinstance(value, dict):
            value = [value]
        yield _parse_one(format, Cursor(value, "$"), 0, name), len(raw)

    return produce


def _produce_lines(export: ExportFile, format: str, name: str) -> Producer:
    def produce() -> Iterator[tuple[ConversationPlan, int]]:
        lines: list[Any] = []
        done = 0
        try:
            with export.open() as stream:
                for raw in stream:
                    done += len(raw)
                    if raw.strip():
                        where = f"$[{len(lines)}]"
                        try:
                            text = raw.decode("utf-8-sig")
                        except UnicodeDecodeError:
                            raise ImportFormatError("not UTF-8 text", path=where) from None
                        lines.append(loads(text, path=where))
        except ImportFormatError as error:
            yield _failed(format, 0, "$", error), done
            return
        yield _parse_one(format, Cursor(lines, "$"), 0, name), done

    return produce
