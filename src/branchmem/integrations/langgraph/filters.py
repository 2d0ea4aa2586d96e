"""LangGraph's filter and namespace-match languages, evaluated on values in Python."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any, Final

from langgraph.store.base import MatchCondition

from ...errors import InvalidInput


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    pattern = tuple(condition.path)
    if len(namespace) < len(pattern):
        return False
    if condition.match_type == "prefix":
        candidate = namespace[: len(pattern)]
    elif condition.match_type == "suffix":
        candidate = namespace[len(namespace) - len(pattern) :]
    else:
        raise InvalidInput(f"match_type {condition.match_type!r}: expected prefix or suffix")
    return all(p == "*" or p == n for p, n in zip(pattern, candidate, strict=True))


def _ordered(compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """An ordering comparison that, like PostgreSQL's JSONB, fails on a missing value."""

    def holds(actual: Any, operand: Any) -> bool:
        if actual is None or isinstance(actual, bool) != isinstance(operand, bool):
            return False
        if isinstance(actual, int | float) and isinstance(operand, int | float):
            return compare(actual, operand)
        if isinstance(actual, str) and isinstance(operand, str):
            return compare(actual, operand)
        return False

    return holds


_OPERATORS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": _ordered(operator.gt),
    "$gte": _ordered(operator.ge),
    "$lt": _ordered(operator.lt),
    "$lte": _ordered(operator.le),
}


def _at_path(value: Mapping[str, Any], key: str) -> Any:
    """``value[key]``, or for a dotted key absent as such, the nested field it names."""
    if key in value or "." not in key:
        return value.get(key)
    current: Any = value
    for part in key.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def matches(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter language: exact (nested) match or ``$eq``/``$ne``/``$gt``...,
    keys may be dotted paths into nested values."""
    return all(_compare(_at_path(value, k), wanted) for k, wanted in (conditions or {}).items())


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            for name, operand in wanted.items():
                if name not in _OPERATORS:
                    raise InvalidInput(f"filter operator {name!r} is not supported")
                if not _OPERATORS[name](actual, operand):
                    return False
            return True
        return isinstance(actual, Mapping) and all(
            _compare(actual.get(k), v) for k, v in wanted.items()
        )
    return bool(actual == wanted)
