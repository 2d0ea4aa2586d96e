"""The API's reads answered without FastAPI's per-request machinery.

A ``GET`` of the operation table (``visible``, ``search``, ``explain`` ...) is what agents
call on every turn, and FastAPI's routing and per-parameter validation of its ten query
parameters cost about a third of a 40-record ``visible``. This ASGI layer sits inside
``Guard`` (sizes and text are checked before it) and answers such a read itself when the
request is plainly valid: a key decided without reading the store (cached, or the explorer's
token) and bound to the namespace; the path matching the operation's route; every query
parameter one the route declares, given once, with a value FastAPI would take as it is
(``true``/``false``, digits within the bounds, text within its lengths). It then makes the
same call and writes the same bytes, through the one handler behind the FastAPI route
(``routes.answer``); a library error becomes the same problem document. A view read
(``ON_LOOP``) runs on the event loop when the store's lock is free: it would hold that lock
in a thread just as long, and the hop there and back costs two thread wake-ups, which on a
busy machine is most of what a request pays over the call; other reads, and any read while
a write holds the store, run in a thread as FastAPI would run them.

``DirectReader`` decides and answers outside any ASGI layer; ``DirectReads`` is the ASGI
middleware around it.

Anything else goes on, unchanged, to the FastAPI route: a missing, unknown or uncached key,
a namespace the key is not bound to, an empty or out-of-range value, an unknown parameter.
The direct path never decides a refusal of its own, so the two cannot disagree on one;
``tests/test_server_direct.py`` holds both to the same status, headers and body.
"""

from __future__ import annotations

import functools
import re
import typing
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qsl, unquote

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ..api.operations import PREFIX, REQUIRED, Operation, operations
from ..errors import BranchmemError, InvalidInput
from .auth import bearer, grant_without_store
from .guard import QUERY_PAIRS, ASGIApp, Receive, Scope, Send
from .keys import ApiKey
from .problems import Refusal, library_problem, problem
from .routes import (
    MAX_LIMIT,
    answer,
    decode_cursor,
    documented_model,
    query_constraints,
    query_default,
)
from .schemas import MAX_ID

MAX_SEGMENT: Final = 3 * MAX_ID  # the path parameters' own bound (auth.IdParam)
CURSOR_LENGTH: Final = 64  # routes.CursorQuery
MODES: Final = frozenset({"strict", "compat"})
# reads that cost in proportion to what they answer (a view, a search, one item): when the
# store is free they run on the event loop, as long as they would hold the store's lock in a
# thread; lists that grow with history (path, audit, report ...) always take a thread
ON_LOOP: Final = frozenset(
    {"visible", "search", "explain", "current", "get_event", "get_record", "head"}
)

Parse = Callable[[str], Any]


class Defer(Exception):
    """This request is not plainly valid: the FastAPI route answers it."""


def text(min_length: int, max_length: int) -> Parse:
    def parse(value: str) -> str:
        if not value or not min_length <= len(value) <= max_length:
            raise Defer
        return value

    return parse


def flag(value: str) -> bool:
    """Only the spellings the client sends; pydantic's other ones ("1", "on") go on."""
    if value == "true":
        return True
    if value == "false":
        return False
    raise Defer


def whole(ge: int | None, le: int | None) -> Parse:
    def parse(value: str) -> int:
        if not value.isascii() or not value.isdigit() or len(value) > 9 or value[0] == "0":
            raise Defer
        number = int(value)
        if (ge is not None and number < ge) or (le is not None and number > le):
            raise Defer
        return number

    return parse


def mode(value: str) -> str:
    if value not in MODES:
        raise Defer
    return value


def cursor(value: str) -> str:
    if not 0 < len(value) <= CURSOR_LENGTH:
        raise Defer
    try:
        decode_cursor(value)
    except InvalidInput:
        raise Defer from None
    return value


def query_parser(name: str, hint: Any, constraints: Mapping[str, Any]) -> Parse | None:
    """How the direct path reads one query parameter; None: it never reads it (the FastAPI
    route answers any request giving it)."""
    if name == "mode":
        return mode
    bare = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    if len(bare) != 1:
        return None
    if bare[0] is str:
        return text(constraints.get("min_length", 0), constraints["max_length"])
    if bare[0] is bool:
        return flag
    if bare[0] is int:
        return whole(constraints.get("ge"), constraints.get("le"))
    return None


@dataclass(frozen=True)
class Read:
    """One GET operation as the direct path serves it."""

    op: Operation
    pattern: re.Pattern[str]
    segments: tuple[str, ...]  # the path parameters, in the order of the pattern's groups
    parsers: Mapping[str, Parse | None]
    defaults: Mapping[str, Any]  # every query parameter the handler is given when left out
    documented: Any


