"""``branchmem.Client``: the ``Memory`` API over HTTP, same names, same return types.

    mem = Memory.open("memory.db")                                   # embedded
    mem = Client("http://127.0.0.1:8765", api_key="bm_...")          # the service

Values come back as the same frozen dataclasses (``Record``, ``Event``, ``Explanation``,
``Hit``, ``Context``, ``AuditEntry`` ...), and a refused call raises the same
``branchmem.errors`` class the embedded call would, chosen by the problem's ``code``.

``url`` may list several workers: a request that could not reach one goes to the next. A
request that may have reached the server is retried only when repeating it cannot change
the outcome (reads, and writes that are no-ops when repeated: adding an identical event or
record). ``mode`` sets the decision mode of every view this client asks for, as
``Memory(mode)`` does.

The API methods are not written here: each is one line, ``name = remote(MemoryAPI.name)``,
which sends the call by its route in the operation table and decodes the answer with the
codec (``branchmem.api``); mypy reads each signature from ``MemoryAPI``.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import quote, urlencode

from .errors import MissingExtra

try:
    import httpx
except ImportError as missing:  # the core library has no dependencies; the client has one
    raise MissingExtra("branchmem.Client", "client", missing.name) from missing

from ._core.validation import Keep, check_id
from .api.codec import decode, encode_argument
from .api.operations import Operation, binder, operations
from .api.protocol import MemoryAPI, takes_declared_docs
from .errors import (  # noqa: F401  (every error class stays importable from here, as before)
    BranchmemError,
    ConflictError,
    CycleError,
    ErasedError,
    Forbidden,
    InvalidInput,
    MissingExtra,
    NotFoundError,
    SchemaVersionError,
    ServiceError,
    StorageError,
    TooLarge,
    Unauthorized,
    Unavailable,
    problem_class,
)
from .keepalive import Broken, Connections, Unsent
from .model import MODES, Explanation

if TYPE_CHECKING:
    from .importers import ImportPlan, ImportSummary, ProgressCallback

DEFAULT_NAMESPACE: Final = "default"
PAGE: Final = 1000

_fast_loads: Callable[[bytes], Any] | None
try:  # the server extra brings orjson; the client works without it
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - exercised where orjson is not installed
    _fast_loads = None

# 19 digits in a row may be an integer beyond 64 bits, which orjson reads as a float; every
# digit made a 0, such a run is found by a substring test (a regex scan costs more than json)
_DIGITS_AS_ZERO: Final = bytes.maketrans(b"123456789", b"0" * 9)
_LONG_RUN: Final = b"0" * 19


def loads(answer: bytes) -> Any:
    """``json.loads(answer)``, through orjson when it is installed and reads the same value:
    a page of 40 records in about half the time. What orjson refuses (NaN, a lone surrogate,
    nesting past 1,024) or could misread (a run of 19 digits or more: an integer beyond
    64 bits, which it reads as a float) is read by ``json``, errors included."""
    if _fast_loads is not None and _LONG_RUN not in answer.translate(_DIGITS_AS_ZERO):
        try:
            return _fast_loads(answer)
        except ValueError:  # orjson.JSONDecodeError is one
            pass
    return json.loads(answer)


class NotABranchmemService(Unavailable):
    """The URL answers HTTP, but not as a branchmem service does: an answer no worker writes
    (an HTML page, text that is not JSON, JSON of another shape), and ``GET /healthz`` there
    names no version. Raised instead of the decode error such an answer would cause; an
    ``Unavailable``, since no branchmem answers at that URL."""

    def __init__(self, url: str, healthz: str) -> None:
        self.url = url
        super().__init__(
            f"{url}/ answered but is not a branchmem service (no /healthz version: {healthz})"
        )


def is_problem(answer: bytes) -> bool:
    """Whether an error answer is a problem document a branchmem worker writes (JSON with a
    ``code``), rather than, say, a web server's HTML page."""
    try:
        data = loads(answer)
    except ValueError:
        return False
    return isinstance(data, dict) and isinstance(data.get("code"), str)


