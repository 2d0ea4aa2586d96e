"""The routes that are not ``Memory`` methods: health, who am I, the explorer page, uploads."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Final

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, RedirectResponse
from pydantic import BaseModel

from .. import __version__
from ..api.codec import encode
from ..errors import BranchmemError, InvalidInput
from ..importers.limits import ImportLimits
from ..importers.plan import ImportSummary
from .auth import ApiKey, Caller, NamespaceParam
from .problems import Refusal
from .routes import Grant, acting
from .schemas import (
    WhoAmI,
    response_type,
)

STATIC: Final = Path(__file__).parent / "static"
IMPORT_SUFFIXES: Final = (".json", ".jsonl", ".zip")

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
        import_bytes, memory, body, suffix, format, namespace, grant, limits, filename
    )


def import_bytes(
    memory: Any,
    body: bytes,
    suffix: str,
    format: str,
    namespace: str,
    grant: ApiKey | None,
    limits: ImportLimits,
    filename: str = "export.json",
) -> Any:
    """Import the uploaded bytes through a temporary file; what the import says (its
    errors, its summary's ``source``) names the upload by ``filename``, the name the client
    gave it, never the server's temporary path."""
    from ..importers import import_file

    if not body:
        raise InvalidInput("the import body is empty: send the export file's bytes")
    with tempfile.TemporaryDirectory(prefix="branchmem-import-") as folder:
        path = os.path.join(folder, "export" + suffix)
        with open(path, "wb") as handle:
            handle.write(body)
        try:
            with acting(memory, grant) if grant is not None else contextlib.nullcontext():
                summary = import_file(
                    path, memory, format=format, namespace=namespace, limits=limits
                )
        except BranchmemError as error:
            raise renamed(error, {path: filename, folder: "(upload)"}) from None
    out = encode(summary)
    out["source"] = filename
    return out


def renamed(error: BranchmemError, names: Mapping[str, str]) -> BranchmemError:
    """``error`` with each temporary path in its message (and in an ``ImportFormatError``'s
    ``reason``) replaced by what it stands for."""

    def swap(text: str) -> str:
        for temporary, name in names.items():
            text = text.replace(temporary, name)
        return text

    error.args = tuple(swap(arg) if isinstance(arg, str) else arg for arg in error.args)
    reason = getattr(error, "reason", None)
    if isinstance(reason, str):
        error.reason = swap(reason)  # type: ignore[attr-defined]
    return error
