"""The HTTP API: one route per ``Memory`` method, under ``/v1/ns/{namespace}/``.

Every route resolves the caller's API key first and refuses a namespace the key is not bound
to with 403 *before* looking at the namespace, so a refusal says nothing about what exists
(``auth.py``). Mutations run inside ``memory.acting_as("key:<id>")``: the audit log names the
key. The API routes are built from the operation table (``routes.py``); lists are paged
(``limit``, ``cursor`` -> ``next_cursor``); errors are problem documents (``problems.py``);
sizes and text are checked before routing (``guard.py``); the API's plainly valid reads
are answered without FastAPI's per-request machinery (``direct.py``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

from ..errors import MissingExtra

try:
    from fastapi import FastAPI
except ImportError as missing:  # the core library has no dependencies; the service has some
    raise MissingExtra("the service (branchmem.server)", "server", missing.name) from missing

from .. import __version__
from ..memory import Memory
from .cleanup import FileCleanup
from .direct import DirectReader, DirectReads
from .docs import install_offline_docs
from .explorer import LocalSession
from .guard import Guard, Limits
from .keys import AfterTheAnswer, KeyRing
from .problems import PROBLEM_TYPE, install
from .routes import api_router
from .schemas import Problem
from .service import namespaced, pages

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


def create_app(
    memory: Memory,
    *,
    keys: KeyRing | None = None,
    auth: bool = True,
    limits: Limits | None = None,
    local: LocalSession | None = None,
    direct_reads: bool = True,
) -> FastAPI:
    """The service over ``memory``. ``auth=False`` serves without keys (a local, single-user
    server); otherwise every ``/v1`` request needs ``Authorization: Bearer <key>``.
    ``direct_reads=False`` sends every read through its FastAPI route (``direct.py``: the
    reference the direct path is tested against)."""
    cleanup = FileCleanup(memory)
    app = FastAPI(
        lifespan=cleanup.lifespan,
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
    limits = limits or Limits()
    app.state.direct_reads = Counter[str]()  # reads answered directly, per operation
    if direct_reads:  # added first, so Guard (added last: outermost) checks them before
        reader = DirectReader(app.state, app.state.direct_reads)
        app.add_middleware(DirectReads, reader=reader)
    app.add_middleware(Guard, limits=limits)
    app.state.limits = limits  # the import endpoint derives its decompression limits from them
    app.state.memory = memory
    if keys is None and auth:  # a row refreshed between requests, not beside them
        keys = KeyRing(memory, refresher=AfterTheAnswer(memory))
    app.state.keys = keys
    app.state.local = local  # the explorer's read-only token (branchmem serve, loopback)
    app.state.cleanup = cleanup  # erased bytes a reader pinned (cleanup.py)
    app.include_router(pages)
    app.include_router(api_router())
    app.include_router(namespaced)
    document_problems(app)
    return app


def document_problems(app: FastAPI) -> None:
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
