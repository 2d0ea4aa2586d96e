"""The conformance suite is kept in topic modules and gathered into one class: every test
written in a topic module reaches the class, and a name written twice is refused."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import pytest

from branchmem.testing import BackendConformance, conformance
from branchmem.testing.asof_conformance import AsOfConformance


def topic(name: str, source: str) -> ModuleType:
    module = ModuleType(name)
    exec(source, vars(module))
    return module


def test_every_test_of_every_topic_module_is_a_test_of_the_class() -> None:
    """A topic module left out of GROUPS would ship tests that no backend runs."""
    written = []
    for info in pkgutil.iter_modules(conformance.__path__):
        module = importlib.import_module(f"{conformance.__name__}.{info.name}")
        written += [name for name, test in vars(module).items()
                    if name.startswith("test_") and test.__module__ == module.__name__]  # fmt: skip
    assert len(written) > 50
    assert [name for name in written if name not in vars(BackendConformance)] == []


def test_a_test_name_in_two_topics_is_refused() -> None:
    first = topic("one", "def test_same(mem): pass")
    second = topic("two", "def test_same(mem): pass\ndef test_other(mem): pass")
    assert sorted(conformance.gathered((second,), beside=object)) == ["test_other", "test_same"]
    with pytest.raises(TypeError, match="test_same"):
        conformance.gathered((first, second), beside=object)


def test_a_topic_test_may_not_hide_one_the_class_inherits() -> None:
    inherited = next(name for name in vars(AsOfConformance) if name.startswith("test_"))
    with pytest.raises(TypeError, match=inherited):
        conformance.gathered((topic("t", f"def {inherited}(mem): pass"),), AsOfConformance)