def healthz_version(status: int, answer: bytes) -> str | None:
    """What ``GET /healthz`` answered: None when it names a branchmem version, else what it
    answered instead (for the error's message)."""
    if status != 200:
        return f"GET /healthz answered HTTP {status}"
    try:
        data = loads(answer)
    except ValueError:
        return "GET /healthz answered text that is not JSON"
    if isinstance(data, dict) and isinstance(data.get("version"), str):
        return None
    return "GET /healthz answered JSON without a version"


# what reading an answer of an unexpected shape raises (a missing key, a list for an object)
SHAPE_ERRORS: Final = (KeyError, TypeError, ValueError, AttributeError, IndexError)


def url_segment(value: str) -> str:
    """A path segment that survives URL normalisation: '.' and '..' are encoded too."""
    encoded = quote(value, safe="")
    return encoded.replace(".", "%2E") if set(value) == {"."} else encoded


def _flag(value: bool) -> str:
    return "true" if value else "false"


F = TypeVar("F", bound=Callable[..., Any])

# a query parameter must already have the type the server parses it as
_SCALARS: Final = (str, int, float, bool)


def query_value(op: Operation, name: str, hint: Any, value: Any) -> Any:
    """A query parameter as sent; refused here when the server could only misread it
    (``search(5, ...)`` would arrive as the text "5")."""
    if value is None:
        return None
    allowed = [t for t in (hint, *getattr(hint, "__args__", ())) if t in _SCALARS]
    accepted = (*allowed, int) if float in allowed else tuple(allowed)
    if (allowed and not isinstance(value, accepted)) or (
        isinstance(value, bool) and bool not in allowed
    ):
        wanted = " or ".join(t.__name__ for t in allowed)
        raise InvalidInput(f"{op.name}: {name} must be {wanted}, got {type(value).__name__}")
    return _flag(value) if isinstance(value, bool) else value


def remote(declared: F) -> F:
    """A ``Client`` method for an API method: same signature and docstring, sent over HTTP
    by the operation table's route and decoded by the codec (``Client._call``)."""
    name = declared.__name__
    bind = binder(declared)

    @functools.wraps(declared)
    def call(self: Client, *args: Any, **kwargs: Any) -> Any:
        return self._call(operations()[name], bind(args, kwargs))

    return call  # type: ignore[return-value]


