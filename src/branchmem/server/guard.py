"""Refuse oversized and unstorable requests before any handler runs.

Size: a request body over the limit is refused with 413 whether it announces its length or
streams it (the body is counted as it arrives, never buffered past the limit).

Text: every store keeps text as UTF-8, and PostgreSQL cannot hold NUL. A lone UTF-16
surrogate (``"\\ud800"`` in JSON) or a NUL in the path, the query or any JSON string is
refused with 422 here, so every backend gives the same answer instead of a driver error.

JSON: a body a handler may parse as JSON (no content type, or ``application/json`` /
``application/*+json`` in any letter case; an import's file excepted) must be UTF-8
and standard JSON as stored: NaN, Infinity, numbers out of float range, integers over
4,300 digits and keys given twice in one object are refused with 422, never stored in a
form that reads back differently.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote

from ..importers.limits import ImportLimits
from .problems import problem

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_DEPTH = 64
MAX_INT_DIGITS = 4300  # Python's own limit on int <-> str conversion
# the scope key under which Guard leaves the query's (name, value) pairs it checked, so the
# direct reads (direct.py) do not parse the query string a second time
QUERY_PAIRS = "branchmem.query_pairs"


@dataclass(frozen=True, slots=True)
class Limits:
    """Request limits; the import endpoint takes whole chat exports, so it has its own.

    ``imports`` bounds what an upload may expand to (a zip is decompressed); by default it
    is derived from ``max_import`` and ``max_body`` (``ImportLimits.for_upload``).
    """

    max_body: int = 1 << 20  # 1 MiB
    max_import: int = 64 << 20  # 64 MiB
    import_path_suffix: str = "/import"
    imports: ImportLimits | None = None

    def for_imports(self) -> ImportLimits:
        if self.imports is not None:
            return self.imports
        return ImportLimits.for_upload(self.max_import, self.max_body)


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None."""
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone UTF-16 surrogate"
    return None


def plain_text(text: str) -> bool:
    """ASCII with no escape (``%``, ``+``) and no NUL: it reads as itself and is storable."""
    return text.isascii() and "%" not in text and "+" not in text and "\x00" not in text


def query_pairs(query: str, plain: bool | None = None) -> list[tuple[str, str]]:
    """``parse_qsl(query, keep_blank_values=True, errors="strict")``: a query an agent's
    client sends (plain ASCII names and values) is split without decoding anything.
    ``plain``: ``plain_text(query)``, when the caller knows it already."""
    if not (plain_text(query) if plain is None else plain):
        return parse_qsl(query, keep_blank_values=True, errors="strict")
    pairs = []
    for part in query.split("&"):
        if part:
            name, _, value = part.partition("=")
            pairs.append((name, value))
    return pairs


def find_unstorable(value: Any, where: str = "body", depth: int = 0) -> str | None:
    """The first JSON value that cannot be stored faithfully, described: a string (key or
    value) no store keeps, a number JSON cannot carry, a key given twice."""
    if depth > MAX_DEPTH:
        return f"{where}: nested deeper than {MAX_DEPTH} levels"
    if isinstance(value, str):
        why = unstorable(value)
        return f"{where} {why}" if why else None
    if isinstance(value, _NonStandard):
        return f"{where}: {value.text} {value.why}"
    if isinstance(value, _DuplicateKeys):
        return f"{where}: key {value.duplicate!r} is given more than once"
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = find_unstorable(item, f"{where}[{index}]", depth + 1)
            if found:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            found = find_unstorable(key, f"{where} key", depth + 1) or find_unstorable(
                item, f"{where}.{key}", depth + 1
            )
            if found:
                return found
    return None


def is_json(content_type: bytes | None) -> bool:
    """Whether a handler may parse the body as JSON: ``application/json`` or
    ``application/*+json`` in any letter case, parameters such as ``charset`` ignored, as
    FastAPI decides; a body without a type too (FastAPI parses it unless strict)."""
    if not content_type:
        return True
    media = content_type.decode("latin-1").split(";", 1)[0].strip().lower()
    kind, _, subtype = media.partition("/")
    if not subtype:  # not a media type: FastAPI reads it as text/plain
        return False
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


