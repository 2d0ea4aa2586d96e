"""The HTTP API: one route per ``Memory`` method, under ``/v1/ns/{namespace}/``.

Every route resolves the caller's API key first and refuses a namespace the key is not bound
to with 403 *before* looking at the namespace, so a refusal says nothing about what exists.
Mutations run inside ``memory.acting_as("key:<id>")``: the audit log names the key. Lists are
paged (``limit``, ``cursor`` -> ``next_cursor``); errors are problem documents
(``problems.py``); sizes and text are checked before routing (``guard.py``).
"""

import base64
import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Final, TypeVar
from urllib.parse import unquote

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, RedirectResponse
from pydantic import AfterValidator

from .. import __version__
from ..audit import AuditEntry
from ..errors import InvalidInput
from ..memory import Memory
from ..model import Event, Explanation, Record
from . import explorer
from .docs import install_offline_docs
from .guard import Guard, Limits
from .keys import ApiKey, KeyRing
from .problems import PROBLEM_TYPE, Refusal, install
from .schemas import (
    MAX_ID,
    AuditEntryOut,
    ContextIn,
    ContextOut,
    ConversationOut,
    DeliveryOut,
    ErasedOut,
    EventIn,
    EventOut,
    EventsIn,
    ExplanationOut,
    HeadIn,
    HeadOut,
    HeadsOut,
    HistoryEntryOut,
    HitOut,
    IdsOut,
    ImportOut,
    Mode,
    Page,
    Problem,
    ReasonIn,
    RecordIn,
    RecordOut,
    RecordView,
    RepairItemOut,
    RetractIn,
    ReviseIn,
    StaleDeliveryOut,
    SupersedeIn,
    TreeOut,
    TreeSummary,
    WhoAmI,
)

STATIC: Final = Path(__file__).parent / "static"
DEFAULT_LIMIT: Final = 100
MAX_LIMIT: Final = 1000
IMPORT_SUFFIXES: Final = (".json", ".jsonl", ".zip")

T = TypeVar("T")

_problem_doc = {"model": Problem, "content": {PROBLEM_TYPE: {}}}
PROBLEMS: Final[dict[int | str, dict[str, Any]]] = {
    status: {**_problem_doc, "description": description}
    for status, description in {
        400: "malformed request",
        401: "missing or unknown API key",
        403: "the key is not bound to this namespace",
        404: "no such event or record",
        409: "conflict or cycle",
        410: "erased",
        413: "request too large",
        422: "invalid input",
        501: "not available on this server",
        503: "storage unavailable",
    }.items()
}


def path_segment(value: str) -> str:
    """One path segment as sent (the router sees raw segments), percent-decoded once."""
    decoded = unquote(value, errors="strict")
    if not decoded:
        raise ValueError("must not be empty")
    return decoded


NamespaceParam = Annotated[
    str,
    PathParam(min_length=1, max_length=3 * MAX_ID, description="the namespace (isolation unit)"),
    AfterValidator(path_segment),
]
IdParam = Annotated[
    str, PathParam(min_length=1, max_length=3 * MAX_ID), AfterValidator(path_segment)
]
AnchorQuery = Annotated[
    str | None,
    Query(min_length=1, max_length=MAX_ID, description="event id; omitted: no anchor"),
]
OptionalText = Annotated[str | None, Query(max_length=MAX_ID)]
LimitQuery = Annotated[int, Query(ge=1, le=MAX_LIMIT)]
CursorQuery = Annotated[str | None, Query(max_length=64)]


# -- conversions -----------------------------------------------------------------------------
def event_out(event: Event) -> dict[str, Any]:
    return dataclasses.asdict(event)


def record_out(record: Record) -> dict[str, Any]:
    out = dataclasses.asdict(record)
    out["sources"] = None if record.sources is None else list(record.sources)
    return out


def explanation_out(explanation: Explanation) -> dict[str, Any]:
    return dataclasses.asdict(explanation)


