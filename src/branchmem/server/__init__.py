"""The branchmem service: the Python API over HTTP, with per-tenant API keys.

``create_app(memory)`` builds the FastAPI app; ``branchmem serve --db URL`` runs it on
uvicorn. Several workers may serve one PostgreSQL store. ``branchmem.Client`` speaks to it.
Names are imported on first use, so ``server.keys`` and ``server.explorer`` (used by the
CLI on a local store) do not need FastAPI installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app
    from .guard import Limits
    from .keys import ApiKey, KeyRing

__all__ = ["ApiKey", "KeyRing", "Limits", "create_app"]

_HOMES = {"create_app": "app", "Limits": "guard", "ApiKey": "keys", "KeyRing": "keys"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    if name == "create_app":
        from ..errors import require

        for module in ("fastapi", "orjson"):
            require(module, "the service (branchmem.server)", "server")
    return getattr(import_module(f".{_HOMES[name]}", __name__), name)
