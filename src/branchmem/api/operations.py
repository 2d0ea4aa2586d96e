"""The operation table: each public ``MemoryAPI`` method as an HTTP operation.

The route of a method is written once, on its declaration in ``protocol.py``
(``@http("GET", "/events/{id}")``); its parameters and result come from the same
declaration's signature. The FastAPI routes (``server/routes.py``), the ``Client`` methods
(``client.py``) and the CLI commands (``cli/``) are built from this table, so a new public
method is written in ``memory/``, declared in ``protocol.py`` and named by one line in
``client.py`` (mypy must see the client's methods). ``tests/test_client_api.py`` fails on
drift.

Wire rules, the same for every operation: every path lives under ``/v1/ns/{namespace}``;
``{name}`` in the path is the parameter of that name; the other parameters are the query
string of a GET and the JSON body of a POST, under their Python names. A GET returning a
list is paged (``limit``, ``cursor`` -> ``{"items", "next_cursor"}``). A method returning
None answers 204; ``envelope`` wraps a bare value as ``{envelope: value}``.
"""

from __future__ import annotations

import functools
import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

Where = Literal["path", "query", "body"]
PREFIX: Final = "/v1/ns/{namespace}"
REQUIRED: Final = inspect.Parameter.empty


@dataclass(frozen=True, slots=True)
class Route:
    """What ``@http`` records on a declaration."""

    verb: Literal["GET", "POST"]
    path: str
    page: bool
    envelope: str | None
    repeatable: bool
    limit: int


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of an operation, as Python declares it and where the wire carries it."""

    name: str
    hint: Any
    default: Any  # REQUIRED when the caller must give it
    positional: bool  # positional-or-keyword in Python (a CLI argument)
    where: Where

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True, slots=True)
class Operation:
    """A public method of the API with its HTTP route."""

    name: str
    verb: Literal["GET", "POST"]
    path: str
    params: tuple[Param, ...]
    result: Any
    page: bool
    envelope: str | None
    repeatable: bool
    limit: int
    doc: str
    signature: inspect.Signature

    @property
    def mutates(self) -> bool:
        return self.verb == "POST"

    def where(self, where: Where) -> list[Param]:
        return [p for p in self.params if p.where == where]


def http(
    verb: Literal["GET", "POST"],
    path: str,
    *,
    page: bool | None = None,
    envelope: str | None = None,
    repeatable: bool | None = None,
    limit: int = 100,
) -> Callable[[F], F]:
    """Give a ``MemoryAPI`` method its route. ``page`` defaults to "a GET returning a
    list or set"; ``repeatable`` (a retry cannot change the outcome) to "a GET"."""

    def mark(method: F) -> F:
        method.__route__ = Route(  # type: ignore[attr-defined]
            verb,
            path,
            page if page is not None else False,
            envelope,
            repeatable if repeatable is not None else verb == "GET",
            limit,
        )
        if page is None:
            method.__route_page_auto__ = True  # type: ignore[attr-defined]
        return method

    return mark


def _is_collection(hint: Any) -> bool:
    return typing.get_origin(hint) in (list, set, frozenset)


def _operation(name: str, method: Callable[..., Any], route: Route) -> Operation:
    signature = inspect.signature(method)
    hints = typing.get_type_hints(method)
    in_path = set(re.findall(r"\{([a-z_]+)\}", route.path))
    params = []
    for param in list(signature.parameters.values())[1:]:  # self
        if param.name == "namespace":
            continue
        if param.name in in_path:
            where: Where = "path"
        else:
            where = "query" if route.verb == "GET" else "body"
        params.append(
            Param(
                name=param.name,
                hint=hints[param.name],
                default=param.default,
                positional=param.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD,
                where=where,
            )
        )
    unknown = in_path - {p.name for p in params}
    if unknown:
        raise TypeError(f"{name}: path {route.path!r} names no parameter {sorted(unknown)}")
    result = hints["return"]
    page = route.page
    if getattr(method, "__route_page_auto__", False):
        page = route.verb == "GET" and _is_collection(result)
    return Operation(
        name=name,
        verb=route.verb,
        path=route.path,
        params=tuple(params),
        result=result,
        page=page,
        envelope=route.envelope,
        repeatable=route.repeatable,
        limit=route.limit,
        doc=inspect.getdoc(method) or "",
        signature=signature,
    )


@functools.cache
def operations() -> dict[str, Operation]:
    """Every routed method of ``MemoryAPI``, in declaration order."""
    from .protocol import MemoryAPI

    found = {}
    for name, member in vars(MemoryAPI).items():
        route = getattr(member, "__route__", None)
        if isinstance(route, Route):
            found[name] = _operation(name, member, route)
    return found


Bind = Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]


def binder(declared: Callable[..., Any]) -> Bind:
    """``(args, kwargs) -> arguments`` of a method called without ``self``: every parameter
    by name, defaults applied, in the declaration's order, as ``Signature.bind`` and
    ``apply_defaults`` give them. A remote call binds its arguments on every turn, so a
    plain call (positional then named parameters, nothing twice, nothing unknown or
    missing) is bound from the parameters read once; anything else goes through
    ``Signature.bind``, which raises the same ``TypeError`` a local call would."""
    signature = inspect.signature(declared)
    params = list(signature.parameters.values())[1:]  # self
    bind_any = signature.bind
    order = [p.name for p in params]
    defaults = {p.name: p.default for p in params if p.default is not REQUIRED}
    required = frozenset(p.name for p in params if p.default is REQUIRED)
    plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    positional = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    simple = all(p.kind in plain for p in params)
    names = frozenset(order)

    def general(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        bound = bind_any(None, *args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        arguments.pop(next(iter(signature.parameters)))
        return arguments

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if not simple or len(args) > len(positional):
            return general(args, kwargs)
        given = dict(zip(positional, args, strict=False))  # args may be fewer
        if not kwargs.keys() <= names or not given.keys().isdisjoint(kwargs):
            return general(args, kwargs)
        given.update(kwargs)
        if not required <= given.keys():
            return general(args, kwargs)
        return {name: given[name] if name in given else defaults[name] for name in order}

    return bind
