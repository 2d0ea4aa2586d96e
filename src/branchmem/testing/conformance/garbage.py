"""What a call leaves behind: no reference cycle, whose freeing would be a pause inside
some later, unrelated call."""

from __future__ import annotations

import gc
import itertools
from collections.abc import Callable
from typing import Any

from branchmem import Memory

from .story import chengdu


def _ours(garbage: list[Any]) -> set[str]:
    """The functions and objects of this library among ``garbage`` (other threads of a test
    process may leave their own)."""
    named = set()
    for item in garbage:
        module = getattr(item, "__module__", None) if callable(item) else type(item).__module__
        if isinstance(module, str) and module.startswith("branchmem"):
            named.add(getattr(item, "__qualname__", type(item).__qualname__))
    return named


# -- what a call leaves behind -------------------------------------------------------------
def test_calls_leave_no_reference_cycles_behind(mem: Memory) -> None:
    """A cycle made by a call holds that call's maps until the collector finds it, and
    freeing them then is a pause inside some later, unrelated call."""
    chengdu(mem)
    mem.add_record("summary", sources=["f-hangzhou", "f-planning"], kind="summary")
    fresh = itertools.count()
    calls: dict[str, Callable[[], object]] = {
        "visible": lambda: mem.visible("a2b"),
        "stale": lambda: mem.stale("a2"),
        "context": lambda: mem.context("a2b"),
        "search": lambda: mem.search("moving", "a2b"),
        "current": lambda: mem.current("city", "a2b"),
        "explain": lambda: mem.explain("summary", "a2"),
        "diff": lambda: mem.diff("a2", "a2b"),
        "add_event": lambda: mem.add_event(f"e{next(fresh)}", "a2b", content="more"),
        "add_record": lambda: mem.add_record(f"r{next(fresh)}", sources=["u2b"], key="city"),
    }
    for call in calls.values():
        call()  # what a first call caches is not garbage
    left: dict[str, list[str]] = {}
    enabled = gc.isenabled()
    gc.disable()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector would free, kept to be named
    try:
        for name, call in calls.items():
            call()
            gc.collect()
            left[name] = sorted(_ours(gc.garbage))
            gc.garbage.clear()
    finally:
        gc.set_debug(0)
        if enabled:
            gc.enable()
    assert left == {name: [] for name in calls}, left
