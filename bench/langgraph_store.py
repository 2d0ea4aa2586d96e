"""``BranchStore`` next to LangGraph's own stores, on the same data, in the same run.

An agent graph puts one of 10 keys per step (``("agent", "u1")``, value ``{"value": i,
"text": ...}``), so after N steps there are 10 live items and N puts of history. After 1k
and 10k puts this times, in rounds of every read in a new random order (so no read always
follows the same other one), ``search`` (no query, with a filter, with a query, with both),
``get``, and a put followed by a search (the put changes what the search returns) on:

- branchmem's ``BranchStore`` (in-memory Memory) seen from the thread's head, the puts made
  by a graph with ``BranchCheckpointer`` (one checkpoint per step, as an agent does);
- LangGraph's ``InMemoryStore`` and ``SqliteStore`` given the same puts.

It prints each read's median, its t(10k)/t(1k) and its ratio to ``InMemoryStore``.
Goals (issue 25): search flat (t(10k)/t(1k) <= 1.5) and within 5x ``InMemoryStore.search``;
``get`` within 3x ``InMemoryStore.get``.

One call timed at a time flatters the slower store (the timer's own cost is in both), so it
also times ``get`` as an application calls it: a loop of ``--loop`` gets (the keys in turn)
timed as a whole, ``BranchStore`` and ``InMemoryStore`` alternating, ``--rounds`` times, and
prints each store's median per get and their ratio (goal, issue 46: <= 3). Writes JSON to
bench/results/langgraph_store.json (bench/figures.py reads it).

    python bench/langgraph_store.py [--puts 1000,10000] [--queries 300] [--loop 20000]
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
from typing import Any, TypedDict

from langgraph.store.base import BaseStore

KEYS = 10
NS = ("agent", "u1")
WORDS = ["paris", "tea", "hiking", "chengdu", "jazz", "cats", "rain", "chess", "sushi", "rust"]


def value(i: int) -> dict[str, Any]:
    return {"value": i, "topic": WORDS[i % KEYS], "text": f"likes {WORDS[i % KEYS]} turn {i}"}


class Turn(TypedDict):
    i: int


def agent_turn(state: Turn, *, store: BaseStore) -> dict[str, Any]:
    """One agent step: one put, to one of the keys."""
    store.put(NS, f"k{state['i'] % KEYS}", value(state["i"]))
    return {}


def branch_store(puts: int) -> Any:
    """A graph with ``BranchStore`` and ``BranchCheckpointer`` run for ``puts`` steps; the
    store seen from the thread's head."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    from branchmem import Memory
    from branchmem.integrations.langgraph import BranchCheckpointer, BranchStore

    memory = Memory()
    store = BranchStore(memory)
    builder = StateGraph(Turn)
    builder.add_node("turn", agent_turn)
    builder.add_edge(START, "turn")
    builder.add_edge("turn", END)
    graph = builder.compile(checkpointer=BranchCheckpointer(InMemorySaver(), memory), store=store)
    config: Any = {"configurable": {"thread_id": "agent"}}
    for i in range(puts):
        graph.invoke({"i": i}, config)
    return store.at(config)


def fill(store: Any, puts: int) -> Any:
    for i in range(puts):
        store.put(NS, f"k{i % KEYS}", value(i))
    return store


