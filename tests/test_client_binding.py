"""The client's fast paths give what the general ones give: argument binding (``binder``
against ``Signature.bind``) and decoding a dataclass (the generated constructor call
against the field-by-field builder), value for value and error for error."""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections import OrderedDict
from typing import Any

import pytest

from branchmem import Memory
from branchmem.api.codec import _direct_builder, _general_builder, decode, encode
from branchmem.api.operations import binder, operations
from branchmem.api.protocol import MemoryAPI
from branchmem.errors import InvalidInput
from branchmem.model import Explanation, Hit, Record

OPERATIONS = sorted(operations())


def bound_by_signature(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What the clients did before: ``Signature.bind`` with ``apply_defaults``."""
    try:
        bound = inspect.signature(getattr(MemoryAPI, name)).bind(None, *args, **kwargs)
    except TypeError as error:
        return TypeError, str(error)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    arguments.pop("self")
    return list(arguments.items())


def bound_by_binder(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        arguments = binder(getattr(MemoryAPI, name))(args, kwargs)
    except TypeError as error:
        return TypeError, str(error)
    return list(arguments.items())


def call_shapes(name: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Plain calls and broken ones: positional, by name, mixed, missing, unknown, twice."""
    params = list(inspect.signature(getattr(MemoryAPI, name)).parameters.values())[1:]
    values = {p.name: f"v-{p.name}" for p in params}
    positional = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    required = [p.name for p in params if p.default is inspect.Parameter.empty]
    shapes: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {n: values[n] for n in required}),
        ((), dict(values)),
        (tuple(values[n] for n in positional), {}),
        (tuple(values[n] for n in positional[:1]), {n: values[n] for n in required[1:]}),
        ((), {}),
        ((), {**values, "no_such_parameter": 1}),
        ((*(values[n] for n in positional), "one too many"), {}),
    ]
    if positional:
        shapes.append(((values[positional[0]],), {positional[0]: "again"}))
    return shapes


@pytest.mark.parametrize("name", OPERATIONS)
def test_binder_binds_every_call_as_signature_bind_does(name: str) -> None:
    for args, kwargs in call_shapes(name):
        assert bound_by_binder(name, args, kwargs) == bound_by_signature(name, args, kwargs), (
            name,
            args,
            kwargs,
        )


def api_dataclasses() -> list[type]:
    """Every dataclass an operation's result is made of, nested ones included."""
    found: dict[type, None] = {}

    def walk(hint: Any) -> None:
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            if hint in found:
                return
            found[hint] = None
            for field_hint in typing.get_type_hints(hint).values():
                walk(field_hint)
            return
        if typing.get_origin(hint) is not None or isinstance(hint, types.UnionType):
            for arg in typing.get_args(hint):
                walk(arg)

    for op in operations().values():
        walk(op.result)
    return list(found)


def test_the_results_hold_the_dataclasses_checked_below() -> None:
    assert {Record, Hit, Explanation} <= set(api_dataclasses())


@pytest.fixture(scope="module")
def answers() -> dict[type, list[Any]]:
    """Values of the API's dataclasses as ``Memory`` returns them (the README's story)."""
    mem = Memory()
    mem.add_event("u1", content="I need help planning a move.")
    mem.add_event("u2", parent="u1", content="I'm moving to Chengdu next month.")
    mem.add_record("city-1", sources=["u2"], content="moving to Chengdu", key="city")
    mem.add_event("u2b", parent="u1", content="I'm moving to Hangzhou next month.")
    mem.add_record(
        "city-2", sources=["u2b"], content="moving to Hangzhou", key="city", meta={"n": 1.5}
    )
    mem.add_record("legacy", sources=None, content="from before sources")
    values: list[Any] = [
        *mem.visible("u2b"),
        *mem.visible("u2b", mode="compat"),
        *mem.search("moving", "u2b"),
        mem.explain("city-1", "u2b"),
        mem.explain("city-2", "u2b"),
        mem.context("u2b"),
        *mem.path("u2b"),
        *mem.conversations(),
        mem.get_record("city-2"),
    ]
    by_class: dict[type, list[Any]] = {}
    for value in values:
        by_class.setdefault(type(value), []).append(value)
    return by_class


def outcome(build: Any, data: Any) -> Any:
    try:
        return "value", build(data)
    except (InvalidInput, TypeError) as error:
        return type(error), str(error)


def test_a_complete_object_decodes_as_the_general_builder_does(
    answers: dict[type, list[Any]],
) -> None:
    assert {Record, Hit, Explanation} <= answers.keys()
    for cls, values in answers.items():
        general = _general_builder(cls)
        direct = _direct_builder(cls, general)
        for value in values:
            data = encode(value)
            assert direct(data) == general(data) == value
            assert decode(cls, data) == value


def variants(data: dict[str, Any]) -> list[Any]:
    """The same object with each field left out, an unknown field added, as another
    mapping, and things that are no object at all."""
    shapes: list[Any] = [{k: v for k, v in data.items() if k != name} for name in data]
    shapes += [{**data, "added_by_a_newer_server": 1}, OrderedDict(data), [data], None, "x"]
    return shapes


def test_any_other_input_decodes_or_fails_as_the_general_builder_does(
    answers: dict[type, list[Any]],
) -> None:
    for cls, values in answers.items():
        general = _general_builder(cls)
        direct = _direct_builder(cls, general)
        for data in variants(encode(values[0])):
            assert outcome(direct, data) == outcome(general, data), (cls.__name__, data)


def test_a_record_without_a_field_with_a_default_takes_the_default() -> None:
    data = encode(Record("r", 1, "fact", "text", ("e1",), key="k", meta={"a": 1}, seq=3))
    del data["meta"], data["key"]
    record = decode(Record, data)
    assert record.meta == {} and record.key is None and record.sources == ("e1",)


def test_a_value_that_is_no_object_names_the_class() -> None:
    with pytest.raises(InvalidInput, match="expected a Record object"):
        decode(Record, ["r", 1])


def test_meta_is_a_copy_not_the_answers_own_dict() -> None:
    data = encode(Record("r", 1, "fact", "text", ("e1",), meta={"a": 1}))
    record = decode(Record, data)
    data["meta"]["a"] = 2
    assert record.meta == {"a": 1}


def test_a_legacy_records_sources_stay_none() -> None:
    assert decode(Record, encode(Record("r", 1, "fact", "t", None))).sources is None
