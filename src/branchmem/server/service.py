"""The routes that are not ``Memory`` methods: health, who am I, the explorer, uploads."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any, Final

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, RedirectResponse
from pydantic import BaseModel

from .. import __version__
from ..api.codec import encode
from ..errors import InvalidInput
from ..importers.limits import ImportLimits
from ..importers.plan import ImportSummary
from . import explorer
from .auth import ApiKey, Caller, IdParam, NamespaceParam
from .problems import Refusal
from .routes import CursorQuery, Grant, LimitQuery, acting, page
from .schemas import (
    MAX_ID,
    Mode,
    Page,
    RecordView,
    TreeOut,
    TreeSummary,
    WhoAmI,
    response_type,
)

STATIC: Final = Path(__file__).parent / "static"
IMPORT_SUFFIXES: Final = (".json", ".jsonl", ".zip")
AnchorQuery = Annotated[
    str | None,
    Query(min_length=1, max_length=MAX_ID, description="event id; omitted: no anchor"),
]

pages = APIRouter()
namespaced = APIRouter(prefix="/v1/ns/{namespace}")


@pages.get("/healthz", tags=["service"])
def healthz() -> dict[str, str]:
    """Liveness for load balancers: answers without a key, touches no data."""
    return {"status": "ok", "version": __version__}


@pages.get("/", include_in_schema=False)
def root() -> RedirectResponse:
    return RedirectResponse("/ui")


@pages.get("/ui", include_in_schema=False)
def ui() -> FileResponse:
    return FileResponse(STATIC / "ui.html", media_type="text/html")


@pages.get("/ui/{asset}", include_in_schema=False)
def ui_asset(asset: str) -> FileResponse:
    allowed = {"ui.js": "text/javascript", "ui.css": "text/css"}
    if asset not in allowed:
        raise Refusal("not_found", f"no UI asset {asset!r}")
    return FileResponse(STATIC / asset, media_type=allowed[asset])


@pages.get("/v1/whoami", response_model=WhoAmI, tags=["service"])
def whoami(grant: Caller) -> dict[str, Any]:
    """The key's tenant and namespace bindings (``prefix*`` covers a prefix)."""
    if grant is None:
        return {"key_id": None, "tenant": None, "namespaces": ["*"]}
    return {"key_id": grant.key_id, "tenant": grant.tenant, "namespaces": grant.namespaces}


class NamespacesOut(BaseModel):
    namespaces: list[str]


@pages.get("/v1/namespaces", response_model=NamespacesOut, tags=["service"])
def namespaces(request: Request, grant: Caller) -> dict[str, Any]:
    """``Memory.namespaces``: the namespaces holding data that this key may read."""
    names = request.app.state.memory.namespaces()
    if grant is not None:
        names = [name for name in names if grant.allows(name)]
    return {"namespaces": names}


@namespaced.post(
    "/import",
    response_model=response_type(ImportSummary),
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
) -> Any:
    """``branchmem import``: a chat export (JSON, JSONL or .zip) as event trees."""
    from starlette.concurrency import run_in_threadpool

    body = await request.body()
    suffix = Path(filename).suffix.lower()
    suffix = suffix if suffix in IMPORT_SUFFIXES else ".json"
    memory = request.app.state.memory
    limits = request.app.state.limits.for_imports()
    return await run_in_threadpool(
        import_bytes, memory, body, suffix, format, namespace, grant, limits
    )


def import_bytes(
    memory: Any,
    body: bytes,
    suffix: str,
    format: str,
    namespace: str,
    grant: ApiKey | None,
    limits: ImportLimits,
) -> Any:
    from ..importers import import_file

    if not body:
        raise InvalidInput("the import body is empty: send the export file's bytes")
    with tempfile.TemporaryDirectory(prefix="branchmem-import-") as folder:
        path = os.path.join(folder, "export" + suffix)
        with open(path, "wb") as handle:
            handle.write(body)
        with acting(memory, grant) if grant is not None else contextlib.nullcontext():
            summary = import_file(path, memory, format=format, namespace=namespace, limits=limits)
    out = encode(summary)
    out["source"] = "upload" + suffix
    return out


# -- the explorer (/ui) ------------------------------------------------------------------------
@namespaced.get("/trees", response_model=Page[TreeSummary], tags=["explorer"])
def trees(
    namespace: NamespaceParam,
    request: Request,
    grant: Grant,
    limit: LimitQuery = 100,
    cursor: CursorQuery = None,
) -> dict[str, Any]:
    """Conversations of the namespace: each tree's roots, size and head."""
    return page(explorer.trees(request.app.state.memory, namespace), limit, cursor)


@namespaced.get("/trees/{tree}", response_model=TreeOut, tags=["explorer"])
def tree(namespace: NamespaceParam, tree: IdParam, request: Request, grant: Grant) -> Any:
    """One conversation's events (attached ones, in arrival order) and its head."""
    return explorer.tree(request.app.state.memory, namespace, tree)


@namespaced.get("/explanations", response_model=Page[RecordView], tags=["explorer"])
def explanations(
    namespace: NamespaceParam,
    request: Request,
    grant: Grant,
    anchor: AnchorQuery = None,
    cross_tree: bool = False,
    mode: Mode | None = None,
    include_superseded: bool = False,
    include_stale: bool = False,
    tree: Annotated[str | None, Query(max_length=MAX_ID)] = None,
    limit: LimitQuery = 1000,
    cursor: CursorQuery = None,
) -> dict[str, Any]:
    """Every record of the namespace decided at the anchor, with the reason for each;
    with ``tree``, only the records built from that conversation, their sources in it."""
    views = explorer.record_views(
        request.app.state.memory, namespace, anchor, cross_tree=cross_tree, mode=mode,
        include_superseded=include_superseded, include_stale=include_stale, tree=tree,
    )  # fmt: skip
    return page(views, limit, cursor)
