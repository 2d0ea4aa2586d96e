"""The API routes, built from the operation table (``branchmem.api.operations``).

One route per ``MemoryAPI`` method, under ``/v1/ns/{namespace}``. Path and query
parameters and the JSON body model are derived from the method's signature, with the
constraints of ``schemas.py`` chosen by parameter name; results are the API's dataclasses,
written as the codec writes them. A route answers exactly what the method returned.

Responses are documented by the models of ``schemas.response_type`` but not validated
against them: a view is hundreds of records, and checking each against a model it was
built from costs more than computing the view. The route writes the JSON itself.
"""

from __future__ import annotations

import base64
import contextlib
import inspect
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Annotated, Any, Final, TypeVar

import orjson
from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import Field, TypeAdapter, create_model

from .._core.validation import BOUNDS, KEEP_MEANING, Keep
from ..api.codec import encode
from ..api.operations import PREFIX, REQUIRED, Operation, Param, operations
from ..errors import InvalidInput
from .auth import ApiKey, IdParam, NamespaceParam, access
from .cleanup import CLEANING_OPERATIONS
from .problems import Refusal
from .schemas import (
    BODY_TYPES,
    ID_FIELDS,
    MAX_BATCH,
    MAX_ID,
    MAX_QUERY,
    Id,
    Ids,
    Input,
    Mode,
    Page,
    response_type,
)

DEFAULT_LIMIT: Final = 100
MAX_LIMIT: Final = 1000

T = TypeVar("T")


Grant = Annotated[ApiKey | None, Depends(access)]
LimitQuery = Annotated[int, Query(ge=1, le=MAX_LIMIT)]
CursorQuery = Annotated[str | None, Query(max_length=64)]


# -- paging ------------------------------------------------------------------------------------
def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o{offset}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if raw.startswith("o") and raw[1:].isdigit():
            return int(raw[1:])
    except ValueError:
        pass
    raise InvalidInput(f"cursor {cursor!r} is not one this server handed out")


def page(items: Sequence[T], limit: int, cursor: str | None) -> dict[str, Any]:
    start = decode_cursor(cursor)
    chunk = list(items[start : start + limit])
    more = start + limit < len(items)
    return {"items": chunk, "next_cursor": encode_cursor(start + limit) if more else None}


# -- acting as the key -------------------------------------------------------------------------
@contextlib.contextmanager
def acting(memory: Any, grant: ApiKey | None) -> Iterator[None]:
    """Mutations are audited under the key that made them (``key:<id>``)."""
    acting_as = getattr(memory, "acting_as", None)
    if grant is None or acting_as is None:
        yield
        return
    with acting_as(grant.actor):
        yield


# -- wire types by parameter -------------------------------------------------------------------
def allows_none(hint: Any) -> bool:
    return type(None) in typing.get_args(hint)


def _id_list(hint: Any) -> bool:
    """``Iterable[str]`` (or ``| None``): sources, targets, supersedes."""
    for candidate in (hint, *typing.get_args(hint)):
        origin = typing.get_origin(candidate)
        if (
            isinstance(origin, type)
            and issubclass(origin, Iterable)
            and not issubclass(origin, Mapping)
            and typing.get_args(candidate) == (str,)
        ):
            return True
    return False


def body_type(param: Param, item_models: Mapping[str, type[Input]]) -> Any:
    """The pydantic type of a body field: by name first, else by its Python hint."""
    name, hint = param.name, param.hint
    if name in item_models:  # a batch: items are the bodies of the one-item call
        item = item_models[name]
        return Annotated[list[item], Field(max_length=MAX_BATCH)]  # type: ignore[valid-type]
    if name in BODY_TYPES:
        return BODY_TYPES[name]
    if name in ID_FIELDS:
        return Id | None if allows_none(hint) else Id
    if _id_list(hint):
        return Ids | None if allows_none(hint) else Ids
    return hint


def body_model(
    op: Operation, item_models: Mapping[str, type[Input]] | None = None
) -> type[Input] | None:
    fields: dict[str, Any] = {}
    for param in op.where("body"):
        wire = body_type(param, item_models or {})
        if param.required:
            fields[param.name] = (wire, ...)
        elif isinstance(param.default, tuple):
            fields[param.name] = (wire, Field(default_factory=list))
        elif isinstance(param.default, Keep):  # left out: the method's default (answer())
            fields[param.name] = (wire, Field(default_factory=_left_out, description=KEEP_MEANING))
        else:
            fields[param.name] = (wire, param.default)
    if not fields:
        return None
    name = "".join(part.title() for part in op.name.split("_")) + "In"
    return create_model(name, __base__=Input, **fields)