@takes_declared_docs
class Client:
    """A remote ``Memory``. Thread-safe (one pooled HTTP client); close it when done."""

    def __init__(
        self,
        url: str | Sequence[str],
        api_key: str | None = None,
        *,
        mode: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        urls = [url] if isinstance(url, str) else list(url)
        if not urls or not all(isinstance(u, str) and u for u in urls):
            raise InvalidInput(f"a service URL is required, got {url!r}")
        if mode is not None and mode not in MODES:
            raise InvalidInput(f"mode must be one of {MODES} or None, got {mode!r}")
        self.urls = [u.rstrip("/") for u in urls]
        self.mode = mode
        self.retries = retries
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(headers=headers, timeout=timeout, transport=transport)
        plain = transport is None and all(Connections.serves(u) for u in self.urls)
        self._connections = Connections(timeout, headers) if plain else None
        self._next = itertools.cycle(range(len(self.urls)))
        self._preferred = 0
        self.failovers = 0  # requests answered by another worker than the one first tried
        self._lock = threading.Lock()
        self._services: set[int] = set()  # workers whose /healthz named a version

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        if self._connections is not None:
            self._connections.close()
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport ---------------------------------------------------------------------
    def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        repeatable: bool = False,
    ) -> Any:
        """Send to the preferred worker, failing over to the others; decode or raise."""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        if body is not None:
            try:
                content = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
            except (TypeError, ValueError) as error:
                raise InvalidInput(f"request is not JSON-serialisable ({error})") from error
            except UnicodeEncodeError as error:
                raise InvalidInput(f"request holds text that cannot be stored ({error})") from error
            headers = {"Content-Type": "application/json", **(headers or {})}
        repeatable = repeatable or method == "GET"
        target = path + ("?" + urlencode(query, quote_via=quote) if query else "")
        last: Exception | None = None
        attempts = max(1, self.retries) * len(self.urls)
        for attempt in range(attempts):
            with self._lock:
                index = self._preferred if attempt == 0 else next(self._next)
            try:
                status, answer = self._send(index, method, target, content, headers or {})
            except Broken as broken:
                if not repeatable:
                    raise Unavailable(
                        f"{method} {path}: the connection to {self.urls[index]} failed after "
                        f"the request was sent ({broken.error}); it may or may not have been "
                        "applied"
                    ) from broken.error
                last = broken.error
            except Unsent as unsent:
                last = unsent.error  # never reached the server: safe to send elsewhere
            else:
                if status in (502, 503, 504) and repeatable:
                    last = self._problem(status, answer)
                    continue
                with self._lock:
                    if attempt > 0:
                        self.failovers += 1
                    self._preferred = index
                return self._decode(status, answer, index)
        raise Unavailable(f"{method} {path}: no worker answered ({last})") from last

    def _send(
        self,
        index: int,
        method: str,
        target: str,
        content: bytes | None,
        headers: Mapping[str, str],
    ) -> tuple[int, bytes]:
        """One attempt at one worker: ``(status, body)``, or ``Unsent`` / ``Broken``."""
        if self._connections is not None:
            return self._connections.send(self.urls[index], method, target, content, headers)
        try:
            response = self._http.request(
                method, self.urls[index] + target, content=content, headers=headers
            )
        except (httpx.ConnectError, httpx.ConnectTimeout) as error:
            raise Unsent(error) from error
        except httpx.TransportError as error:
            raise Broken(error) from error
        return response.status_code, response.content

    def _problem(self, status: int, answer: bytes) -> BranchmemError:
        try:
            data = loads(answer)
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        code = str(data.get("code") or "internal")
        detail = str(data.get("detail") or f"HTTP {status}")
        return problem_class(code).from_problem(detail)

    def _decode(self, status: int, answer: bytes, index: int) -> Any:
        if status >= 400:
            if not is_problem(answer):  # a page no worker writes: is this branchmem at all?
                self._check_service(index)
            raise self._problem(status, answer)
        if status == 204:
            return None
        try:
            return loads(answer)
        except ValueError as error:
            self._check_service(index)
            raise ServiceError(f"{self.urls[index]}: the answer is not JSON ({error})") from error

    def _check_service(self, index: int) -> None:
        """Raise ``NotABranchmemService`` unless ``GET /healthz`` at worker ``index`` names a
        version. Asked only of an answer no worker writes, once per worker that passes."""
        if index in self._services:
            return
        try:
            status, answer = self._send(index, "GET", "/healthz", None, {})
        except (Unsent, Broken):
            return  # gone meanwhile: the answer's own error says more than a guess
        said = healthz_version(status, answer)
        if said is not None:
            raise NotABranchmemService(self.urls[index], said)
        self._services.add(index)

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """Reading an answer into the API's values: a shape no worker writes (JSON from some
        other service) asks whether the worker that answered is branchmem at all."""
        try:
            yield
        except BranchmemError:
            raise
        except SHAPE_ERRORS:
            self._check_service(self._preferred)
            raise

    def _ns(self, namespace: str) -> str:
        return f"/v1/ns/{url_segment(check_id(namespace, 'namespace'))}"

    def _id(self, value: object, what: str) -> str:
        return url_segment(check_id(value, what))

    def _pages(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[Any]:
        query = dict(params or {})
        query["limit"] = PAGE
        while True:
            data = self._request("GET", path, params=query)
            with self._reading():
                items, cursor = data["items"], data.get("next_cursor")
            yield from items
            if not cursor:
                return
            query["cursor"] = cursor

    def _mode(self, mode: str | None) -> str | None:
        return self.mode if mode is None else mode

    def _call(self, op: Operation, arguments: dict[str, Any]) -> Any:
        """One operation of the table: path, query or body from the arguments, then the
        result decoded into the API's own types."""
        where = self._ns(arguments.pop("namespace"))
        if "mode" in arguments and arguments["mode"] is None:
            arguments["mode"] = self.mode
        segments = {p.name: self._id(arguments.pop(p.name), p.name) for p in op.where("path")}
        where += op.path.format(**segments)
        data: Any
        if op.verb == "GET":
            query = {
                p.name: query_value(op, p.name, p.hint, arguments[p.name])
                for p in op.where("query")
            }
            data = (
                list(self._pages(where, query))
                if op.page
                else self._request("GET", where, params=query)
            )
        else:
            body = {
                name: encode_argument(value)
                for name, value in arguments.items()
                if not isinstance(value, Keep)  # left out: the server's method default
            }
            repeatable = op.repeatable and not body.get("supersedes")
            data = self._request(op.verb, where, body=body, repeatable=repeatable)
        with self._reading():
            if op.envelope is not None:
                data = data[op.envelope]
            return decode(op.result, data)

    # -- the API: one line per MemoryAPI method (mypy reads each signature from there) --
    add_event = remote(MemoryAPI.add_event)
    add_events = remote(MemoryAPI.add_events)
    get_event = remote(MemoryAPI.get_event)
    path = remote(MemoryAPI.path)
    set_head = remote(MemoryAPI.set_head)
    head = remote(MemoryAPI.head)
    heads = remote(MemoryAPI.heads)
    conversations = remote(MemoryAPI.conversations)
    trees = remote(MemoryAPI.trees)
    tree_events = remote(MemoryAPI.tree_events)
    record_views = remote(MemoryAPI.record_views)
    add_record = remote(MemoryAPI.add_record)
    add_records = remote(MemoryAPI.add_records)
    revise = remote(MemoryAPI.revise)
    get_record = remote(MemoryAPI.get_record)
    supersede = remote(MemoryAPI.supersede)
    retract = remote(MemoryAPI.retract)
    withdraw = remote(MemoryAPI.withdraw)
    erase = remote(MemoryAPI.erase)
    restore = remote(MemoryAPI.restore)
    dependents = remote(MemoryAPI.dependents)
    # -- forget and receipts
    forget = remote(MemoryAPI.forget)
    verify_receipt = remote(MemoryAPI.verify_receipt)
    visible = remote(MemoryAPI.visible)
    explain = remote(MemoryAPI.explain)
    current = remote(MemoryAPI.current)
    stale = remote(MemoryAPI.stale)
    diff = remote(MemoryAPI.diff)
    promote = remote(MemoryAPI.promote)
    report = remote(MemoryAPI.report)
    audit = remote(MemoryAPI.audit)
    history = remote(MemoryAPI.history)
    repair_queue = remote(MemoryAPI.repair_queue)
    search = remote(MemoryAPI.search)
    context = remote(MemoryAPI.context)
    deliveries = remote(MemoryAPI.deliveries)
    stale_deliveries = remote(MemoryAPI.stale_deliveries)
    blame = remote(MemoryAPI.blame)

    def is_visible(self, record_id: str, anchor: str | None, **options: Any) -> bool:
        return self.explain(record_id, anchor, **options).visible

    def namespaces(self) -> list[str]:
        answer = self._request("GET", "/v1/namespaces")
        with self._reading():
            names: list[str] = answer["namespaces"]
        return names

    # -- what only the client has ------------------------------------------------------
    def import_(
        self,
        plan: ImportPlan,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        progress: ProgressCallback | None = None,
    ) -> ImportSummary:
        return plan.apply(self, namespace=namespace, progress=progress)  # type: ignore[arg-type]

    def import_file(
        self,
        path: str,
        *,
        format: str = "auto",
        namespace: str = DEFAULT_NAMESPACE,
    ) -> ImportSummary:
        """Upload an export file; the server parses and applies it (``branchmem import``)."""
        from pathlib import Path

        from .importers import ImportSummary

        source = Path(path)
        data = self._request(
            "POST",
            self._ns(namespace) + "/import",
            params={"format": format, "filename": source.name},
            content=source.read_bytes(),
            headers={"Content-Type": "application/octet-stream"},
        )
        with self._reading():
            data["source"] = str(source)
            summary: ImportSummary = decode(ImportSummary, data)
        return summary

    def explanations(
        self,
        anchor: str | None,
        *,
        cross_tree: bool = False,
        mode: str | None = None,
        include_superseded: bool = False,
        include_stale: bool = False,
        as_of: int | str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Explanation]:
        """``explain`` for every record of the namespace at once (``record_views``' part)."""
        return [view.explanation for view in self.record_views(
            anchor, cross_tree=cross_tree, mode=mode, include_superseded=include_superseded,
            include_stale=include_stale, as_of=as_of, namespace=namespace,
        )]  # fmt: skip


# Checked by mypy: Client satisfies the protocol (a missing or mistyped method fails)
_remote: type[MemoryAPI] = Client
