"""A write inside ``Memory.snapshot()`` is refused: the snapshot ends by rolling back, so
the write would be lost without a word (it was, on SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.errors import ConflictError, NotFoundError


@pytest.fixture(params=["memory", "sqlite"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    memory = Memory() if request.param == "memory" else Memory.open(tmp_path / "m.db")
    with memory:
        yield memory


def test_a_write_inside_a_snapshot_is_refused_and_loses_nothing(mem: Memory) -> None:
    mem.add_event("e1")
    with mem.snapshot():
        with pytest.raises(ConflictError, match=r"snapshot\(\).*'default'"):
            mem.add_event("e2", "e1")
        assert [e.id for e in mem.path("e1")] == ["e1"]  # the snapshot still reads
    with pytest.raises(NotFoundError):
        mem.get_event("e2")
    mem.add_event("e2", "e1")  # after it, the same write lands
    assert mem.get_event("e2").parent == "e1"


def test_a_snapshot_inside_a_transaction_writes_with_it(mem: Memory) -> None:
    mem.add_event("e1")
    with mem.transaction(), mem.snapshot():
        mem.add_event("e2", "e1")
    assert mem.get_event("e2").parent == "e1"