def _left_out() -> None:
    return None


QUERY_CONSTRAINTS: Final[dict[str, dict[str, Any]]] = {
    "query": {"max_length": MAX_QUERY},
    "k": {"ge": BOUNDS["k"].low, "le": BOUNDS["k"].high},  # the rule every face applies
    "revision": {"ge": 1},
    "anchor": {"min_length": 1, "max_length": MAX_ID, "description": "event id; omitted: none"},
    "as_of": {"description": "a seq, or an ISO 8601 time (no zone: UTC); omitted: now"},
}


def query_constraints(param: Param) -> dict[str, Any]:
    """The constraints FastAPI checks on a query parameter (``Query(**constraints)``)."""
    hint = Mode | None if param.name == "mode" else param.hint
    bare = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    constraints = dict(QUERY_CONSTRAINTS.get(param.name, {}))
    if bare[0] is str and "max_length" not in constraints:
        constraints["max_length"] = MAX_ID
        if param.required and not allows_none(hint):
            constraints["min_length"] = 1
    return constraints


def query_default(param: Param) -> Any:
    """What a query parameter left out is taken as: its default, None where the value is
    optional, else ``REQUIRED``."""
    if param.default is REQUIRED and allows_none(param.hint):
        return None
    return param.default


def query_type(param: Param) -> tuple[Any, Any]:
    """(annotation, default) of a query parameter. An optional value may be left out even
    where Python requires it be passed (``visible(None)``: no anchor)."""
    hint = Mode | None if param.name == "mode" else param.hint
    constraints = query_constraints(param)
    default = query_default(param)
    annotated = Annotated[hint, Query(**constraints)] if constraints else hint
    return annotated, default


# -- one route per operation -------------------------------------------------------------------
def response_model(op: Operation) -> Any:
    result = response_type(op.result)
    if op.page:
        return Page[typing.get_args(result)[0]]  # type: ignore[misc]
    if op.envelope:
        name = "".join(part.title() for part in op.name.split("_")) + "Out"
        fields: dict[str, Any] = {op.envelope: (result, ...)}
        return create_model(name, **fields)
    return result


def unordered(value: Any) -> Any:
    """What orjson does not write itself, as the codec writes it: a set sorted, a mapping
    that is not a dict as a dict. Anything else it refuses, and the codec's path writes it."""
    if isinstance(value, set | frozenset):
        return sorted(value)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not an API value")


def json_response(content: Any, documented: Any) -> Response:
    """``content`` (API values: dataclasses, sets, tuples) as the JSON FastAPI writes for
    the documented model: orjson writes the dataclasses as they are, with pydantic's text
    for every number (``0.00001``, where ``json`` writes ``1e-05``; null for NaN), in a
    tenth of the time the codec and pydantic take. What orjson refuses (a key that is not
    text, an integer beyond 64 bits, a lone surrogate; the stores refuse the last on the
    way in) takes the codec and pydantic, the documented model's own writer."""
    try:
        return Response(orjson.dumps(content, default=unordered), media_type="application/json")
    except TypeError:  # orjson.JSONEncodeError is one
        adapter: TypeAdapter[Any] = TypeAdapter(documented)
        body = adapter.dump_json(adapter.validate_python(encode(content)))
        return Response(body, media_type="application/json")


def documented_model(op: Operation) -> Any:
    """The model a route's answer is documented by; None for a method returning nothing."""
    return None if op.result is None or op.result is type(None) else response_model(op)


