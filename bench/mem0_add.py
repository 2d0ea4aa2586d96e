"""``BranchMem0.add`` next to Mem0's own ``Memory.add``, on the same state, in the same run.

Both sides are the offline Mem0 the tests use (a real ``mem0.Memory``, scripted LLM,
hashing embedder, local Qdrant in memory; no network). Each holds N memories of one user;
the wrapper's side also holds the conversation that made them (a chain of N messages, the
wrapper recording and following it, as after N class-swapped ``add`` calls) and their
records. The state is built directly (Mem0's ``_create_memory`` and the store's batch
writes): N real ``add`` calls would take the run's whole budget at 10k. Then, alternating
sides, ``add`` of one new fact with no anchor (the class swap) is timed, and inside the
wrapper's ``add`` the inner Mem0 ``add`` is timed too, so the wrapper's own share is known;
then the wrapper's own steps are timed again with no Mem0 ``add`` between them (``apart``).

Prints per N the medians and ``BranchMem0 / Mem0``; then ``t(10k)/t(1k)`` for each.
Goals (issue 46): the wrapper's cost flat in memories (t(10k)/t(1k) <= 1.5) and
``BranchMem0.add`` within 3x Mem0's own ``add``. Mem0's own ``add`` is not flat with local
Qdrant (its payload filter visits every point), so the wrapper's share is printed apart.

Writes JSON to bench/results/mem0_add.json (bench/figures.py reads it).

    python bench/mem0_add.py [--sizes 1000,10000] [--adds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from branchmem.integrations.mem0 import MEM0_KIND, BranchMem0, record_id_for
from branchmem.integrations.mem0.mirror import mirror
from branchmem.integrations.mem0.observe import Observed
from branchmem.integrations.mem0.offline import AnnotatedFact, offline_memory

USER = "u1"
BATCH = 1000


def fact(i: int) -> tuple[str, str]:
    """The message stating fact ``i`` and the memory text Mem0 stores for it."""
    return f"Note {i}: I collect item {i}.", f"User collects item {i} of set {i % 97}"


def populated(size: int) -> tuple[Any, BranchMem0]:
    """Plain Mem0 and the wrapper, each with ``size`` memories of one user."""
    plain, inner = offline_memory(), offline_memory()
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


def timed_adds(size: int, adds: int) -> dict[str, float]:
    """Median ms of Mem0's add, the wrapper's add, and the wrapper's own share of it."""
    plain, wrapped = populated(size)
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
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "mem0_add.json"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {}
    print(
        f"{'memories':>9} {'Mem0 add':>10} {'BranchMem0':>11} {'ratio':>6} {'wrapper own':>12}"
        f" {'own, apart':>11}"
    )
    for size in sizes:
        found = results[size] = timed_adds(size, args.adds)
        print(
            f"{size:>9} {found['mem0']:>8.2f}ms {found['branchmem0']:>9.2f}ms "
            f"{found['branchmem0'] / found['mem0']:>5.2f}x {found['own']:>10.2f}ms"
            f" {found['own_apart']:>9.3f}ms"
        )
    if len(sizes) > 1:
        low, high = results[sizes[0]], results[sizes[-1]]
        label = f"t({sizes[-1]})/t({sizes[0]})"
        print(
            f"{label}: Mem0 add {high['mem0'] / low['mem0']:.2f}, BranchMem0 add "
            f"{high['branchmem0'] / low['branchmem0']:.2f}, wrapper own "
            f"{high['own'] / low['own']:.2f}, its steps apart "
            f"{high['own_apart'] / low['own_apart']:.2f}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"sizes": sizes, "medians_ms": results, "load": os.getloadavg()}, indent=2)
        + "\n"
    )


if __name__ == "__main__":
    main()
