"""Refuse oversized and unstorable requests before any handler runs.

Size: a request body over the limit is refused with 413 whether it announces its length or
streams it (the body is counted as it arrives, never buffered past the limit).

Text: every store keeps text as UTF-8, and PostgreSQL cannot hold NUL. A lone UTF-16
surrogate (``"\\ud800"`` in JSON) or a NUL in the path, the query or any JSON string is
refused with 422 here, so every backend gives the same answer instead of a driver error.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote

from .problems import problem

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Limits:
    """Request limits; the import endpoint takes whole chat exports, so it has its own."""

    max_body: int = 1 << 20  # 1 MiB
    max_import: int = 64 << 20  # 64 MiB
    import_path_suffix: str = "/import"


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None."""
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone UTF-16 surrogate"
    return None


def find_unstorable(value: Any, where: str = "body", depth: int = 0) -> str | None:
    """The first JSON string (key or value) that cannot be stored, described."""
    if depth > MAX_DEPTH:
        return f"{where}: nested deeper than {MAX_DEPTH} levels"
    if isinstance(value, str):
        why = unstorable(value)
        return f"{where} {why}" if why else None
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


class Guard:
    """ASGI middleware applying ``Limits`` and the text rule."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw_path = scope.get("raw_path")
        if raw_path:
            # route on the path as sent: an id or namespace holding '/' travels as %2F and
            # must stay one segment; the path parameter types decode each segment once
            try:
                scope["path"] = raw_path.decode("ascii")
            except UnicodeDecodeError:
                await problem("malformed", "the request path is not percent-encoded ASCII")(
                    scope, receive, send
                )
                return
        path = scope.get("path", "")
        try:
            why = unstorable(unquote(path, errors="strict"))
        except UnicodeDecodeError:
            why = "path is not valid UTF-8"
        if why is None:
            raw_query = scope.get("query_string", b"").decode("latin-1")
            try:
                pairs = parse_qsl(raw_query, keep_blank_values=True, errors="strict")
            except UnicodeDecodeError:
                pairs, why = [], "query string is not valid UTF-8"
            seen: set[str] = set()
            for name, value in pairs:
                why = unstorable(name) or unstorable(value)
                if why:
                    why = f"query parameter {name!r} {why}"
                    break
                if name in seen:  # every parameter is single-valued: no silent last-wins
                    why = f"query parameter {name!r} is given more than once"
                    break
                seen.add(name)
        if why:
            await problem("invalid_input", f"request {why}")(scope, receive, send)
            return
        limit = (
            self.limits.max_import
            if path.endswith(self.limits.import_path_suffix)
            else self.limits.max_body
        )
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
        content_type = headers.get(b"content-type", b"").split(b";")[0].strip()
        if content_type.endswith(b"json") and body:
            try:
                parsed = json.loads(bytes(body))
            except RecursionError:
                await problem("malformed", "JSON nested too deeply")(scope, receive, send)
                return
            except ValueError:
                parsed = None  # the handler reports malformed JSON with its location
            found = find_unstorable(parsed) if parsed is not None else None
            if found:
                await problem("invalid_input", found)(scope, receive, send)
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