def audit_out(entry: AuditEntry) -> dict[str, Any]:
    out = dataclasses.asdict(entry)
    out["ids"] = list(entry.ids)
    return out


def plain(value: Any) -> Any:
    """A dataclass (with nested records, tuples) as JSON-ready values."""
    if isinstance(value, Record):
        return record_out(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [plain(item) for item in value]
    return value


# -- paging ------------------------------------------------------------------------------------
def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o{offset}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if raw.startswith("o") and raw[1:].isdigit():
            return int(raw[1:])
    except ValueError:
        pass
    raise InvalidInput(f"cursor {cursor!r} is not one this server handed out")


def page(items: Sequence[T], limit: int, cursor: str | None) -> dict[str, Any]:
    start = decode_cursor(cursor)
    chunk = list(items[start : start + limit])
    more = start + limit < len(items)
    return {"items": chunk, "next_cursor": encode_cursor(start + limit) if more else None}


# -- the app -----------------------------------------------------------------------------------
def create_app(
    memory: Memory,
    *,
    keys: KeyRing | None = None,
    auth: bool = True,
    limits: Limits | None = None,
    local: explorer.LocalSession | None = None,
) -> FastAPI:
    """The service over ``memory``. ``auth=False`` serves without keys (a local, single-user
    server); otherwise every ``/v1`` request needs ``Authorization: Bearer <key>``, or the
    ``local`` session's token for a read (the explorer opened from ``branchmem serve``)."""
    ring = keys if keys is not None else (KeyRing(memory) if auth else None)
    app = FastAPI(
        title="branchmem",
        version=__version__,
        description=(
            "Branch-aware, provenance-gated long-term memory. A derived record is visible at "
            "an anchor only when every source event lies on the anchor's ancestor path. "
            "Errors are application/problem+json; `code` is the branchmem error code."
        ),
        responses=PROBLEMS,
        docs_url=None,  # /docs and /redoc: served from local assets by install_offline_docs
        redoc_url=None,
    )
    install_offline_docs(app)
    install(app)
    app.add_middleware(Guard, limits=limits or Limits())
    app.state.memory = memory

    def caller(request: Request) -> ApiKey | None:
        if ring is None:
            return None
        header = request.headers.get("authorization", "")
        scheme, _, presented = header.partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            raise Refusal("unauthorized", "an API key is required: Authorization: Bearer")
        if local is not None and local.admits(request.method, presented.strip()):
            return local.grant
        grant = ring.verify(presented.strip())
        if grant is None:
            raise Refusal("unauthorized", "the API key is not valid")
        return grant

    Caller = Annotated[ApiKey | None, Depends(caller)]

    def access(namespace: NamespaceParam, grant: Caller) -> ApiKey | None:
        if grant is not None and not grant.allows(namespace):
            raise Refusal("forbidden", f"this key is not bound to namespace {namespace!r}")
        return grant

    Grant = Annotated[ApiKey | None, Depends(access)]

    @contextlib.contextmanager
    def acting(grant: ApiKey | None) -> Iterator[None]:
        acting_as = getattr(memory, "acting_as", None)
        if grant is None or acting_as is None:
            yield
            return
        with acting_as(grant.actor):
            yield

    def api(name: str) -> Any:
        method = getattr(memory, name, None)
        if method is None:
            raise Refusal("not_implemented", f"this server's branchmem has no {name}()")
        return method

    @app.get("/healthz", tags=["service"], include_in_schema=True)
    def healthz() -> dict[str, str]:
        """Liveness for load balancers: answers without a key, touches no data."""
        return {"status": "ok", "version": __version__}

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/ui")

    @app.get("/ui", include_in_schema=False)
    def ui() -> FileResponse:
        return FileResponse(STATIC / "ui.html", media_type="text/html")

    @app.get("/ui/{asset}", include_in_schema=False)
    def ui_asset(asset: str) -> FileResponse:
        allowed = {"ui.js": "text/javascript", "ui.css": "text/css"}
        if asset not in allowed:
            raise Refusal("not_found", f"no UI asset {asset!r}")
        return FileResponse(STATIC / asset, media_type=allowed[asset])

    @app.get("/v1/whoami", response_model=WhoAmI, tags=["service"])
    def whoami(grant: Caller) -> dict[str, Any]:
        """The key's tenant and namespace bindings (``prefix*`` covers a prefix)."""
        if grant is None:
            return {"key_id": None, "tenant": None, "namespaces": ["*"]}
        return {"key_id": grant.key_id, "tenant": grant.tenant, "namespaces": grant.namespaces}

    v1 = APIRouter(prefix="/v1/ns/{namespace}")

    # -- events --------------------------------------------------------------------------------
    @v1.post("/events", response_model=EventOut, tags=["events"])
    def add_event(namespace: NamespaceParam, body: EventIn, grant: Grant) -> dict[str, Any]:
        """``Memory.add_event``: one event; a child may arrive before its parent."""
        with acting(grant):
            event = memory.add_event(
                body.id, body.parent, tree=body.tree, role=body.role, content=body.content,
                meta=body.meta, ts=body.ts, namespace=namespace,
            )  # fmt: skip
        return event_out(event)

    @v1.post("/events/batch", response_model=list[EventOut], tags=["events"])
    def add_events(namespace: NamespaceParam, body: EventsIn, grant: Grant) -> list[Any]:
        """``Memory.add_events``: many events, all or nothing, in any order."""
        specs = [item.model_dump() for item in body.events]
        with acting(grant):
            events = memory.add_events(specs, namespace=namespace)
        return [event_out(e) for e in events]

    @v1.get("/events/{event_id}", response_model=EventOut, tags=["events"])
    def get_event(namespace: NamespaceParam, event_id: IdParam, grant: Grant) -> dict[str, Any]:
        return event_out(memory.get_event(event_id, namespace=namespace))

    @v1.get("/events/{event_id}/path", response_model=Page[EventOut], tags=["events"])
    def path(
        namespace: NamespaceParam,
        event_id: IdParam,
        grant: Grant,
        limit: LimitQuery = MAX_LIMIT,
        cursor: CursorQuery = None,
    ) -> dict[str, Any]:
        """``Memory.path``: root (or the gap) down to the event."""
        events = [event_out(e) for e in memory.path(event_id, namespace=namespace)]
        return page(events, limit, cursor)

    @v1.get("/heads", response_model=HeadsOut, tags=["events"])
    def heads(namespace: NamespaceParam, grant: Grant) -> dict[str, Any]:
        return {"heads": memory.heads(namespace=namespace)}

    @v1.get("/heads/{tree}", response_model=HeadOut, tags=["events"])
    def head(namespace: NamespaceParam, tree: IdParam, grant: Grant) -> dict[str, Any]:
        return {"tree": tree, "head": memory.head(tree, namespace=namespace)}

    @v1.post("/heads", response_model=HeadOut, tags=["events"])
    def set_head(namespace: NamespaceParam, body: HeadIn, grant: Grant) -> dict[str, Any]:
        """``Memory.set_head``: the event becomes its tree's current node."""
        with acting(grant):
            memory.set_head(body.event, namespace=namespace)
        tree = memory.get_event(body.event, namespace=namespace).tree
        return {"tree": tree, "head": body.event}

    # -- records -------------------------------------------------------------------------------
    @v1.post("/records", response_model=RecordOut, tags=["records"])
    def add_record(namespace: NamespaceParam, body: RecordIn, grant: Grant) -> dict[str, Any]:
        """``Memory.add_record``: a derived memory built from ``sources`` (null: legacy)."""
        with acting(grant):
            record = memory.add_record(
                body.id, sources=body.sources, content=body.content, kind=body.kind,
                key=body.key, scope=body.scope, meta=body.meta, supersedes=body.supersedes,
                namespace=namespace,
            )  # fmt: skip
        return record_out(record)

    @v1.get("/records/{record_id}", response_model=RecordOut, tags=["records"])
    def get_record(
        namespace: NamespaceParam,
        record_id: IdParam,
        grant: Grant,
        revision: Annotated[int | None, Query(ge=1)] = None,
    ) -> dict[str, Any]:
        return record_out(memory.get_record(record_id, revision=revision, namespace=namespace))

    @v1.post("/records/{record_id}/revisions", response_model=RecordOut, tags=["records"])
    def revise(
        namespace: NamespaceParam, record_id: IdParam, body: ReviseIn, grant: Grant
    ) -> dict[str, Any]:
        """``Memory.revise``: a new revision under the same id, with its own sources."""
        with acting(grant):
            record = memory.revise(
                record_id, content=body.content, sources=body.sources, meta=body.meta,
                namespace=namespace,
            )  # fmt: skip
        return record_out(record)

    @v1.get("/records/{record_id}/explain", response_model=ExplanationOut, tags=["views"])
    def explain(
        namespace: NamespaceParam,
        record_id: IdParam,
        grant: Grant,
        anchor: AnchorQuery = None,
        cross_tree: bool = False,
        mode: Mode | None = None,
        include_superseded: bool = False,
        include_stale: bool = False,
    ) -> dict[str, Any]:
        """``Memory.explain``: the decision, its reason, the offending source and fork."""
        return explanation_out(
            memory.explain(
                record_id, anchor, cross_tree=cross_tree, mode=mode,
                include_superseded=include_superseded, include_stale=include_stale,
                namespace=namespace,
            )
        )  # fmt: skip

    @v1.get("/records/{record_id}/history", response_model=Page[HistoryEntryOut], tags=["audit"])
    def history(
        namespace: NamespaceParam,
        record_id: IdParam,
        grant: Grant,
        limit: LimitQuery = DEFAULT_LIMIT,
        cursor: CursorQuery = None,
    ) -> dict[str, Any]:
        return page(memory.history(record_id, namespace=namespace), limit, cursor)

    # -- views ---------------------------------------------------------------------------------
    @v1.get("/visible", response_model=Page[RecordOut], tags=["views"])
    def visible(
        namespace: NamespaceParam,
        grant: Grant,
        anchor: AnchorQuery = None,
        kind: OptionalText = None,
        key: OptionalText = None,
        scope: OptionalText = None,
        cross_tree: bool = False,
        mode: Mode | None = None,
        include_superseded: bool = False,
        include_stale: bool = False,
        limit: LimitQuery = DEFAULT_LIMIT,
        cursor: CursorQuery = None,
    ) -> dict[str, Any]:
        """``Memory.visible``: records visible at the anchor, in path order."""
        records = memory.visible(
            anchor, kind=kind, key=key, scope=scope, cross_tree=cross_tree, mode=mode,
            include_superseded=include_superseded, include_stale=include_stale,
            namespace=namespace,
        )  # fmt: skip
        return page([record_out(r) for r in records], limit, cursor)

    @v1.get("/current", response_model=RecordOut | None, tags=["views"])
    def current(
        namespace: NamespaceParam,
        grant: Grant,
        key: Annotated[str, Query(min_length=1, max_length=MAX_ID)],
        anchor: AnchorQuery = None,
        scope: OptionalText = None,
        cross_tree: bool = False,
        mode: Mode | None = None,
    ) -> dict[str, Any] | None:
        """``Memory.current``: the value of ``(scope, key)`` at the anchor, or null."""
        record = memory.current(
            key, anchor, scope=scope, cross_tree=cross_tree, mode=mode, namespace=namespace
        )
        return None if record is None else record_out(record)

    @v1.get("/stale", response_model=Page[RecordOut], tags=["views"])
    def stale(
        namespace: NamespaceParam,
        grant: Grant,
        anchor: AnchorQuery = None,
        cross_tree: bool = False,
        mode: Mode | None = None,
        include_superseded: bool = False,
        limit: LimitQuery = DEFAULT_LIMIT,
        cursor: CursorQuery = None,
    ) -> dict[str, Any]:
        """``Memory.stale``: hidden only because something they were built on changed."""
        records = memory.stale(
            anchor, cross_tree=cross_tree, mode=mode, include_superseded=include_superseded,
            namespace=namespace,
        )  # fmt: skip
        return page([record_out(r) for r in records], limit, cursor)

    @v1.get("/search", response_model=list[HitOut], tags=["retrieval"])
    def search(
        namespace: NamespaceParam,
        grant: Grant,
        query: Annotated[str, Query(max_length=10_000)],
        anchor: AnchorQuery = None,
        k: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 10,
        kind: OptionalText = None,
        key: OptionalText = None,
        scope: OptionalText = None,
        cross_tree: bool = False,
        mode: Mode | None = None,
    ) -> list[Any]:
        """``Memory.search``: best-first hits among the records visible at the anchor."""
        hits = api("search")(
            query, anchor, k=k, kind=kind, key=key, scope=scope, cross_tree=cross_tree,
            mode=mode, namespace=namespace,
        )  # fmt: skip
        return [plain(hit) for hit in hits]

    @v1.post("/context", response_model=ContextOut, tags=["retrieval"])
    def context(namespace: NamespaceParam, body: ContextIn, grant: Grant) -> Any:
        """``Memory.context``: prompt text within the budget; with ``session``, remembered."""
        with acting(grant):
            built = api("context")(
                body.anchor, query=body.query, budget=body.budget, session=body.session,
                cross_tree=body.cross_tree, mode=body.mode, namespace=namespace,
            )  # fmt: skip
        return plain(built)

    # -- invalidation and corrections ---------------------------------------------------------
    @v1.post("/supersede", response_model=IdsOut, tags=["corrections"])
    def supersede(namespace: NamespaceParam, body: SupersedeIn, grant: Grant) -> dict[str, Any]:
        """``Memory.supersede``: ``new_id`` replaces ``old_id`` wherever it is visible."""
        with acting(grant):
            memory.supersede(body.new_id, body.old_id, namespace=namespace)
        return {"ids": [body.new_id, body.old_id]}

    @v1.post("/retractions", response_model=RecordOut, tags=["corrections"])
    def retract(namespace: NamespaceParam, body: RetractIn, grant: Grant) -> dict[str, Any]:
        """``Memory.retract``: a retraction record, acting where it is itself visible."""
        with acting(grant):
            record = memory.retract(
                body.id, sources=body.sources, targets=body.targets, key=body.key,
                key_scope=body.key_scope, scope=body.scope, reason=body.reason,
                namespace=namespace,
            )  # fmt: skip
        return record_out(record)

    @v1.post("/items/{item_id}/withdraw", response_model=IdsOut, tags=["corrections"])
    def withdraw(
        namespace: NamespaceParam, item_id: IdParam, body: ReasonIn, grant: Grant
    ) -> dict[str, Any]:
        """``Memory.withdraw``: out of every view, dependents stale; reversible."""
        with acting(grant):
            memory.withdraw(item_id, reason=body.reason, namespace=namespace)
        return {"ids": [item_id]}

    @v1.post("/items/{item_id}/restore", response_model=IdsOut, tags=["corrections"])
    def restore(namespace: NamespaceParam, item_id: IdParam, grant: Grant) -> dict[str, Any]:
        """``Memory.restore``: undo a withdrawal."""
        with acting(grant):
            memory.restore(item_id, namespace=namespace)
        return {"ids": [item_id]}

    @v1.post("/items/{item_id}/erase", response_model=ErasedOut, tags=["corrections"])
    def erase(
        namespace: NamespaceParam, item_id: IdParam, body: ReasonIn, grant: Grant
    ) -> dict[str, Any]:
        """``Memory.erase``: irreversibly remove the text of the item and its dependents."""
        with acting(grant):
            erased = memory.erase(item_id, reason=body.reason, namespace=namespace)
        return {"erased": sorted(erased)}

    @v1.get("/items/{item_id}/dependents", response_model=Page[str], tags=["corrections"])
    def dependents(
        namespace: NamespaceParam,
        item_id: IdParam,
        grant: Grant,
        limit: LimitQuery = DEFAULT_LIMIT,
        cursor: CursorQuery = None,
    ) -> dict[str, Any]:
        found = sorted(memory.dependents(item_id, namespace=namespace))
        return page(found, limit, cursor)

    # -- deliveries and repair -----------------------------------------------------------------
    @v1.get("/deliveries", response_model=Page[DeliveryOut], tags=["retrieval"])
    def deliveries(
        namespace: NamespaceParam,
        grant: Grant,
        session: Annotated[str, Query(min_length=1, max_length=MAX_ID)],
        limit: LimitQuery = DEFAULT_LIMIT,
        cursor: CursorQuery = None,
    ) -> dict[str, Any]:
        found = api("deliveries")(session, namespace=namespace)
        return page([plain(d) for d in found], limit, cursor)

    @v1.get("/stale-deliveries", response_model=Page[StaleDeliveryOut], tags=["retrieval"])
    def stale_deliveries(
        namespace: NamespaceParam,
        grant: Grant,
        session: Annotated[str, Query(min_length=1, max_length=MAX_ID)],
        anchor: AnchorQuery = None,
        limit: LimitQuery = DEFAULT_LIMIT,
        cursor: CursorQuery = None,
    ) -> dict[str, Any]:
        """``Memory.stale_deliveries``: what a session was given that no longer holds."""
        found = api("stale_deliveries")(session, anchor, namespace=namespace)
        return page([plain(d) for d in found], limit, cursor)

    @v1.get("/repair-queue", response_model=Page[RepairItemOut], tags=["corrections"])
    def repair_queue(
        namespace: NamespaceParam,
        grant: Grant,
        limit: LimitQuery = DEFAULT_LIMIT,
        cursor: CursorQuery = None,
    ) -> dict[str, Any]:
        found = api("repair_queue")(namespace=namespace)
        return page([plain(item) for item in found], limit, cursor)

    # -- reporting -----------------------------------------------------------------------------
    @v1.get("/report", response_model=dict[str, Any], tags=["audit"])
    def report(namespace: NamespaceParam, grant: Grant) -> dict[str, Any]:
        """``Memory.report``: decision counts by reason (this worker's) and store gauges."""
        return memory.report(namespace=namespace)

    @v1.get("/audit", response_model=Page[AuditEntryOut], tags=["audit"])
    def audit(
        namespace: NamespaceParam,
        grant: Grant,
        id: OptionalText = None,
        op: OptionalText = None,
        since: float | None = None,
        until: float | None = None,
        limit: LimitQuery = DEFAULT_LIMIT,
        cursor: CursorQuery = None,
    ) -> dict[str, Any]:
        """``Memory.audit``: mutations in arrival order; ids only, never content."""
        entries = memory.audit(id=id, op=op, since=since, until=until, namespace=namespace)
        return page([audit_out(e) for e in entries], limit, cursor)

    @v1.post(
        "/import",
        response_model=ImportOut,
        tags=["events"],
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
                },
            }
        },
    )
    async def import_export(
        namespace: NamespaceParam,
        request: Request,
        grant: Grant,
        format: Annotated[str, Query(max_length=32)] = "auto",
        filename: Annotated[str, Query(max_length=255)] = "export.json",
    ) -> dict[str, Any]:
        """``branchmem import``: a chat export (JSON, JSONL or .zip) as event trees."""
        from starlette.concurrency import run_in_threadpool

        body = await request.body()
        suffix = Path(filename).suffix.lower()
        suffix = suffix if suffix in IMPORT_SUFFIXES else ".json"
        return await run_in_threadpool(
            _import_bytes, memory, body, suffix, format, namespace, grant
        )

    # -- the explorer (/ui) --------------------------------------------------------------------
    @v1.get("/trees", response_model=Page[TreeSummary], tags=["explorer"])
    def trees(
        namespace: NamespaceParam,
        grant: Grant,
        limit: LimitQuery = DEFAULT_LIMIT,
        cursor: CursorQuery = None,
    ) -> dict[str, Any]:
        """Conversations of the namespace: each tree's roots, size and head."""
        return page(explorer.trees(memory, namespace), limit, cursor)

    @v1.get("/trees/{tree}", response_model=TreeOut, tags=["explorer"])
    def tree(namespace: NamespaceParam, tree: IdParam, grant: Grant) -> dict[str, Any]:
        """One conversation's events (attached ones, in arrival order) and its head."""
        return explorer.tree(memory, namespace, tree)

    @v1.get("/explanations", response_model=Page[RecordView], tags=["explorer"])
    def explanations(
        namespace: NamespaceParam,
        grant: Grant,
        anchor: AnchorQuery = None,
        cross_tree: bool = False,
        mode: Mode | None = None,
        include_superseded: bool = False,
        include_stale: bool = False,
        tree: OptionalText = None,
        limit: LimitQuery = MAX_LIMIT,
        cursor: CursorQuery = None,
    ) -> dict[str, Any]:
        """Every record of the namespace decided at the anchor, with the reason for each;
        with ``tree``, only the records built from that conversation, their sources in it."""
        views = explorer.record_views(
            memory, namespace, anchor, cross_tree=cross_tree, mode=mode,
            include_superseded=include_superseded, include_stale=include_stale, tree=tree,
        )  # fmt: skip
        return page(views, limit, cursor)

    # PROVISIONAL (explorer branch): the API's own conversation listing replaces this route.
    @v1.get("/conversations", response_model=Page[ConversationOut], tags=["explorer"])
    def conversations(
        namespace: NamespaceParam,
        grant: Grant,
        limit: LimitQuery = DEFAULT_LIMIT,
        cursor: CursorQuery = None,
    ) -> dict[str, Any]:
        """Conversations of the namespace, latest activity first: title, root, head, size."""
        return page(explorer.conversations(memory, namespace), limit, cursor)

    app.include_router(v1)
    _document_problems(app)
    return app


