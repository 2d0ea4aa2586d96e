"""``BranchStore`` over PostgreSQL next to LangGraph's ``PostgresStore``, in the same run on
the same server: a loop of ``put`` calls (``--keys`` keys in turn, one call each, as an agent
writes), a loop of ``batch`` calls of ``--batch`` puts each, then a loop of ``get`` calls,
each loop timed whole, the two stores alternating round by round. Prints each store's median
per put (per get) and their ratio side by side (goal, issue 46: put <= 3x ``PostgresStore``),
then how many round trips one put and one batch take on each (libpq's trace of every
connection the stores open, counted untimed afterwards: each ``Sync`` or simple query the
client sends waits for the server once). Writes JSON to bench/results/langgraph_pg_put.json
(bench/figures.py reads it).

``BranchStore`` stands at the head of a thread with one checkpoint (``store.at(config)``),
so every put is sourced there; ``PostgresStore`` is set up and used as its docs show.

    python bench/langgraph_pg_put.py [--dsn postgresql://...] [--calls 300] [--rounds 5]
        [--keys 50] [--batch 10] [--out bench/results/langgraph_pg_put.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pgserver import database, server

NAMESPACE = ("agent", "u1")
GOAL = 3.0


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


def operations(store: Any, keys: int, batch: int, turn: int) -> dict[str, Callable[[int], object]]:
    """The timed calls, each given its index in the loop."""
    from langgraph.store.base import PutOp

    def put(i: int) -> object:
        return store.put(NAMESPACE, f"k{i % keys}", {"turn": turn, "i": i, "text": f"note {i}"})

    def batch_of_puts(i: int) -> object:
        return store.batch(
            [
                PutOp(NAMESPACE, f"k{(i * batch + j) % keys}", {"turn": turn, "i": i, "j": j})
                for j in range(batch)
            ]
        )

    def get(i: int) -> object:
        return store.get(NAMESPACE, f"k{i % keys}")

    return {"put": put, "batch": batch_of_puts, "get": get}


class Trace:
    """libpq's trace of every psycopg connection opened while it is installed (the stores'
    pools and their own connections), into one file. libpq writes it through a buffer that
    only ``untrace`` flushes, so ``count`` pauses every connection's trace to read it."""

    def __init__(self, folder: Path) -> None:
        self.log = folder / "trace.log"
        self.sink = self.log.open("w")
        self.connections: list[Any] = []

    @contextlib.contextmanager
    def installed(self) -> Iterator[Trace]:
        import psycopg

        opened = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]

        def connect(cls: Any, *args: Any, **kwargs: Any) -> Any:
            connection = opened(cls, *args, **kwargs)
            connection.pgconn.trace(self.sink.fileno())
            self.connections.append(connection)
            return connection

        psycopg.Connection.connect = classmethod(connect)  # type: ignore[method-assign,assignment]
        try:
            yield self
        finally:
            psycopg.Connection.connect = classmethod(opened)  # type: ignore[method-assign,assignment]
            self.sink.close()

    def count(self, calls: Callable[[], object]) -> int:
        """The client's waits for the server while ``calls`` runs: each ``Sync`` (extended
        protocol, one per pipeline) or ``Query`` (a simple statement) it sends."""
        self._pause()
        start = self.log.stat().st_size
        for connection in self._open():
            connection.pgconn.trace(self.sink.fileno())
        calls()
        self._pause()
        with self.log.open() as lines:
            lines.seek(start)
            return sum(
                1
                for line in lines
                if (parts := line.rstrip("\n").split("\t", 4))[1:2] == ["F"]
                and parts[3] in ("Sync", "Query")
            )

    def _open(self) -> list[Any]:
        return [c for c in self.connections if not c.closed]

    def _pause(self) -> None:
        for connection in self._open():
            connection.pgconn.untrace()


def round_trips(
    dsn: str, make: Callable[[str, contextlib.ExitStack], Any], keys: int, batch: int
) -> dict[str, float]:
    """Round trips per call of ``put`` and ``batch`` on a store made fresh, warm (every key
    written once), traced but not timed."""
    calls = 5
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        trace = stack.enter_context(Trace(folder).installed())
        store = make(stack.enter_context(database(dsn, "lg_trips")), stack)
        ops = operations(store, keys, batch, -1)
        for i in range(keys):
            ops["put"](i)
        counted: dict[str, float] = {}
        for op in ("put", "batch"):
            call = ops[op]
            counted[op] = trace.count(lambda call=call: [call(i) for i in range(calls)]) / calls
    return counted


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dsn", default=None, help="a server whose user may create databases")
    parser.add_argument("--calls", type=int, default=300, help="calls per timed loop")
    parser.add_argument("--rounds", type=int, default=5, help="timed loops per store")
    parser.add_argument("--keys", type=int, default=50)
    parser.add_argument("--batch", type=int, default=10, help="puts per batch call")
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "langgraph_pg_put.json")
    )
    args = parser.parse_args()
    makers = {"BranchStore": branch_store, "PostgresStore": postgres_store}
    per_op: dict[tuple[str, str], list[float]] = {}
    with contextlib.ExitStack() as stack:
        dsn = stack.enter_context(server(args.dsn))
        stores = {
            name: make(stack.enter_context(database(dsn, f"lg_{name.lower()}")), stack)
            for name, make in makers.items()
        }
        for store in stores.values():  # every key written once: each put replaces one
            for i in range(args.keys):
                store.put(NAMESPACE, f"k{i}", {"i": i})
        for round_number in range(args.rounds):
            for name, store in stores.items():
                for op, call in operations(store, args.keys, args.batch, round_number).items():
                    seconds = timed_loop(call, args.calls)
                    if op == "batch":
                        seconds /= args.batch  # per put
                    per_op.setdefault((name, op), []).append(seconds)
        trips = {
            name: round_trips(dsn, make, args.keys, args.batch) for name, make in makers.items()
        }
    medians = {key: statistics.median(samples) for key, samples in per_op.items()}
    ratios = {
        op: medians[("BranchStore", op)] / medians[("PostgresStore", op)]
        for op in ("put", "batch", "get")
    }
    print(
        f"loops of {args.calls} calls, {args.keys} keys, batches of {args.batch} puts, "
        f"median of {args.rounds} rounds (ms per put / get)"
    )
    print(f"  {'':<28} {'BranchStore':>12} {'PostgresStore':>14} {'ratio':>7}")
    for op, what in (("put", "put"), ("batch", f"batch of {args.batch} puts"), ("get", "get")):
        ours, stock = medians[("BranchStore", op)], medians[("PostgresStore", op)]
        print(f"  {what:<28} {ours * 1e3:>12.3f} {stock * 1e3:>14.3f} {ratios[op]:>7.2f}")
    print("round trips per call (libpq's trace)")
    for op, what in (("put", "put"), ("batch", f"batch of {args.batch} puts")):
        ours, stock = trips["BranchStore"][op], trips["PostgresStore"][op]
        print(f"  {what:<28} {ours:>12.1f} {stock:>14.1f}")
    print(f"goal: put <= {GOAL:g}x PostgresStore")
    figures = {
        "calls": args.calls,
        "rounds": args.rounds,
        "keys": args.keys,
        "batch": args.batch,
        "goal": GOAL,
        "ms": {f"{name} {op}": seconds * 1e3 for (name, op), seconds in medians.items()},
        "ratios": ratios,
        "round_trips": trips,
        "load": os.getloadavg(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
