"""The one wire codec: API values (frozen dataclasses, sets, tuples) <-> JSON values.

The server encodes what ``Memory`` returns with ``encode``; the client rebuilds the same
dataclasses with ``decode(hint, data)``, driven by the return annotation of the API method,
so a new value type needs no converter of its own. The CLI prints ``encode``'s output.
Sets become sorted lists (a stable wire order); tuples become lists.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Union

from ..errors import InvalidInput
from ..model import Event, positional_constructor

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
        if type(None) not in args or one is _same:  # None is read as itself
            return one
        return lambda data: None if data is None else one(data)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_decoder(hint)
    if origin in (dict, Mapping):
        values = decoder(args[1] if len(args) == 2 else Any)
        if values is _same:
            return _plain_dict
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


def _plain_dict(data: Any) -> dict[Any, Any]:
    return data.copy() if type(data) is dict else {k: v for k, v in data.items()}


def _dataclass_decoder(cls: type) -> Decoder:
    """Field decoders are looked up on first use, so a dataclass may refer to itself.

    A page of records is decoded on every read an agent makes, so the first use also writes
    a constructor call for the class (``_direct_builder``) that reads every field of a
    complete JSON object by name; an object missing a field (one with a default), or any
    other input, takes the general path, which gives the same value or the same error."""
    resolved: Decoder | None = None

    def build(data: Any) -> Any:
        nonlocal resolved
        made = resolved
        if made is None:  # built whole, then published: other threads never see half
            made = resolved = _direct_builder(cls, _general_builder(cls))
        return made(data)

    return build


@functools.cache  # both builders of a class ask; read only
def _field_decoders(cls: type) -> dict[str, Decoder]:
    hints = _hints(cls)
    return {f.name: decoder(hints[f.name]) for f in dataclasses.fields(cls)}


def _general_builder(cls: type) -> Decoder:
    """Any mapping, fields left out taking their defaults, unknown keys ignored."""
    each = _field_decoders(cls)
    plain = frozenset(name for name, made in each.items() if made is _same)
    converted = {n: made for n, made in each.items() if n not in plain}

    def build(data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise InvalidInput(f"expected a {cls.__name__} object, got {data!r}")
        values = {k: v for k, v in data.items() if k in plain}
        for name, convert in converted.items():
            if name in data:
                values[name] = convert(data[name])
        return cls(**values)

    return build


def _direct_builder(cls: type, general: Decoder) -> Decoder:
    """``general`` with a fast path for a JSON object holding every field: one generated
    call of ``cls`` with each field read by name (and decoded where its hint asks), in the
    order the dataclass takes them (through the slots, ``model.positional_constructor``,
    where the class allows). Fields are identifiers, written here as literals."""
    each = _field_decoders(cls)
    scope: dict[str, Any] = {"cls": cls, "general": general}
    given: list[str] = []
    named: list[str] = []
    for number, f in enumerate(dataclasses.fields(cls)):
        if not f.init:
            return general
        value = f"data[{f.name!r}]"
        if each[f.name] is not _same:
            scope[f"convert_{number}"] = each[f.name]
            value = f"convert_{number}({value})"
        if f.kw_only:
            named.append(f"{f.name}={value}")
        else:
            given.append(value)
    if not named:  # every field in order: through the slots where the class allows it
        with contextlib.suppress(TypeError):
            scope["cls"] = positional_constructor(cls)
    source = (
        "def build(data):\n"
        "    if type(data) is dict:\n"
        "        try:\n"
        f"            return cls({', '.join(given + named)})\n"
        "        except KeyError:\n"
        "            pass\n"
        "    return general(data)\n"
    )
    exec(source, scope)
    built: Decoder = scope["build"]
    return built


def _iterable(origin: Any) -> bool:
    return isinstance(origin, type) and issubclass(origin, Iterable) and origin is not str
