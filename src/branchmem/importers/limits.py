"""How much an import may read and store, so a small hostile file cannot exhaust memory.

A zip of a few hundred kilobytes can hold gigabytes of JSON, and one JSON value (a
conversation) is held in memory whole while it is parsed. What it costs once parsed
depends on its shape more than on its bytes (``{},`` is 3 bytes of text and 72 of
objects), so both its bytes and its JSON values are capped. Every limit is checked while
the bytes arrive, before the memory they would need is taken.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from .errors import ImportTooLarge

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30

SERVICE_CONVERSATION_BYTES = 16 * MIB
SERVICE_CONVERSATION_VALUES = 250_000
# A parsed JSON value costs at most about 105 bytes of Python objects (measured over
# shapes such as ``{"k1":{}}``, ``[[]]`` and distinct short strings; ``{}`` is 72).

_UNITS = {"": 1, "k": KIB, "kib": KIB, "m": MIB, "mib": MIB, "g": GIB, "gib": GIB}  # binary


@dataclass(frozen=True, slots=True)
class ImportLimits:
    """The ceilings of one import; see docs/importers.md for why each default.

    ``how_to_raise`` completes the refusal's message; ``{limit}`` is the field's name.
    """

    # The export's JSON as read: the plain file, or the zip member once decompressed.
    max_export_bytes: int = 4 * GIB
    # One top-level JSON value (a conversation; a whole JSON-lines chat), held in memory
    # while it is parsed: bytes read without the value ending.
    max_conversation_bytes: int = 64 * MIB
    # JSON values (objects, arrays, strings, keys included, numbers, literals) of one
    # top-level value, counted by a scan before it is decoded: what parsing it builds.
    max_conversation_values: int = 1_000_000
    # JSON values of the whole export, counted the same way as it is read.
    max_export_values: int = 250_000_000
    # One message's text, in characters (Python ``len``).
    max_message_chars: int = 4 * MIB
    # Entries of a zip archive, read from its directory before the directory is loaded.
    max_zip_entries: int = 100_000
    how_to_raise: str = (
        "raise it with load(..., limits=ImportLimits({limit}=...)) "
        "or `branchmem import --limit {limit}=...`"
    )

    def __post_init__(self) -> None:
        for name in _NAMES:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInput(f"ImportLimits.{name} must be a positive integer")

    @classmethod
    def for_upload(cls, max_upload: int, max_message_chars: int) -> ImportLimits:
        """The limits of a service whose uploads are at most ``max_upload`` bytes.

        A JSON export zips about 5-15 times, so an archive at the upload limit may hold
        16 times as much JSON. A shared server holds several uploads at once, so one
        conversation may take at most 16 MiB and 250,000 JSON values (about 60 MiB of
        text and 26 MiB of parsed objects at the very worst, whatever its shape), and no
        more than an unzipped upload could; an upload at most one value per 8 bytes of
        the JSON it may expand to; a message may be as long as one ordinary request may be.
        """
        return cls(
            max_export_bytes=16 * max_upload,
            max_conversation_bytes=min(SERVICE_CONVERSATION_BYTES, max_upload),
            max_conversation_values=SERVICE_CONVERSATION_VALUES,
            max_export_values=max(SERVICE_CONVERSATION_VALUES, 2 * max_upload),
            max_message_chars=max_message_chars,
            how_to_raise="this server's operator sets it with `branchmem serve --max-import` "
            "(and --max-body for one message), or any limit with "
            "server.Limits(imports=ImportLimits({limit}=...))",
        )

    @classmethod
    def parse(cls, settings: Iterable[str], base: ImportLimits | None = None) -> ImportLimits:
        """``["max_export_bytes=8GiB", ...]`` (the CLI's ``--limit``) over ``base``."""
        changes: dict[str, Any] = {}
        for setting in settings:
            name, sep, raw = setting.partition("=")
            name = name.strip()
            if not sep or name not in _NAMES:
                raise InvalidInput(
                    f"unknown import limit {setting!r}; use NAME=VALUE with NAME one of "
                    f"{', '.join(_NAMES)}"
                )
            changes[name] = _size(name, raw)
        return dataclasses.replace(base or cls(), **changes)

    def refuse(
        self,
        limit: str,
        what: str,
        *,
        conversation: str | None = None,
        path: str = "$",
    ) -> ImportTooLarge:
        """The error for ``what`` exceeding ``limit``, saying how to raise that limit."""
        allowed = getattr(self, limit)
        return ImportTooLarge(
            f"{what}, over the import limit {limit} = {allowed:,}; "
            + self.how_to_raise.format(limit=limit),
            limit=limit,
            allowed=allowed,
            conversation=conversation,
            path=path,
        )


_NAMES = tuple(
    field.name for field in dataclasses.fields(ImportLimits) if field.name.startswith("max_")
)


def _size(name: str, raw: str) -> int:
    text = raw.strip().lower().replace("_", "").replace(",", "")
    digits = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(digits) :]
    if not digits.isdigit() or unit not in _UNITS:
        raise InvalidInput(
            f"import limit {name}: {raw!r} is not a size (an integer, optionally with KiB, "
            "MiB or GiB)"
        )
    return int(digits) * _UNITS[unit]
