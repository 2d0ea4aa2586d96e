"""How many of Mem0's own tests reach a ``BranchMem0`` method (a pytest plugin).

Passing Mem0's ``tests/test_memory.py`` through the wrapper says little when a test
replaces the method it calls with a mock, or calls a private helper of the wrapped Mem0:
such a test passes without running any of the wrapper. ``counting`` wraps each public
Mem0 method of ``BranchMem0`` for one test (``AsyncBranchMem0`` runs them too) and counts
the calls that reached it; each test's counts are written below the session's base temp
directory (xdist workers included) and ``pytest_terminal_summary`` prints one line: how
many tests called a wrapper method, and how many tests called each one.
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
    instance, any thread); the class is restored afterwards."""
    from branchmem.integrations.mem0 import BranchMem0

    calls: Counter[str] = Counter()
    originals = {name: BranchMem0.__dict__[name] for name in API}
    for name, original in originals.items():
        setattr(BranchMem0, name, _counted(original, name, calls))
    _NOW.append(calls)
    try:
        yield calls
    finally:
        _NOW.remove(calls)
        for name, original in originals.items():
            setattr(BranchMem0, name, original)


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
    reached = [t for t in tests if any(t["calls"].get(name) for name in API)]
    others = [t for t in tests if t not in reached]
    per_method = Counter(name for t in reached for name in API if t["calls"].get(name))
    methods = ", ".join(f"{name} {per_method[name]}" for name in API if per_method[name])
    mocked = [t for t in others if any(k.startswith("mocked:") for k in t["calls"])]
    private = [
        t for t in others if t not in mocked and any(k.startswith("private:") for k in t["calls"])
    ]
    return (
        f"mem0 tests/test_memory.py through BranchMem0: {len(reached)} of {len(tests)} tests "
        f"called a wrapper method (tests per method: {methods or 'none'}); of the other "
        f"{len(others)}, {len(mocked)} replaced the method they call with a mock, "
        f"{len(private)} called private helpers of the wrapped Mem0, "
        f"{len(others) - len(mocked) - len(private)} neither (no Memory, or only built one)"
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the count (the controller reads what every worker wrote)."""
    base = terminalreporter.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    line = summary(Path(base) / FOLDER)
    if line is not None:
        terminalreporter.write_line(line)
