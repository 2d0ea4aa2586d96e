"""The one wire codec: API values (frozen dataclasses, sets, tuples) <-> JSON values.

The server encodes what ``Memory`` returns with ``encode``; the client rebuilds the same
dataclasses with ``decode(hint, data)``, driven by the return annotation of the API method,
so a new value type needs no converter of its own. The CLI prints ``encode``'s output.
Sets become sorted lists (a stable wire order); tuples become lists.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Union

from ..errors import InvalidInput
from ..model import Event

# what a client may send for an event: the fields add_event takes (never seq, namespace)
EVENT_INPUT = ("id", "parent", "tree", "role", "content", "meta", "ts")


def encode(value: Any) -> Any:
    """A JSON-ready form of an API value: dataclasses as objects, sets sorted."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return [encode(item) for item in sorted(value)]
    if isinstance(value, list | tuple):
        return [encode(item) for item in value]
    return value


def encode_argument(value: Any) -> Any:
    """An argument as sent: an ``Event`` passed to ``add_events`` sends only its inputs;
    any other iterable (not text, not a mapping) becomes a list."""
    if isinstance(value, Event):
        return {name: encode(getattr(value, name)) for name in EVENT_INPUT}
    if isinstance(value, Mapping):
        return {str(k): encode_argument(v) for k, v in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    if isinstance(value, Iterable):
        return [encode_argument(item) for item in value]
    return encode(value)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def decode(hint: Any, data: Any) -> Any:
    """Rebuild the value ``hint`` describes from its JSON form (``encode``'s inverse)."""
    if hint is Any or hint is None or hint is type(None):
        return data if hint is Any else None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return decode(inner[0], data) if len(inner) == 1 else data
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(data, Mapping):
            raise InvalidInput(f"expected a {hint.__name__} object, got {data!r}")
        fields = _hints(hint)
        known = {f.name for f in dataclasses.fields(hint)}
        return hint(**{k: decode(fields[k], v) for k, v in data.items() if k in known})
    if origin in (dict, Mapping):
        value_hint = args[1] if len(args) == 2 else Any
        return {k: decode(value_hint, v) for k, v in data.items()}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], v) for v in data)
        return tuple(decode(a, v) for a, v in zip(args, data, strict=True))
    if origin in (list, set, frozenset) or (origin is not None and _iterable(origin)):
        item = args[0] if args else Any
        made = [decode(item, v) for v in data]
        return set(made) if origin in (set, frozenset) else made
    if hint is float and isinstance(data, int):
        return float(data)
    return data


def _iterable(origin: Any) -> bool:
    return isinstance(origin, type) and issubclass(origin, Iterable) and origin is not str
