"""Argument checks shared by the public API: clear errors that name the field."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import InvalidInput
from .model import MODES


def check_id(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{what} must be a non-empty string, got {value!r}")
    return value


def check_optional_str(value: object, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string or None, got {type(value).__name__}")
    return value


def check_meta(meta: object, what: str) -> dict[str, Any]:
    """A JSON object, copied (so a caller's later change cannot reach the store)."""
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise InvalidInput(f"{what}: meta must be a JSON object, got {type(meta).__name__}")
    try:
        return dict(json.loads(json.dumps(dict(meta))))
    except (TypeError, ValueError) as error:
        raise InvalidInput(f"{what}: meta is not JSON-serialisable ({error})") from error


def check_sources(sources: object, what: str) -> tuple[str, ...] | None:
    if sources is None:
        return None
    if isinstance(sources, str | bytes) or not isinstance(sources, Iterable):
        raise InvalidInput(f"{what}: sources must be a list of ids or None, got {sources!r}")
    checked = tuple(sources)
    for source in checked:
        if not isinstance(source, str) or not source:
            raise InvalidInput(f"{what}: every source must be a non-empty string, got {source!r}")
    return checked


def check_mode(mode: object) -> str:
    if mode not in MODES:
        raise InvalidInput(f"mode must be one of {MODES}, got {mode!r}")
    assert isinstance(mode, str)
    return mode
