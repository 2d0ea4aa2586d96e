"""Errors as ``application/problem+json`` (RFC 9457), one ``code`` per error class.

The ``code`` is the ``.code`` of the ``branchmem.errors`` class the library raised and the
status its ``.status``, so a client in any language can branch on it and ``branchmem.Client``
re-raises the very same class. The service's own refusals are classes of that module too
(``unauthorized``, ``forbidden``, ``too_large``, ``malformed``, ``method_not_allowed``,
``unsupported_media_type``, ``not_implemented``, and ``internal``: a bug, logged, never
detailed to the caller); ``Refusal`` raises one by its code.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from ..errors import PROBLEMS, BranchmemError, ErasedError, NotFoundError

PROBLEM_TYPE: Final = "application/problem+json"
TYPE_BASE: Final = "https://branchmem.dev/problems/"

# one status per code, read from the error classes (``branchmem.errors.PROBLEMS``)
STATUS: Final[dict[str, int]] = {code: cls.status for code, cls in PROBLEMS.items()}

log = logging.getLogger("branchmem.server")


class Refusal(Exception):
    """A refusal decided by the service itself (auth, limits), raised inside handlers."""

    def __init__(self, code: str, detail: str) -> None:
        if code not in STATUS:  # a typo here would reach clients as an unknown problem
            raise ValueError(f"refusal code {code!r} is not declared in branchmem.errors")
        super().__init__(detail)
        self.code = code
        self.detail = detail


def problem(
    code: str,
    detail: str,
    *,
    status: int | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    """A problem response; ``status`` defaults to the code's status."""
    status = status if status is not None else STATUS.get(code, 400)
    body: dict[str, Any] = {
        "type": TYPE_BASE + code,
        "title": code.replace("_", " "),
        "status": status,
        "detail": detail,
        "code": code,
        **extra,
    }
    headers = dict(headers or {})
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="branchmem"'
    return JSONResponse(body, status_code=status, media_type=PROBLEM_TYPE, headers=headers)


def library_problem(error: BranchmemError) -> JSONResponse:
    """The problem for an error the library raised, under its own ``code``."""
    if isinstance(error, NotFoundError | ErasedError):
        detail = str(error)
    else:
        detail = str(error) or type(error).__name__
    return problem(error.code, detail, status=error.status)


def _validation_detail(error: RequestValidationError) -> str:
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(part) for part in item.get("loc", ()) if part != "body") or "body"
        parts.append(f"{where}: {item.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def allowed_methods(request: Request) -> list[str]:
    """The methods some route of the app serves at the request's path."""
    methods: set[str] = set()
    for route in request.app.routes:
        match, _ = route.matches({**request.scope, "method": "GET"})
        if match != Match.NONE:
            methods.update(getattr(route, "methods", None) or ())
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


def install(app: FastAPI) -> None:
    """Route every error the app can raise through ``problem``."""

    @app.exception_handler(BranchmemError)
    async def library_error(request: Request, error: BranchmemError) -> JSONResponse:
        return library_problem(error)

    @app.exception_handler(Refusal)
    async def service_error(request: Request, error: Refusal) -> JSONResponse:
        return problem(error.code, error.detail)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> JSONResponse:
        malformed = any(item.get("type") == "json_invalid" for item in error.errors())
        if malformed:
            return problem("malformed", "the request body is not valid JSON", status=400)
        return problem("invalid_input", _validation_detail(error))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(
            error.status_code, "invalid_input" if error.status_code < 500 else "internal"
        )
        headers = dict(error.headers or {})
        if error.status_code == 405:  # every route of the path, not only the first matched
            headers["Allow"] = ", ".join(allowed_methods(request))
        return problem(code, str(error.detail), status=error.status_code, headers=headers)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, error: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem("internal", "internal error; the server log has the details")