def reads(store: Any, rng: random.Random) -> dict[str, Callable[[], object]]:
    def search() -> object:
        return store.search(("agent",), limit=10)

    def search_filter() -> object:
        return store.search(("agent",), filter={"topic": WORDS[rng.randrange(KEYS)]}, limit=10)

    def search_query() -> object:
        return store.search(("agent",), query=WORDS[rng.randrange(KEYS)], limit=10)

    def search_query_filter() -> object:
        topic = WORDS[rng.randrange(KEYS)]
        query = WORDS[rng.randrange(KEYS)]
        return store.search(("agent",), query=query, filter={"topic": topic}, limit=10)

    def get() -> object:
        return store.get(NS, f"k{rng.randrange(KEYS)}")

    def put_search() -> object:
        """A write, then a search: the search cannot reuse anything read before the write."""
        i = rng.randrange(1000)
        store.put(NS, f"k{i % KEYS}", value(i))
        return store.search(("agent",), limit=10)

    return {
        "search()": search,
        "search(filter)": search_filter,
        "search(query)": search_query,
        "search(q+filter)": search_query_filter,
        "get()": get,
        "put+search()": put_search,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--puts", default="1000,10000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--loop", type=int, default=20000, help="gets per timed loop")
    parser.add_argument("--rounds", type=int, default=7, help="timed loops per store")
    parser.add_argument("--loop-only", action="store_true", help="only the loop of gets")
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "langgraph_store.json")
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.puts.split(",")]
    small, large = sizes[0], sizes[-1]
    rng = random.Random(7)
    from langgraph.store.memory import InMemoryStore
    from langgraph.store.sqlite import SqliteStore

    looped = {"BranchStore": branch_store(large), "InMemoryStore": fill(InMemoryStore(), large)}
    per_get = loop_of_gets(looped, args.loop, args.rounds)
    print(f"a loop of {args.loop:,} gets after {large:,} puts, median of {args.rounds} rounds:")
    for name, seconds in per_get.items():
        print(f"  {name:<14} {seconds * 1e6:>7.2f} us per get")
    ratio = per_get["BranchStore"] / per_get["InMemoryStore"]
    print(f"  BranchStore / InMemoryStore: {ratio:.2f} (goal <= 3)\n")
    figures: dict[str, Any] = {"puts": [small, large], "loop_get_ratio": ratio}
    if args.loop_only:
        write(args.out, figures)
        return 0

    timed: dict[tuple[str, str], dict[int, Callable[[], object]]] = {}
    built: dict[str, dict[int, float]] = {}
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))

        def sqlite_store(size: int) -> Any:
            connection = sqlite3.connect(  # autocommit: the store begins its own transactions
                folder / f"lg-{size}.db", check_same_thread=False, isolation_level=None
            )
            stack.callback(connection.close)
            store = SqliteStore(connection)
            store.setup()
            return fill(store, size)

        makers: dict[str, Callable[[int], Any]] = {
            "BranchStore": branch_store,
            "InMemoryStore": lambda size: fill(InMemoryStore(), size),
            "SqliteStore": sqlite_store,
        }
        for name, make in makers.items():
            for size in sizes:
                started = time.perf_counter()
                store = make(size)
                built.setdefault(name, {})[size] = time.perf_counter() - started
                found = store.search(("agent",), limit=100)
                assert len(found) == KEYS, (name, size, len(found))
                for read, call in reads(store, rng).items():
                    timed.setdefault((name, read), {})[size] = call
        gc.collect()
        medians = measure(timed, args.queries)

    print(f"{KEYS} live items; N puts of history (one per graph step for BranchStore)\n")
    print(f"{'store':<14} {'read':<17} {f'{small:,} us':>10} {f'{large:,} us':>10} "
          f"{'10k/1k':>7} {'/InMemory':>10}")  # fmt: skip
    for (name, read), by_size in medians.items():
        base = medians[("InMemoryStore", read)][large]
        print(
            f"{name:<14} {read:<17} {by_size[small] * 1e6:>10.1f} {by_size[large] * 1e6:>10.1f} "
            f"{by_size[large] / by_size[small]:>7.2f} {by_size[large] / base:>10.2f}"
        )
    print("\ngoals: BranchStore search 10k/1k <= 1.5 and /InMemory <= 5; get /InMemory <= 3")
    print("build seconds:", {n: {s: round(t, 1) for s, t in v.items()} for n, v in built.items()})
    figures["reads"] = {
        f"{name} {read}": {
            "growth": by_size[large] / by_size[small],
            "over_inmemory": by_size[large] / medians[("InMemoryStore", read)][large],
        }
        for (name, read), by_size in medians.items()
    }
    write(args.out, figures)
    return 0


def write(out: str, figures: dict[str, Any]) -> None:
    """The figures as JSON (bench/figures.py reads them), with the load they were taken at."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps({**figures, "load": os.getloadavg()}, indent=2))


def loop_of_gets(stores: dict[str, Any], gets: int, rounds: int) -> dict[str, float]:
    """Median seconds per get of a loop of ``gets`` gets (every key in turn), the stores
    alternating round by round so that both see the same machine."""
    keys = [f"k{i % KEYS}" for i in range(gets)]
    samples: dict[str, list[float]] = {name: [] for name in stores}
    for name, store in stores.items():  # warm: the first read fills BranchStore's cache
        for key in keys[:KEYS]:
            assert store.get(NS, key) is not None, (name, key)
    for _ in range(rounds):
        for name, store in stores.items():
            get = store.get
            gc.collect()
            started = time.perf_counter()
            for key in keys:
                get(NS, key)
            samples[name].append((time.perf_counter() - started) / gets)
    return {name: statistics.median(values) for name, values in samples.items()}


def measure(
    timed: dict[tuple[str, str], dict[int, Callable[[], object]]], rounds: int
) -> dict[tuple[str, str], dict[int, float]]:
    """Median seconds per read, every store and size timed in the same rounds, in a new
    random order each round."""
    samples: dict[tuple[str, str], dict[int, list[float]]] = {
        name: {size: [] for size in sizes} for name, sizes in timed.items()
    }
    calls = [(name, size, call) for name, sizes in timed.items() for size, call in sizes.items()]
    shuffle = random.Random(3).shuffle
    for _ in range(rounds):
        shuffle(calls)  # each read follows a random other: none always pays for a cold cache
        for name, size, call in calls:
            started = time.perf_counter()
            call()
            samples[name][size].append(time.perf_counter() - started)
    return {
        name: {size: statistics.median(values) for size, values in sizes.items()}
        for name, sizes in samples.items()
    }


if __name__ == "__main__":
    sys.exit(main())
