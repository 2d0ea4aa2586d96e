"""``branchmem.AsyncClient``: the ``Memory`` API over HTTP for asyncio code (httpx's async
client), same names, same return types as ``Client``, every method awaited.

    mem = AsyncClient("http://127.0.0.1:8765", api_key="bm_...")
    records = await mem.visible("u2b", namespace="alice")

It behaves as ``Client`` does: values come back as the same frozen dataclasses, a refused
call raises the ``branchmem.errors`` class named by the problem's ``code``, ``url`` may list
several workers (a request that never reached one goes to the next; one that may have
reached it is repeated only when repeating cannot change the outcome), and ``mode`` sets
the decision mode of every view it asks for.

The API methods are not written here: each is one line, ``name = remote(MemoryAPI.name)``.
``prepare`` turns a call into its request by the operation table's route (the rules
``Client`` follows, held equal by ``tests/test_async_faces.py``), and the codec decodes the
answer into the API's own types.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Final, ParamSpec, TypeVar
from urllib.parse import quote, urlencode

from .errors import MissingExtra

try:
    import httpx
except ImportError as missing:  # the core library has no dependencies; the client has one
    raise MissingExtra("branchmem.AsyncClient", "client", missing.name) from missing

from ._core.validation import Keep, check_id
from .api.codec import decode, encode_argument
from .api.operations import Operation, binder, operations
from .api.protocol import MemoryAPI, takes_declared_docs
from .client import (
    PAGE,
    SHAPE_ERRORS,
    NotABranchmemService,
    healthz_version,
    is_problem,
    loads,
    query_value,
    url_segment,
)
from .errors import BranchmemError, InvalidInput, ServiceError, Unavailable, problem_class
from .model import MODES, Explanation

if TYPE_CHECKING:
    from .importers import ImportPlan, ImportSummary, ProgressCallback

DEFAULT_NAMESPACE: Final = "default"

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Request:
    """One API call as the wire carries it (before the worker's URL is put in front)."""

    verb: str
    path: str
    query: dict[str, Any]
    body: dict[str, Any] | None
    repeatable: bool
    page: bool


def prepare(op: Operation, arguments: Mapping[str, Any], mode: str | None) -> Request:
    """The request for one operation of the table: the path from its path parameters, the
    rest as the query string (GET) or JSON body (POST); ``mode`` fills an unset ``mode``."""
    values = dict(arguments)
    namespace = check_id(values.pop("namespace"), "namespace")
    if "mode" in values and values["mode"] is None:
        values["mode"] = mode
    segments = {p.name: url_segment(check_id(values.pop(p.name), p.name)) for p in op.where("path")}
    path = f"/v1/ns/{url_segment(namespace)}" + op.path.format(**segments)
    if op.verb == "GET":
        query = {p.name: query_value(op, p.name, p.hint, values[p.name]) for p in op.where("query")}
        return Request("GET", path, query, None, True, op.page)
    body = {
        name: encode_argument(value)
        for name, value in values.items()
        if not isinstance(value, Keep)  # left out: the server's method default
    }
    repeatable = op.repeatable and not body.get("supersedes")
    return Request(op.verb, path, {}, body, repeatable, False)


def remote(
    declared: Callable[Concatenate[MemoryAPI, P], R],
) -> Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, R]]:
    """An ``AsyncClient`` method for an API method: same signature and docstring, sent by
    the operation table's route and decoded by the codec."""
    name = declared.__name__
    bind = binder(declared)

    @functools.wraps(declared)
    async def call(self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
        arguments = bind(args, kwargs)
        op = operations()[name]
        data = await self._call(op, arguments)
        async with self._reading():
            result: R = decode(op.result, data)
        return result

    return call


@takes_declared_docs
class AsyncClient:
    """A remote ``Memory`` for one event loop; ``await client.close()`` when done."""

    def __init__(
        self,
        url: str | Sequence[str],
        api_key: str | None = None,
        *,
        mode: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        transport: httpx.AsyncBaseTransport | None = None,
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
        self._http = httpx.AsyncClient(headers=headers, timeout=timeout, transport=transport)
        self._next = itertools.cycle(range(len(self.urls)))
        self._preferred = 0
        self.failovers = 0  # requests answered by another worker than the one first tried
        self._services: set[int] = set()  # workers whose /healthz named a version

    # -- lifecycle ---------------------------------------------------------------------
    async def close(self) -> None:
        await self._http.aclose()

    aclose = close  # the name contextlib.aclosing and httpx use

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- transport ---------------------------------------------------------------------
    async def _request(
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
        """Send to the preferred worker, failing over to the others; decode or raise.
        (A single event loop runs this, so the worker bookkeeping needs no lock.)"""
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
            index = self._preferred if attempt == 0 else next(self._next)
            try:
                response = await self._http.request(
                    method, self.urls[index] + target, content=content, headers=headers
                )
            except (httpx.ConnectError, httpx.ConnectTimeout) as error:
                last = error  # never reached the server: safe to send elsewhere
                continue
            except httpx.TransportError as error:
                if not repeatable:
                    raise Unavailable(
                        f"{method} {path}: the connection to {self.urls[index]} failed after "
                        f"the request was sent ({error}); it may or may not have been applied"
                    ) from error
                last = error
                continue
            status, answer = response.status_code, response.content
            if status in (502, 503, 504) and repeatable:
                last = self._problem(status, answer)
                continue
            if attempt > 0:
                self.failovers += 1
            self._preferred = index
            return await self._decode(status, answer, index)
        raise Unavailable(f"{method} {path}: no worker answered ({last})") from last

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

    async def _decode(self, status: int, answer: bytes, index: int) -> Any:
        if status >= 400:
            if not is_problem(answer):  # a page no worker writes: is this branchmem at all?
                await self._check_service(index)
            raise self._problem(status, answer)
        if status == 204:
            return None
        try:
            return loads(answer)
        except ValueError as error:
            await self._check_service(index)
            raise ServiceError(f"{self.urls[index]}: the answer is not JSON ({error})") from error

    async def _check_service(self, index: int) -> None:
        """``Client._check_service``: ``NotABranchmemService`` unless ``GET /healthz`` at
        worker ``index`` names a version."""
        if index in self._services:
            return
        try:
            response = await self._http.get(self.urls[index] + "/healthz")
        except httpx.TransportError:
            return  # gone meanwhile: the answer's own error says more than a guess
        said = healthz_version(response.status_code, response.content)
        if said is not None:
            raise NotABranchmemService(self.urls[index], said)
        self._services.add(index)

    @contextlib.asynccontextmanager
    async def _reading(self) -> AsyncIterator[None]:
        """Reading an answer into the API's values: a shape no worker writes asks whether
        the worker that answered is branchmem at all."""
        try:
            yield
        except BranchmemError:
            raise
        except SHAPE_ERRORS:
            await self._check_service(self._preferred)
            raise

    async def _pages(self, path: str, params: Mapping[str, Any]) -> AsyncIterator[Any]:
        query = dict(params)
        query["limit"] = PAGE
        while True:
            data = await self._request("GET", path, params=query)
            async with self._reading():
                items, cursor = data["items"], data.get("next_cursor")
            for item in items:
                yield item
            if not cursor:
                return
            query["cursor"] = cursor

    async def _call(self, op: Operation, arguments: Mapping[str, Any]) -> Any:
        """One operation of the table, sent; its JSON answer (out of its envelope)."""
        request = prepare(op, arguments, self.mode)
        data: Any
        if request.page:
            data = [item async for item in self._pages(request.path, request.query)]
        else:
            data = await self._request(
                request.verb, request.path, params=request.query, body=request.body,
                repeatable=request.repeatable,
            )  # fmt: skip
        async with self._reading():
            return data[op.envelope] if op.envelope is not None else data

    def _ns(self, namespace: str) -> str:
        return f"/v1/ns/{url_segment(check_id(namespace, 'namespace'))}"

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

    async def is_visible(self, record_id: str, anchor: str | None, **options: Any) -> bool:
        return (await self.explain(record_id, anchor, **options)).visible

    async def namespaces(self) -> list[str]:
        answer = await self._request("GET", "/v1/namespaces")
        async with self._reading():
            names: list[str] = answer["namespaces"]
        return names

    # -- what only the clients have ----------------------------------------------------
    async def import_(
        self,
        plan: ImportPlan,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        progress: ProgressCallback | None = None,
    ) -> ImportSummary:
        # the plan is walked on a worker thread; each call it makes is sent from this loop
        loop = asyncio.get_running_loop()
        blocking = _Blocking(self, loop)
        return await asyncio.to_thread(
            plan.apply,
            blocking,  # type: ignore[arg-type]
            namespace=namespace,
            progress=progress,
        )

    async def import_file(
        self,
        path: str,
        *,
        format: str = "auto",
        namespace: str = DEFAULT_NAMESPACE,
    ) -> ImportSummary:
        """Upload an export file; the server parses and applies it (``branchmem import``)."""
        from .importers import ImportSummary

        source = Path(path)
        content = await asyncio.to_thread(source.read_bytes)
        data = await self._request(
            "POST",
            self._ns(namespace) + "/import",
            params={"format": format, "filename": source.name},
            content=content,
            headers={"Content-Type": "application/octet-stream"},
        )
        async with self._reading():
            data["source"] = str(source)
            summary: ImportSummary = decode(ImportSummary, data)
        return summary

    async def explanations(
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
        views = await self.record_views(
            anchor, cross_tree=cross_tree, mode=mode, include_superseded=include_superseded,
            include_stale=include_stale, as_of=as_of, namespace=namespace,
        )  # fmt: skip
        return [view.explanation for view in views]


class _Blocking:
    """The client's methods as blocking calls, for code on another thread (an import plan)
    that needs a synchronous ``Memory``: each call is sent from the client's own loop."""

    def __init__(self, client: AsyncClient, loop: asyncio.AbstractEventLoop) -> None:
        self._client = client
        self._loop = loop

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._client, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return asyncio.run_coroutine_threadsafe(method(*args, **kwargs), self._loop).result()

        return call
