"""A context prices its messages by the token counts the store kept with the events.

Counted at write (``EventNode.tokens``), so a context at a million events does not count each
line again; the text must be what counting gives, on every backend, for events written
before the count was kept (NULL after the migration), and under a counter of one's own.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.search.tokens import count_tokens

TURNS = 60


class SameCountUnkept:
    """The default rule under another function: nothing kept applies to it."""

    additive = True

    def count(self, text: str) -> int:
        return count_tokens(text)


def history(mem: Memory) -> str:
    parent = None
    for turn in range(TURNS):
        role = "user" if turn % 2 == 0 else "assistant"
        content = f"turn {turn}: 第{turn}轮 moving to Hangzhou, flat {turn * 7919} near West Lake"
        mem.add_event(f"m{turn}", parent, role=role, content=content)
        parent = f"m{turn}"
    mem.withdraw("m40")
    mem.erase("m41")
    mem.add_record("city", sources=["m2"], key="city", content="moving to Hangzhou")
    return f"m{TURNS - 1}"


@pytest.fixture(params=["memory", "sqlite"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    path = ":memory:" if request.param == "memory" else str(tmp_path / "kept.db")
    with Memory.open(path) as opened:
        yield opened


def test_messages_are_priced_by_the_kept_counts_not_counted_again(mem: Memory) -> None:
    anchor = history(mem)
    count_tokens.cache_clear()
    kept = mem.context(anchor, budget=4000)
    misses = count_tokens.cache_info().misses
    assert len(kept.events) == TURNS - 2  # the withdrawn and the erased show nothing
    assert misses < 10, misses  # headings, labels and the one record, not the messages
    unkept = Memory(store=mem.store, counter=SameCountUnkept()).context(anchor, budget=4000)
    assert (kept.text, kept.tokens, kept.events) == (unkept.text, unkept.tokens, unkept.events)
    assert kept.tokens == count_tokens(kept.text)


def test_a_store_written_before_counts_were_kept_gives_the_same_context(tmp_path: Path) -> None:
    path = tmp_path / "before.db"
    with Memory.open(path) as mem:
        anchor = history(mem)
        budgets = (4000, 300, 37)
        fresh = [mem.context(anchor, budget=budget) for budget in budgets]
    with sqlite3.connect(path) as db:  # the store as migration 8 leaves older events
        db.execute("UPDATE events SET tokens = NULL")
    with Memory.open(path) as mem:
        assert [mem.context(anchor, budget=budget) for budget in budgets] == fresh