def answer(
    op: Operation,
    model: type[Input] | None,
    documented: Any,
    memory: Any,
    namespace: str,
    grant: ApiKey | None,
    given: dict[str, Any],
) -> Response:
    """Run the operation with the request's parameters and write its answer: the one
    handler behind the FastAPI route and the direct reads (``direct.py``)."""
    method = getattr(memory, op.name, None)
    if method is None:
        raise Refusal("not_implemented", f"this server's branchmem has no {op.name}()")
    limit, cursor = given.pop("limit", op.limit), given.pop("cursor", None)
    body = given.pop("body", None)
    if model is not None:
        sent = body or model()  # a body of defaults only may be left out
        kept = {p.name for p in op.where("body") if isinstance(p.default, Keep)}
        given.update(sent.model_dump(exclude=kept - sent.model_fields_set))
    args = [given.pop(p.name) for p in op.params if p.positional]
    with acting(memory, grant) if op.mutates else contextlib.nullcontext():
        result = method(*args, namespace=namespace, **given)
    if documented is None:
        return Response(status_code=204)
    if op.page:
        items = sorted(result) if isinstance(result, set | frozenset) else result
        return json_response(page(items, limit, cursor), documented)
    return json_response({op.envelope: result} if op.envelope else result, documented)


def endpoint(op: Operation, model: type[Input] | None) -> Callable[..., Any]:
    """A handler with the operation's parameters as FastAPI reads them (``__signature__``)."""
    documented = documented_model(op)

    params = [
        inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY, annotation=Request),
        inspect.Parameter("namespace", inspect.Parameter.KEYWORD_ONLY, annotation=NamespaceParam),
        inspect.Parameter("grant", inspect.Parameter.KEYWORD_ONLY, annotation=Grant),
    ]
    for p in op.where("path"):
        params.append(inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, annotation=IdParam))
    for p in op.where("query"):
        annotation, default = query_type(p)
        params.append(
            inspect.Parameter(
                p.name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
            )
        )
    if model is not None:
        optional = all(not p.required for p in op.where("body"))
        params.append(
            inspect.Parameter(
                "body",
                inspect.Parameter.KEYWORD_ONLY,
                annotation=model | None if optional else model,
                default=None if optional else inspect.Parameter.empty,
            )
        )
    if op.page:
        params += [
            inspect.Parameter(
                "limit", inspect.Parameter.KEYWORD_ONLY, annotation=LimitQuery, default=op.limit
            ),
            inspect.Parameter(
                "cursor", inspect.Parameter.KEYWORD_ONLY, annotation=CursorQuery, default=None
            ),
        ]

    def route(**given: Any) -> Any:
        state = given.pop("request").app.state
        namespace, grant = given.pop("namespace"), given.pop("grant")
        response = answer(op, model, documented, state.memory, namespace, grant, given)
        if op.name in CLEANING_OPERATIONS and getattr(state, "cleanup", None) is not None:
            state.cleanup.request()  # the erase may have left a cleanup pending (cleanup.py)
        return response

    route.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    route.__name__ = op.name
    route.__doc__ = f"``Memory.{op.name}``: {op.doc}"
    return route


TAGS: Final[Mapping[str, str]] = {
    "events": "events", "heads": "events", "conversations": "events", "records": "records",
    "supersede": "corrections", "retractions": "corrections", "items": "corrections",
    "repair-queue": "corrections", "visible": "views", "current": "views", "stale": "views",
    "diff": "views",
    "search": "retrieval", "context": "retrieval", "deliveries": "retrieval",
    "stale-deliveries": "retrieval", "report": "audit", "audit": "audit",
    "trees": "explorer", "explanations": "explorer",
}  # fmt: skip


def tag(op: Operation) -> str:
    if op.path.endswith(("/explain",)):
        return "views"
    if op.path.endswith("/history"):
        return "audit"
    return TAGS.get(op.path.strip("/").split("/")[0], "api")


def api_router() -> APIRouter:
    """Every operation of the table as a route."""
    router = APIRouter(prefix=PREFIX)
    table = operations()
    one_item = {"events": "add_event", "records": "add_record"}  # batch field -> its call
    built = {name: body_model(table[name]) for name in one_item.values()}
    item_models: dict[str, type[Input]] = {}
    for field, name in one_item.items():
        if (made := built[name]) is not None:
            item_models[field] = made
    for op in table.values():
        model = built[op.name] if op.name in built else body_model(op, item_models)
        none = op.result is None or op.result is type(None)
        extra: dict[str, Any] = {"response_class": Response} if none else {}
        router.add_api_route(
            op.path,
            endpoint(op, model),
            methods=[op.verb],
            response_model=None if none else response_model(op),
            status_code=204 if none else 200,
            tags=[tag(op)],
            name=op.name,
            **extra,
        )
    return router
