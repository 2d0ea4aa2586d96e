"""How many of Mem0's own tests reach ``BranchMem0`` (a pytest plugin), and which bypass it.

Passing Mem0's ``tests/test_memory.py`` through the wrapper says little when a test
replaces the method it calls with a mock, or calls a private helper of the wrapped Mem0:
such a test passes without running the wrapper's gate. ``counting`` wraps, for one test,
each public Mem0 method of ``BranchMem0`` (``AsyncBranchMem0`` runs them too) and the
constructors of ``BranchMem0`` and of Mem0's own ``Memory``/``AsyncMemory``; each test's
counts are written below the session's base temp directory (xdist workers included) and
``pytest_terminal_summary`` prints one line: how many tests touch Mem0's ``Memory``, and of
those how many called a wrapper method, only reached Mem0's internals through the wrapper,
mocked the method they call, or only built it. ``bypassed`` names a test that built Mem0's
``Memory`` without a ``BranchMem0`` around it: the peer run fails that test.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

# Mem0's public Memory API, as BranchMem0 implements it.
API = ("add", "search", "get_all", "get", "update", "delete", "delete_all", "history", "reset")
API += ("close", "chat")
BUILT = "built"  # a BranchMem0 was constructed
MEM0_BUILT = "mem0_built"  # one of Mem0's own Memory/AsyncMemory was constructed
FOLDER = "mem0-peer-calls"
# The counter of the test running now, for ``note`` (None outside ``counting``).
_NOW: list[Counter[str]] = []


def note(what: str) -> None:
    """Count something a test did that bypasses the wrapper: ``mocked:<method>`` (it
    replaced a wrapper method on the instance) or ``private:<name>`` (it reached a private
    helper of the wrapped Mem0)."""
    if _NOW:
        _NOW[-1][what] += 1


def _counted(method: Callable[..., Any], name: str, calls: Counter[str]) -> Callable[..., Any]:
    @functools.wraps(method)
    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1  # before the call: a call that raises still ran the wrapper
        return method(*args, **kwargs)

    return counted


@contextmanager
def counting() -> Iterator[Counter[str]]:
    """Count the calls that reach ``BranchMem0``'s public methods in this block (any
    instance, any thread), ``built`` for each ``BranchMem0`` constructed and
    ``mem0_built`` for each of Mem0's own ``Memory``/``AsyncMemory`` (when mem0 is
    installed); the classes are restored afterwards."""
    from branchmem.integrations.mem0 import BranchMem0

    calls: Counter[str] = Counter()
    patched: list[tuple[type, str, Any]] = []

    def patch(cls: type, name: str, label: str) -> None:
        original = cls.__dict__[name]
        patched.append((cls, name, original))
        setattr(cls, name, _counted(original, label, calls))

    for name in API:
        patch(BranchMem0, name, name)
    patch(BranchMem0, "__init__", BUILT)
    try:
        import mem0.memory.main as stock  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        pass
    else:
        patch(stock.Memory, "__init__", MEM0_BUILT)
        patch(stock.AsyncMemory, "__init__", MEM0_BUILT)
    _NOW.append(calls)
    try:
        yield calls
    finally:
        _NOW.remove(calls)
        for cls, name, original in reversed(patched):
            setattr(cls, name, original)


def bypassed(calls: Counter[str]) -> bool:
    """Whether the test built one of Mem0's own memories with no ``BranchMem0`` around it
    (each stand-in builds exactly one Mem0 inside one ``BranchMem0``)."""
    return calls[MEM0_BUILT] > calls[BUILT]


def folder(config: pytest.Config, base: Path) -> Path:
    """Where this session's counts go: an xdist worker's base temp is one level below."""
    return (base.parent if hasattr(config, "workerinput") else base) / FOLDER


def record(where: Path, test: str, calls: Counter[str]) -> None:
    """One test's counts (every test writes one, so the total is known too)."""
    where.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha1(test.encode()).hexdigest()
    (where / f"{name}.json").write_text(json.dumps({"test": test, "calls": dict(calls)}))


def summary(where: Path) -> str | None:
    """The line printed at the end of the session (None when no counted test ran)."""
    if not where.is_dir():
        return None
    tests = [json.loads(path.read_text()) for path in sorted(where.glob("*.json"))]
    if not tests:
        return None
    counts = [Counter(t["calls"]) for t in tests]
    touching = [c for c in counts if any(c[k] for k in c if k not in (BUILT, MEM0_BUILT))]
    touching += [c for c in counts if c not in touching and (c[BUILT] or c[MEM0_BUILT])]
    through = [c for c in touching if c[BUILT] and not bypassed(c)]
    api = [c for c in through if any(c[name] for name in API)]
    rest = [c for c in through if c not in api]
    private = [c for c in rest if any(k.startswith("private:") for k in c)]
    mocked = [c for c in touching if not c[BUILT] and not c[MEM0_BUILT]]
    per_method = Counter(name for c in api for name in API if c[name])
    methods = ", ".join(f"{name} {per_method[name]}" for name in API if per_method[name])
    return (
        f"mem0 tests/test_memory.py through BranchMem0: {len(touching)} of {len(tests)} tests "
        f"touch Mem0's Memory; {len(through)} built a BranchMem0 and ran in it: {len(api)} "
        f"called a wrapper method (tests per method: {methods or 'none'}), {len(private)} "
        f"reached private helpers of the wrapped Mem0 through it, "
        f"{len(rest) - len(private)} only built it; {len(mocked)} replaced its constructor "
        f"and the methods they call with mocks (no code of Mem0 runs, swapped or not); "
        f"{sum(bypassed(c) for c in touching)} bypassed it; {len(tests) - len(touching)} do "
        "not touch Memory (module functions)"
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the count (the controller reads what every worker wrote)."""
    base = terminalreporter.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    line = summary(Path(base) / FOLDER)
    if line is not None:
        terminalreporter.write_line(line)