def route_pattern(path: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """The route's path as Starlette matches it: each ``{name}`` one segment."""
    names = tuple(re.findall(r"\{([a-z_]+)\}", path))
    pattern = re.escape(path)
    for name in names:
        pattern = pattern.replace(re.escape("{" + name + "}"), "([^/]+)")
    return re.compile(f"^{pattern}$"), names


def reads() -> list[Read]:
    """Every GET of the operation table, in the table's order (the router's)."""
    found = []
    for op in operations().values():
        if op.verb != "GET" or op.mutates:
            continue
        pattern, segments = route_pattern(PREFIX + op.path)
        parsers: dict[str, Parse | None] = {}
        defaults: dict[str, Any] = {}
        for param in op.where("query"):
            parsers[param.name] = query_parser(param.name, param.hint, query_constraints(param))
            default = query_default(param)
            if default is not REQUIRED:
                defaults[param.name] = default
        if op.page:
            parsers["limit"] = whole(1, MAX_LIMIT)
            parsers["cursor"] = cursor
            defaults["limit"] = op.limit
            defaults["cursor"] = None
        found.append(Read(op, pattern, segments, parsers, defaults, documented_model(op)))
    return found


def reads_by_last_segment(found: list[Read]) -> dict[str, list[Read]]:
    """The reads a path may match, by its last segment, in the table's order: the routes
    ending in that text and those ending in a parameter ("" holds those alone: a path
    ending in any other text)."""
    lasts = [read.op.path.rsplit("/", 1)[-1] for read in found]
    open_ended = [last.startswith("{") for last in lasts]
    keys = ["", *(last for last, is_open in zip(lasts, open_ended, strict=True) if not is_open)]
    return {
        key: [
            read
            for read, last, is_open in zip(found, lasts, open_ended, strict=True)
            if is_open or last == key
        ]
        for key in keys
    }


def segment(raw: str) -> str:
    """A path parameter as ``auth.path_segment`` reads it."""
    if not 0 < len(raw) <= MAX_SEGMENT:
        raise Defer
    try:
        decoded = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise Defer from None
    if not decoded:
        raise Defer
    return decoded


Answer = Callable[[], Response]


def settled(call: Answer) -> Response:
    """The call's answer, a library error or refusal as the problem document FastAPI's
    handlers would write."""
    try:
        return call()
    except BranchmemError as error:
        return library_problem(error)
    except Refusal as error:
        return problem(error.code, error.detail)


class DirectReads:
    """ASGI middleware answering plainly valid reads of the API (see the module doc)."""

    def __init__(self, app: ASGIApp, reader: DirectReader) -> None:
        self.app = app
        self.reader = reader

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        reader = self.reader
        planned = reader.plan(scope)
        if planned is None:
            await self.app(scope, receive, send)
            return
        name, call = planned
        response = reader.on_loop(name, call)
        if response is None:
            response = await run_in_threadpool(settled, call)
        reader.served[name] += 1
        await response(scope, receive, send)


class DirectReader:
    """What the direct path decides and answers, outside any ASGI layer (the middleware
    above asks it).

    ``served`` counts the requests answered directly, by operation."""

    def __init__(self, state: Any, served: Counter[str]) -> None:
        self.state = state
        self.served = served
        self.reads = reads()
        self.by_last = reads_by_last_segment(self.reads)
        self.ending_in_a_parameter = self.by_last.pop("", [])

    def plan(self, scope: Scope) -> tuple[str, Answer] | None:
        """The operation and the call answering a plainly valid read; None: the FastAPI
        route answers the request."""
        if scope["type"] != "http" or scope.get("method") != "GET" or scope.get("root_path"):
            return None
        path: str = scope.get("path", "")
        if not path.startswith("/v1/ns/"):
            return None
        try:
            read, namespace, given, grant = self.admit(scope, path)
        except Defer:
            return None
        memory = self.state.memory
        call = functools.partial(
            answer, read.op, None, read.documented, memory, namespace, grant, given
        )
        return read.op.name, call

    def on_loop(self, name: str, call: Answer) -> Response | None:
        """The answer, made here on the event loop when the read is one of ``ON_LOOP`` and
        the store is free: it would hold the store's lock in a thread just as long, and the
        hop there and back costs two thread wake-ups. None: it takes a thread."""
        if name not in ON_LOOP:
            return None
        with self.state.memory.when_free() as free:
            return settled(call) if free else None

    def admit(self, scope: Scope, path: str) -> tuple[Read, str, dict[str, Any], ApiKey | None]:
        """The read, namespace, handler arguments and grant of a plainly valid request."""
        last = path.rsplit("/", 1)[-1]
        for read in self.by_last.get(last, self.ending_in_a_parameter):
            match = read.pattern.match(path)
            if match is not None:
                break
        else:
            raise Defer
        namespace, *values = (segment(raw) for raw in match.groups())
        grant = self.grant(scope, namespace)
        given: dict[str, Any] = dict(zip(read.segments[1:], values, strict=True))
        given.update(read.defaults)
        pairs = scope.get(QUERY_PAIRS)  # as Guard parsed and checked them
        if pairs is None:
            query = scope.get("query_string", b"").decode("latin-1")
            pairs = parse_qsl(query, keep_blank_values=True)
        seen: set[str] = set()
        for name, value in pairs:
            parse = read.parsers.get(name)
            if parse is None or name in seen:
                raise Defer  # unknown, not read here, or given twice (Guard refuses that)
            seen.add(name)
            given[name] = parse(value)
        if any(name not in given for name in read.parsers):
            raise Defer  # a required parameter left out: FastAPI names it
        return read, namespace, given, grant

    def grant(self, scope: Scope, namespace: str) -> ApiKey | None:
        """The caller's key when it is decided without the store and bound to ``namespace``."""
        ring = self.state.keys
        if ring is None:
            return None
        header = next(
            (value for name, value in scope.get("headers") or () if name == b"authorization"),
            b"",
        )
        try:
            presented = bearer(header.decode("latin-1"))
        except Refusal:
            raise Defer from None
        known, grant = grant_without_store(ring, self.state.local, "GET", presented)
        if not known or grant is None or not grant.allows(namespace):
            raise Defer
        return grant
