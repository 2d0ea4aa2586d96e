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
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Union

from ..errors import InvalidInput
from ..model import Event

# what a client may send for an event: the fields add_event takes (never seq, namespace)
EVENT_INPUT = ("id", "parent", "tree", "role", "content", "meta", "ts")


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def encode(value: Any) -> Any:
    """A JSON-ready form of an API value: dataclasses as objects, sets sorted."""
    kind: type = type(value)
    if kind in _SCALARS:
        return value
    names = _field_names(kind)
    if names is not None:
        # a view is hundreds of records: read each class's fields once, not per value
        out = {}
        for name in names:
            item = getattr(value, name)
            out[name] = item if type(item) in _SCALARS else encode(item)
        return out
    if kind is dict or isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return [encode(item) for item in sorted(value)]
    if isinstance(value, list | tuple):
        return [encode(item) for item in value]
    return value


@functools.cache
def _field_names(kind: type) -> tuple[str, ...] | None:
    if dataclasses.is_dataclass(kind):
        return tuple(f.name for f in dataclasses.fields(kind))
    return None


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


Decoder = Callable[[Any], Any]


def decode(hint: Any, data: Any) -> Any:
    """Rebuild the value ``hint`` describes from its JSON form (``encode``'s inverse)."""
    return decoder(hint)(data)


def decoder(hint: Any) -> Decoder:
    """``decode`` for one hint, worked out once: a page of records then costs one call per
    value instead of a walk through the typing module for each."""
    try:
        return _cached_decoder(hint)
    except TypeError:  # an unhashable hint (Annotated with a list, say): not cached
        return _decoder(hint)


@functools.cache
def _cached_decoder(hint: Any) -> Decoder:
    return _decoder(hint)


def _same(data: Any) -> Any:
    return data


def _none(data: Any) -> None:
    return None


def _float(data: Any) -> Any:
    return float(data) if isinstance(data, int) else data


def _decoder(hint: Any) -> Decoder:
    if hint is Any:
        return _same
    if hint is None or hint is type(None):
        return _none
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            return _same
        one = decoder(inner[0])
        if type(None) not in args:
            return one
        return lambda data: None if data is None else one(data)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_decoder(hint)
    if origin in (dict, Mapping):
        values = decoder(args[1] if len(args) == 2 else Any)
        if values is _same:
            return lambda data: {k: v for k, v in data.items()}
        return lambda data: {k: values(v) for k, v in data.items()}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            each = decoder(args[0])
            if each is _same:
                return tuple
            return lambda data: tuple(each(v) for v in data)
        positions = [decoder(a) for a in args]
        return lambda data: tuple(d(v) for d, v in zip(positions, data, strict=True))
    if origin in (list, set, frozenset) or (origin is not None and _iterable(origin)):
        item = decoder(args[0] if args else Any)
        if origin in (set, frozenset):
            return lambda data: {item(v) for v in data}
        if item is _same:
            return list
        return lambda data: [item(v) for v in data]
    if hint is float:
        return _float
    return _same


def _dataclass_decoder(cls: type) -> Decoder:
    """Field decoders are looked up on first use, so a dataclass may refer to itself.
    Fields whose JSON form is already their value (text, ints, Any) are passed as they are."""
    resolved: tuple[frozenset[str], dict[str, Decoder]] | None = None

    def build(data: Any) -> Any:
        nonlocal resolved
        if not isinstance(data, Mapping):
            raise InvalidInput(f"expected a {cls.__name__} object, got {data!r}")
        fields = resolved
        if fields is None:  # built whole, then published: other threads never see half
            hints = _hints(cls)
            each = {f.name: decoder(hints[f.name]) for f in dataclasses.fields(cls)}
            plain = frozenset(name for name, made in each.items() if made is _same)
            fields = (plain, {n: made for n, made in each.items() if n not in plain})
            resolved = fields
        plain, converted = fields
        values = {k: v for k, v in data.items() if k in plain}
        for name, convert in converted.items():
            if name in data:
                values[name] = convert(data[name])
        return cls(**values)

    return build


def _iterable(origin: Any) -> bool:
    return isinstance(origin, type) and issubclass(origin, Iterable) and origin is not str
