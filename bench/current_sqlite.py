"""``Memory.current`` on SQLite next to a plain indexed latest-by-key lookup on the same rows.

An agent writes one of 10 keys per turn (one event and one keyed record per turn, as in
``bench/agent_history.py``). After 1k and 10k turns this times, in interleaved rounds:

- ``Memory.current(key, head)`` on branchmem's SQLite store (one tree, and across trees:
  three other threads have heads, as LangGraph's ``BranchStore.get`` reads);
- the baseline: the same rows (key, turn, id, content, meta) in a plain ``sqlite3`` table
  with an index on (key, turn), read by ``SELECT ... WHERE key = ? ORDER BY turn DESC
  LIMIT 1`` (what a store without branches or provenance does), the row fetched; the file
  in WAL mode with ``synchronous = NORMAL``, as branchmem's SQLite store runs (the goal's
  denominator), and, for comparison, the same table in SQLite's default rollback journal;
- LangGraph's ``SqliteStore.get`` given the same puts;
- ``Memory.current`` with the answers kept from earlier calls dropped before each
  ("decided": what a read costs after a commit; the others read a store nothing writes, so
  from the second call of a key on they are given the answer kept under the commit stamp);
- last, ``Memory.current`` at an agent's new turn: one event written below the last turn
  (not timed), then a key read there; the answer kept at a turn above holds across a write
  that only added (_engine/viewcache.py).

It prints each read's median, t(10k)/t(1k) and its ratio to the baseline.
Goal (issue 25): ``Memory.current`` within 4x the baseline. Writes JSON to
bench/results/current_sqlite.json (bench/figures.py reads it).

    python bench/current_sqlite.py [--turns 1000,10000] [--queries 500]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_history import KEYS, build_langgraph, build_memory, measure
from branchmem import Memory


def baseline(path: Path, turns: int, *, wal: bool = True) -> sqlite3.Connection:
    """The agent's rows in one plain table, indexed for the latest value of a key; ``wal``:
    in the journal mode and synchronous setting of branchmem's SQLite store (``store.sqlite``),
    else in SQLite's defaults (rollback journal, synchronous FULL)."""
    connection = sqlite3.connect(path, check_same_thread=False)
    if wal:
        assert connection.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
        connection.execute("PRAGMA synchronous = NORMAL")
    connection.execute(
        "CREATE TABLE slots (key TEXT NOT NULL, turn INTEGER NOT NULL, id TEXT NOT NULL, "
        "content TEXT NOT NULL, meta TEXT NOT NULL)"
    )
    connection.execute("CREATE INDEX slots_latest ON slots (key, turn)")
    connection.executemany(
        "INSERT INTO slots VALUES (?, ?, ?, ?, ?)",
        [(f"k{i % KEYS}", i, f"w{i}", f"value {i}", json.dumps({})) for i in range(turns)],
    )
    connection.commit()
    return connection


GOAL = 4  # Memory.current / the plain lookup in WAL (issue 25)
LATEST = "SELECT id, content, meta FROM slots WHERE key = ? ORDER BY turn DESC LIMIT 1"


def agent_turns(
    mem: Memory, head: str, plain: Callable[[], object], rounds: int, rng: random.Random
) -> float:
    """Median seconds of ``current`` at an agent's new turn: each round writes one event
    below the last (not timed), then reads a key there, the answer kept from a turn above
    it standing (_engine/viewcache.py). Runs after the other reads: it writes the file."""
    times = []
    for turn in range(rounds):
        event = f"agent{turn}"
        mem.add_event(event, head, content="turn")
        head = event
        plain()  # the baseline's cost of staying warm, as the interleaved reads have
        started = time.perf_counter()
        mem.current(f"k{rng.randrange(KEYS)}", head)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", default="1000,10000")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "current_sqlite.json")
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.turns.split(",")]
    small, large = sizes[0], sizes[-1]
    rng = random.Random(11)
    from langgraph.store.sqlite import SqliteStore

    reads: dict[str, dict[int, Callable[[], object]]] = {}
    agents: dict[int, Memory] = {}
    heads: dict[int, str] = {}
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        for size in sizes:
            mem = Memory.open(folder / f"bm-{size}.db")
            stack.callback(mem.close)
            head = build_memory(mem, size)
            agents[size], heads[size] = mem, head
            assert mem.current("k1", head) is not None
            table = baseline(folder / f"plain-{size}.db", size)
            stack.callback(table.close)
            rollback = baseline(folder / f"plain-rollback-{size}.db", size, wal=False)
            stack.callback(rollback.close)
            connection = sqlite3.connect(
                folder / f"lg-{size}.db", check_same_thread=False, isolation_level=None
            )
            stack.callback(connection.close)
            store = SqliteStore(connection)
            store.setup()
            build_langgraph(store, size)

            def plain_rollback(table: sqlite3.Connection = rollback) -> object:
                return table.execute(LATEST, (f"k{rng.randrange(KEYS)}",)).fetchone()

            def current(mem: Memory = mem, head: str = head) -> object:
                return mem.current(f"k{rng.randrange(KEYS)}", head)

            decider = Memory.open(folder / f"bm-{size}.db")  # the same file
            stack.callback(decider.close)

            def decided(mem: Memory = decider, head: str = head) -> object:
                mem._views.clear()  # no answer kept from an earlier call: decided now
                return mem.current(f"k{rng.randrange(KEYS)}", head)

            def cross(mem: Memory = mem, head: str = head) -> object:
                return mem.current(f"k{rng.randrange(KEYS)}", head, cross_tree=True)

            def plain(table: sqlite3.Connection = table) -> object:
                return table.execute(LATEST, (f"k{rng.randrange(KEYS)}",)).fetchone()

            def get(store: Any = store) -> object:
                return store.get(("agent",), f"k{rng.randrange(KEYS)}")

            for name, read in {
                "plain sqlite3 latest-by-key": plain,
                "plain, rollback journal": plain_rollback,
                "Memory.current": current,
                "Memory.current, decided": decided,
                "Memory.current(cross_tree)": cross,
                "SqliteStore.get": get,
            }.items():
                reads.setdefault(name, {})[size] = read
        gc.collect()
        medians = measure(reads, dict.fromkeys(reads, args.queries))
        turn_reads = {size: reads["plain sqlite3 latest-by-key"][size] for size in sizes}
        medians["Memory.current at an agent's new turn"] = {
            size: agent_turns(agents[size], heads[size], turn_reads[size], args.queries, rng)
            for size in sizes
        }

    base = medians["plain sqlite3 latest-by-key"][large]
    print(f"{KEYS} keys; N turns of history, one keyed write per turn, on SQLite\n")
    print(f"{'read':<28} {f'{small:,} us':>10} {f'{large:,} us':>10} {'10k/1k':>7} "
          f"{'/plain':>7}")  # fmt: skip
    for name, by_size in medians.items():
        print(
            f"{name:<28} {by_size[small] * 1e6:>10.1f} {by_size[large] * 1e6:>10.1f} "
            f"{by_size[large] / by_size[small]:>7.2f} {by_size[large] / base:>7.2f}"
        )
    print("\n/plain: over the plain lookup in WAL (the store's journal mode)")
    print(f"goal: Memory.current /plain <= {GOAL}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            {
                "turns": [small, large],
                "goal": GOAL,
                "median_us": {
                    name: {str(size): seconds * 1e6 for size, seconds in by_size.items()}
                    for name, by_size in medians.items()
                },
                "over_plain": {name: by_size[large] / base for name, by_size in medians.items()},
                "load": os.getloadavg(),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