class _DuplicateKeys(dict[str, Any]):
    """An object that named a key twice; the walk reports where."""

    duplicate: str = ""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    flagged = _DuplicateKeys(out)
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            flagged.duplicate = key
            break
        seen.add(key)
    return flagged


class _NonStandard:
    """A number JSON cannot carry (NaN, Infinity, 1e999, a 5,000-digit integer)."""

    def __init__(self, text: str, why: str) -> None:
        self.text = text if len(text) <= 20 else f"{text[:12]}... ({len(text):,} characters)"
        self.why = why


def _constant(name: str) -> _NonStandard:
    return _NonStandard(name, "is not a JSON number (NaN and Infinity are not JSON)")


def _float(text: str) -> float | _NonStandard:
    value = float(text)
    if math.isfinite(value):
        return value
    return _NonStandard(text, "is out of range for a 64-bit float")


def _int(text: str) -> int | _NonStandard:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        return _NonStandard(text, f"has more than {MAX_INT_DIGITS} digits")
    return int(text)


_STRICT = json.JSONDecoder(
    object_pairs_hook=_no_duplicates, parse_constant=_constant, parse_float=_float,
    parse_int=_int,
)  # fmt: skip


def check_json(body: bytes) -> tuple[str, str] | None:
    """(problem code, detail) when ``body`` must be refused before a handler sees it.

    Malformed JSON is left to the handler, which reports where it breaks.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        return "invalid_input", f"request body is not valid UTF-8 (byte {error.start})"
    try:
        parsed = _STRICT.decode(text)
    except RecursionError:
        return "malformed", "JSON nested too deeply"
    except ValueError:
        return None
    found = find_unstorable(parsed)
    return ("invalid_input", found) if found else None


def refusal(scope: Scope) -> tuple[str, str] | None:
    """(problem code, detail) when the request's path or query must be refused, else None.

    Routes on the path as sent (``raw_path``): an id or namespace holding '/' travels as
    %2F and must stay one segment; the path parameter types decode each segment once. Leaves
    the query's checked pairs under ``QUERY_PAIRS`` for the direct reads (``direct.py``)."""
    raw_path = scope.get("raw_path")
    if raw_path:
        try:
            scope["path"] = raw_path.decode("ascii")
        except UnicodeDecodeError:
            return "malformed", "the request path is not percent-encoded ASCII"
    path = scope.get("path", "")
    try:
        why = None if plain_text(path) else unstorable(unquote(path, errors="strict"))
    except UnicodeDecodeError:
        why = "path is not valid UTF-8"
    if why is None:
        raw_query = scope.get("query_string", b"").decode("latin-1")
        plain = plain_text(raw_query)
        try:
            pairs = query_pairs(raw_query, plain)
        except UnicodeDecodeError:
            pairs, why = [], "query string is not valid UTF-8"
        seen: set[str] = set()
        for name, value in pairs:
            why = None if plain else unstorable(name) or unstorable(value)
            if why:
                why = f"query parameter {name!r} {why}"
                break
            if name in seen:  # every parameter is single-valued: no silent last-wins
                why = f"query parameter {name!r} is given more than once"
                break
            seen.add(name)
        scope[QUERY_PAIRS] = pairs
    return ("invalid_input", f"request {why}") if why else None


class Guard:
    """ASGI middleware applying ``Limits`` and the text rule."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = refusal(scope)
        if refused is not None:
            await problem(*refused)(scope, receive, send)
            return
        path = scope.get("path", "")
        importing = path.endswith(self.limits.import_path_suffix)
        limit = self.limits.max_import if importing else self.limits.max_body
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._too_large(scope, receive, send, limit)
            return
        if scope.get("method") in ("GET", "HEAD", "DELETE", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body.extend(message.get("body", b""))
            if len(body) > limit:
                await self._too_large(scope, receive, send, limit)
                return
            if not message.get("more_body", False):
                break
        # an import's body is an export file, checked (and repaired) by the importer
        if body and not importing and is_json(headers.get(b"content-type")):
            refused = check_json(bytes(body))
            if refused is not None:
                await problem(*refused)(scope, receive, send)
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)

    @staticmethod
    async def _too_large(scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        response = problem("too_large", f"request body over the limit of {limit:,} bytes")
        await response(scope, receive, send)