def _document_problems(app: FastAPI) -> None:
    """Error responses are documented as problem documents, under their own media type,
    and every ``/v1`` operation as needing the bearer key."""
    from fastapi.openapi.utils import get_openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title, version=app.version, description=app.description,
            routes=app.routes,
        )  # fmt: skip
        problem_ref = {"schema": {"$ref": "#/components/schemas/Problem"}}
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})["apiKey"] = {
            "type": "http",
            "scheme": "bearer",
            "description": "an API key from `branchmem keys create`: bm_<key id>_<secret>",
        }
        for path, operations in schema.get("paths", {}).items():
            for operation in operations.values():
                if path.startswith("/v1/"):
                    operation["security"] = [{"apiKey": []}]
                for status, response in operation.get("responses", {}).items():
                    if status.isdigit() and int(status) >= 400:
                        response["content"] = {PROBLEM_TYPE: problem_ref}
        components.get("schemas", {}).pop("HTTPValidationError", None)
        components.get("schemas", {}).pop("ValidationError", None)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _import_bytes(
    memory: Memory,
    body: bytes,
    suffix: str,
    format: str,
    namespace: str,
    grant: ApiKey | None,
) -> dict[str, Any]:
    from ..importers import import_file

    if not body:
        raise InvalidInput("the import body is empty: send the export file's bytes")
    with tempfile.TemporaryDirectory(prefix="branchmem-import-") as folder:
        path = os.path.join(folder, "export" + suffix)
        with open(path, "wb") as handle:
            handle.write(body)
        acting_as = getattr(memory, "acting_as", None)
        scope = (
            acting_as(grant.actor)
            if grant is not None and acting_as is not None
            else contextlib.nullcontext()
        )
        with scope:
            summary = import_file(path, memory, format=format, namespace=namespace)
    out = dataclasses.asdict(summary)
    out["source"] = "upload" + suffix
    return out
