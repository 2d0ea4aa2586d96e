"""``BranchStore`` over PostgreSQL next to LangGraph's ``PostgresStore``, in the same run on
the same server: a loop of ``put`` calls (``--keys`` keys in turn, one call each, as an agent
writes), then a loop of ``get`` calls, each loop timed whole, the two stores alternating
round by round. Prints each store's median per call and their ratio (goal, issue 46: put
<= 3x ``PostgresStore``).

``BranchStore`` stands at the head of a thread with one checkpoint (``store.at(config)``),
so every put is sourced there; ``PostgresStore`` is set up and used as its docs show.

    python bench/langgraph_pg_put.py [--dsn postgresql://...] [--calls 300] [--rounds 5]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from pgserver import database, server


def branch_store(url: str, stack: contextlib.ExitStack) -> Any:
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.memory import InMemorySaver

    from branchmem import Memory
    from branchmem.integrations.langgraph import BranchCheckpointer, BranchStore

    memory = stack.enter_context(Memory.open(url))
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    BranchCheckpointer(InMemorySaver(), memory).put(
        config, empty_checkpoint(), {"source": "input", "step": -1, "parents": {}}, {}
    )
    return BranchStore(memory).at({"configurable": {"thread_id": "t"}})


def postgres_store(url: str, stack: contextlib.ExitStack) -> Any:
    from langgraph.store.postgres import PostgresStore

    store = stack.enter_context(PostgresStore.from_conn_string(url))
    store.setup()
    return store


def timed_loop(call: Callable[[int], object], calls: int) -> float:
    started = time.perf_counter()
    for i in range(calls):
        call(i)
    return (time.perf_counter() - started) / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dsn", default=None, help="a server whose user may create databases")
    parser.add_argument("--calls", type=int, default=300, help="calls per timed loop")
    parser.add_argument("--rounds", type=int, default=5, help="timed loops per store")
    parser.add_argument("--keys", type=int, default=50)
    args = parser.parse_args()
    namespace = ("agent", "u1")
    with contextlib.ExitStack() as stack:
        dsn = stack.enter_context(server(args.dsn))
        stores = {
            "BranchStore": branch_store(stack.enter_context(database(dsn, "lg_branch")), stack),
            "PostgresStore": postgres_store(stack.enter_context(database(dsn, "lg_stock")), stack),
        }
        samples: dict[tuple[str, str], list[float]] = {}
        for round_number in range(args.rounds):
            for name, store in stores.items():

                def put(i: int, store: Any = store, turn: int = round_number) -> object:
                    key = f"k{i % args.keys}"
                    return store.put(namespace, key, {"turn": turn, "i": i, "text": f"note {i}"})

                def get(i: int, store: Any = store) -> object:
                    return store.get(namespace, f"k{i % args.keys}")

                for op, call in (("put", put), ("get", get)):
                    seconds = timed_loop(call, args.calls)
                    samples.setdefault((name, op), []).append(seconds)
        print(f"loops of {args.calls} calls, {args.keys} keys, median of {args.rounds} rounds")
        for op in ("put", "get"):
            ours = statistics.median(samples[("BranchStore", op)])
            stock = statistics.median(samples[("PostgresStore", op)])
            print(
                f"  {op}: BranchStore {ours * 1e3:.3f} ms, PostgresStore {stock * 1e3:.3f} ms,"
                f" ratio {ours / stock:.2f}"
            )
        print("goal: put <= 3x PostgresStore")
        stack.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
