"""``BranchStore`` over PostgreSQL next to LangGraph's ``PostgresStore``, in the same run on
the same server: a loop of ``put`` calls (``--keys`` keys in turn, one call each, as an agent
writes), a loop of ``batch`` calls of ``--batch`` puts each, then a loop of ``get`` calls,
each loop timed whole, and a loop of graph runs whose one node puts (each put timed inside
the node), the two stores alternating round by round. Prints each store's median per put
(per get) and their ratio side by side (goal, issue 46: put <= 3x ``PostgresStore``), then
how many round trips one put, one batch and one put in a node take on each (libpq's trace of
every connection the stores open, counted untimed afterwards: each ``Sync`` or simple query
the client sends waits for the server once), and the client CPU psycopg alone spends sending
as many statements as a put does in as many round trips (its floor: no store's work). Writes JSON to
bench/results/langgraph_pg_put.json (bench/figures.py reads it).

``BranchStore`` stands at the head of a thread with one checkpoint (``store.at(config)``),
so every put is sourced there; ``PostgresStore`` is set up and used as its docs show. In the
graph (``durability="sync"``, so no checkpoint is still being saved when the node runs)
``BranchStore`` has a ``BranchCheckpointer`` over ``InMemorySaver`` on the same Memory, and
``PostgresStore`` a plain ``InMemorySaver``.

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
STATEMENTS = ("Execute", "Query")  # libpq's trace: each statement sent (extended, or simple)


class Stores:
    """One store at a thread's head (``view``), the store a graph is compiled with and the
    checkpointer it saves through."""

    def __init__(self, view: Any, in_graph: Any, checkpointer: Any) -> None:
        self.view, self.in_graph, self.checkpointer = view, in_graph, checkpointer


def branch_store(url: str, stack: contextlib.ExitStack) -> Stores:
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.memory import InMemorySaver

    from branchmem import Memory
    from branchmem.integrations.langgraph import BranchCheckpointer, BranchStore

    memory = stack.enter_context(Memory.open(url))
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    checkpointer = BranchCheckpointer(InMemorySaver(), memory)
    checkpointer.put(config, empty_checkpoint(), {"source": "input", "step": -1, "parents": {}}, {})
    store = BranchStore(memory)
    return Stores(store.at({"configurable": {"thread_id": "t"}}), store, checkpointer)


def postgres_store(url: str, stack: contextlib.ExitStack) -> Stores:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.postgres import PostgresStore

    store = stack.enter_context(PostgresStore.from_conn_string(url))
    store.setup()
    return Stores(store, store, InMemorySaver())


class NodePuts:
    """A graph whose one node puts a key into its store, timing the put (or, with
    ``around``, running it inside ``around``); ``run(i)`` runs the graph once."""

    def __init__(self, stores: Stores, keys: int) -> None:
        from typing import TypedDict

        from langgraph.config import get_store
        from langgraph.graph import END, START, StateGraph

        class Turn(TypedDict):
            i: int

        self.seconds: list[float] = []
        self.around: Callable[[Callable[[], object]], object] | None = None

        def node(state: Turn) -> Turn:
            i, store = state["i"], get_store()

            def put() -> None:
                store.put(NAMESPACE, f"k{i % keys}", {"i": i, "text": f"note {i}"})

            if self.around is not None:
                self.around(put)
                return state
            started = time.perf_counter()
            put()
            self.seconds.append(time.perf_counter() - started)
            return state

        builder = StateGraph(Turn)
        builder.add_node("remember", node)
        builder.add_edge(START, "remember")
        builder.add_edge("remember", END)
        self.graph = builder.compile(checkpointer=stores.checkpointer, store=stores.in_graph)

    def run(self, i: int) -> object:
        config: Any = {"configurable": {"thread_id": "node"}}
        return self.graph.invoke({"i": i}, config, durability="sync")

    def timed(self, calls: int) -> float:
        """The median put of ``calls`` runs."""
        self.seconds = []
        for i in range(calls):
            self.run(i)
        return statistics.median(self.seconds)


def timed_loop(call: Callable[[int], object], calls: int) -> tuple[float, float]:
    """Wall-clock and this process's CPU seconds per call (the CPU the client spends, in
    every thread: what no saved round trip gives back)."""
    started, cpu = time.perf_counter(), time.process_time()
    for i in range(calls):
        call(i)
    return (time.perf_counter() - started) / calls, (time.process_time() - cpu) / calls


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

    def count(
        self, calls: Callable[[], object], messages: tuple[str, ...] = ("Sync", "Query")
    ) -> int:
        """The client's waits for the server while ``calls`` runs: each ``Sync`` (extended
        protocol, one per pipeline) or ``Query`` (a simple statement) it sends; with
        ``messages=STATEMENTS``, the statements it sends."""
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
                and parts[3] in messages
            )

    def _open(self) -> list[Any]:
        return [c for c in self.connections if not c.closed]

    def _pause(self) -> None:
        for connection in self._open():
            connection.pgconn.untrace()


def round_trips(
    dsn: str, make: Callable[[str, contextlib.ExitStack], Stores], keys: int, batch: int
) -> dict[str, float]:
    """Round trips per call of ``put`` and ``batch`` on a store made fresh, warm (every key
    written once), and of a put in a graph node (``node``: the put alone, the graph's own
    checkpointing not counted), traced but not timed."""
    calls = 5
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        trace = stack.enter_context(Trace(folder).installed())
        stores = make(stack.enter_context(database(dsn, "lg_trips")), stack)
        ops = operations(stores.view, keys, batch, -1)
        for i in range(keys):
            ops["put"](i)
        counted: dict[str, float] = {}
        for op in ("put", "batch"):
            call = ops[op]
            counted[op] = trace.count(lambda call=call: [call(i) for i in range(calls)]) / calls
        put = ops["put"]
        sent = trace.count(lambda: [put(i) for i in range(calls)], STATEMENTS)
        counted["put statements"] = sent / calls
        node = NodePuts(stores, keys)
        for i in range(keys):
            node.run(i)
        in_node: list[int] = []
        node.around = lambda put: in_node.append(trace.count(put))
        for i in range(calls):
            node.run(i)
        counted["node"] = sum(in_node) / calls
    return counted


def psycopg_floor(dsn: str, statements: int, syncs: int, calls: int) -> float:
    """Client CPU seconds per call of psycopg alone sending ``statements`` two-parameter
    ``SELECT``s in ``syncs`` pipelines, on a connection set up as the stores' are: what a
    call of that many statements and round trips costs before any of the store's own work."""
    import psycopg

    with contextlib.ExitStack() as stack:
        url = stack.enter_context(database(dsn, "lg_floor"))
        connection = stack.enter_context(psycopg.connect(url, autocommit=True, prepare_threshold=5))
        shares = [statements // syncs + (i < statements % syncs) for i in range(syncs)]

        def call(_: int) -> None:
            for share in shares:
                with connection.pipeline():
                    sent = [
                        connection.execute("SELECT %s::text, %s::text", ("a", "b"))
                        for _ in range(share)
                    ]
                for cursor in sent:
                    cursor.fetchall()

        timed_loop(call, calls)  # warm: prepared, cached
        return timed_loop(call, calls)[1]


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
    cpu_per_op: dict[tuple[str, str], list[float]] = {}
    with contextlib.ExitStack() as stack:
        dsn = stack.enter_context(server(args.dsn))
        stores = {
            name: make(stack.enter_context(database(dsn, f"lg_{name.lower()}")), stack)
            for name, make in makers.items()
        }
        nodes = {name: NodePuts(made, args.keys) for name, made in stores.items()}
        for name, made in stores.items():  # every key written once: each put replaces one
            for i in range(args.keys):
                made.view.put(NAMESPACE, f"k{i}", {"i": i})
                nodes[name].run(i)
        for round_number in range(args.rounds):
            for name, made in stores.items():
                for op, call in operations(made.view, args.keys, args.batch, round_number).items():
                    seconds, cpu = timed_loop(call, args.calls)
                    if op == "batch":
                        seconds, cpu = seconds / args.batch, cpu / args.batch  # per put
                    per_op.setdefault((name, op), []).append(seconds)
                    cpu_per_op.setdefault((name, op), []).append(cpu)
                per_op.setdefault((name, "node"), []).append(nodes[name].timed(args.calls))
        trips = {
            name: round_trips(dsn, make, args.keys, args.batch) for name, make in makers.items()
        }
        put_statements = round(trips["BranchStore"]["put statements"])
        floor = psycopg_floor(dsn, put_statements, round(trips["BranchStore"]["put"]), args.calls)
    medians = {key: statistics.median(samples) for key, samples in per_op.items()}
    ratios = {
        op: medians[("BranchStore", op)] / medians[("PostgresStore", op)]
        for op in ("put", "batch", "get", "node")
    }
    print(
        f"loops of {args.calls} calls, {args.keys} keys, batches of {args.batch} puts, "
        f"median of {args.rounds} rounds (ms per put / get)"
    )
    print(f"  {'':<28} {'BranchStore':>12} {'PostgresStore':>14} {'ratio':>7}")
    for op, what in (
        ("put", "put"),
        ("batch", f"batch of {args.batch} puts"),
        ("get", "get"),
        ("node", "put in a graph node"),
    ):
        ours, stock = medians[("BranchStore", op)], medians[("PostgresStore", op)]
        print(f"  {what:<28} {ours * 1e3:>12.3f} {stock * 1e3:>14.3f} {ratios[op]:>7.2f}")
    cpu = {key: statistics.median(samples) for key, samples in cpu_per_op.items()}
    print("client CPU per put (ms, this process, every thread)")
    for op, what in (("put", "put"), ("batch", f"batch of {args.batch} puts")):
        ours, stock = cpu[("BranchStore", op)], cpu[("PostgresStore", op)]
        print(f"  {what:<28} {ours * 1e3:>12.3f} {stock * 1e3:>14.3f}")
    print(
        f"  psycopg alone: {put_statements} statements in as many pipelines as a put's "
        f"round trips {floor * 1e3:>6.3f}"
    )
    print("round trips per call (libpq's trace)")
    for op, what in (
        ("put", "put"),
        ("batch", f"batch of {args.batch} puts"),
        ("node", "put in a graph node"),
    ):
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
        "cpu_ms": {f"{name} {op}": seconds * 1e3 for (name, op), seconds in cpu.items()},
        "ratios": ratios,
        "round_trips": trips,
        "psycopg_floor_cpu_ms": floor * 1e3,
        "load": os.getloadavg(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
