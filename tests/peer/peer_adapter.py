"""Load the upstream LangGraph and Mem0 test suites from ``<repo>/../shared/peer`` and
point them at branchmem's faces. The upstream files are read where they are, never copied:
each is imported as a module, the class names it builds stores from are replaced by
factories of ours, and its tests are re-exported into a project test module."""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def peer_root() -> Path | None:
    """``<repo>/../shared/peer``; ``BRANCHMEM_PEER`` overrides it (a git worktree whose
    parent has no ``shared`` folder)."""
    candidates = [os.environ.get("BRANCHMEM_PEER"), str(REPO.parent / "shared" / "peer")]
    for candidate in candidates:
        if candidate and Path(candidate, "README.md").is_file():
            return Path(candidate)
    return None


PEER = peer_root()
if PEER is None and os.environ.get("BRANCHMEM_REQUIRE_PEER"):  # CI: the suites must run
    raise RuntimeError("BRANCHMEM_REQUIRE_PEER is set but ../shared/peer is not present")
needs_peer = pytest.mark.skipif(PEER is None, reason="../shared/peer is not present")


@contextmanager
def _aliased(aliases: Mapping[str, ModuleType]) -> Iterator[None]:
    """Make ``import tests.x`` inside an upstream file resolve to the module we name."""
    saved = {name: sys.modules.get(name) for name in aliases}
    sys.modules.update(aliases)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def load(relative: str, name: str, aliases: Mapping[str, ModuleType] | None = None) -> ModuleType:
    """Import one upstream file as module ``name`` (cached in ``sys.modules``)."""
    if name in sys.modules:
        return sys.modules[name]
    assert PEER is not None
    path = PEER / relative
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    with _aliased(aliases or {}):
        spec.loader.exec_module(module)
    return module


def package(name: str, **children: ModuleType) -> dict[str, ModuleType]:
    """A stand-in ``name`` package whose submodules are ``children`` (for aliases)."""
    parent = ModuleType(name)
    parent.__path__ = []
    out: dict[str, ModuleType] = {name: parent}
    for child, module in children.items():
        setattr(parent, child, module)
        out[f"{name}.{child}"] = module
    return out


def export(
    module: ModuleType,
    into: dict[str, Any],
    *,
    expected: Mapping[str, str] | None = None,
    skipped: Mapping[str, str] | None = None,
) -> list[str]:
    """Re-export the module's tests (and fixtures) into a test module's globals.

    ``expected`` maps a test name (``Class::test`` for methods) to the reason it
    contradicts branch gating: it is marked strict xfail, so it fails the run the day it
    passes. ``skipped`` maps a test to why it does not apply to a store at all (it tests
    SQLite internals, say). Coroutine tests get ``pytest.mark.asyncio`` (upstream runs
    pytest-asyncio in auto mode)."""
    expected = dict(expected or {})
    skipped = dict(skipped or {})
    exported = []
    for attr, obj in vars(module).items():
        if attr.startswith("test_") and callable(obj):
            _mark(obj, attr, expected, skipped)
            into[attr] = obj
            exported.append(attr)
        elif attr.startswith("Test") and inspect.isclass(obj):
            for method_name, method in vars(obj).items():
                if method_name.startswith("test_") and callable(method):
                    _mark(method, f"{attr}::{method_name}", expected, skipped)
            into[attr] = obj
            exported.append(attr)
        elif hasattr(obj, "_fixture_function_marker") or type(obj).__name__ == (
            "FixtureFunctionDefinition"
        ):
            into.setdefault(attr, obj)
    unknown = (set(expected) | set(skipped)) - _names(module)
    if unknown:
        raise AssertionError(f"expectations name tests the suite does not have: {unknown}")
    return exported


def _names(module: ModuleType) -> set[str]:
    names = set()
    for attr, obj in vars(module).items():
        if attr.startswith("test_"):
            names.add(attr)
        elif attr.startswith("Test") and inspect.isclass(obj):
            names |= {f"{attr}::{m}" for m in vars(obj) if m.startswith("test_")}
    return names


def _mark(
    function: Callable[..., Any], name: str, expected: Mapping[str, str], skipped: Mapping[str, str]
) -> None:
    if inspect.iscoroutinefunction(function):
        pytest.mark.asyncio(function)
    if name in expected:
        pytest.mark.xfail(reason=expected[name], strict=True)(function)
    if name in skipped:
        pytest.mark.skip(reason=skipped[name])(function)
