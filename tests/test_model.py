"""The API's values: the reads' fast constructor builds what the dataclass builds."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass

import pytest

from branchmem.model import Record, new_record, positional_constructor

FIELDS = ("r1", 2, "fact", "moving to Hangzhou", ("e1", "e2"), "city", "user", {"a": 1}, 7, "ns")


def test_new_record_is_the_record_the_dataclass_makes() -> None:
    made, expected = new_record(*FIELDS), Record(*FIELDS)
    assert made == expected and repr(made) == repr(expected)
    assert dataclasses.astuple(made) == FIELDS
    assert pickle.loads(pickle.dumps(made)) == expected
    assert dataclasses.replace(made, content="x") == dataclasses.replace(expected, content="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.content = "moving to Chengdu"  # type: ignore[misc]
    assert not hasattr(made, "__dict__")


def test_new_record_takes_every_field_in_order() -> None:
    with pytest.raises(TypeError):
        new_record(*FIELDS[:-1])


@dataclass(frozen=True)
class _NoSlots:
    a: int


@dataclass(frozen=True, slots=True)
class _Checked:
    a: int

    def __post_init__(self) -> None:
        if self.a < 0:
            raise ValueError("negative")


@dataclass(frozen=True, slots=True)
class _Derived:
    a: int
    b: int = dataclasses.field(default=0, init=False)


@dataclass(frozen=True, slots=True)
class _Shadowing:
    _bm_made: int


@pytest.mark.parametrize("cls", [_NoSlots, _Checked, _Derived, _Shadowing])
def test_a_class_the_constructor_would_not_build_alike_is_refused(cls: type) -> None:
    with pytest.raises(TypeError, match=cls.__name__):
        positional_constructor(cls)
