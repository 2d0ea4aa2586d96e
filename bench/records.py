"""Record ingest: ``add_record`` one by one against ``add_records`` in batches, side by side.

Each backend (in memory, SQLite) gets two fresh stores holding the same events (conversations
of ``--depth`` turns); then the same records, each citing one or two events of a conversation,
are written into one store with ``add_record`` (one transaction each) and into the other with
``add_records`` (``--batch`` records per call, one transaction each). It prints records/s of
both and their ratio, against the goal of >= 10,000 records/s batched on SQLite. PostgreSQL
joins when a server is given (``--pg-dsn`` or ``BRANCHMEM_TEST_PG_DSN``; a fresh namespace
per store).

    python bench/records.py [--records 10000] [--one-by-one 10000] [--batch 1000] [--pg-dsn URL]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from branchmem import Memory

GOAL = 10_000  # records/s batched on SQLite


def events(count: int, depth: int) -> list[dict[str, Any]]:
    """``count`` events as conversations of ``depth`` turns."""
    return [
        {"id": f"e{i}", "parent": None if i % depth == 0 else f"e{i - 1}", "content": f"turn {i}"}
        for i in range(count)
    ]


def records(count: int, event_count: int, seed: int = 7) -> list[dict[str, Any]]:
    """Records citing one or two events of one conversation; one in ten is keyed."""
    rng = random.Random(seed)
    made: list[dict[str, Any]] = []
    for i in range(count):
        first = rng.randrange(event_count)
        sources = [f"e{first}"] + ([f"e{first - 1}"] if first and rng.random() < 0.5 else [])
        spec: dict[str, Any] = {"id": f"r{i}", "sources": sources, "content": f"fact {i}"}
        if i % 10 == 0:
            spec["key"] = f"k{i % 50}"
        made.append(spec)
    return made


def chunks(items: list[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def one_by_one(mem: Memory, specs: list[dict[str, Any]], namespace: str) -> int:
    for spec in specs:
        mem.add_record(**spec, namespace=namespace)
    return len(specs)


def batched(mem: Memory, specs: list[dict[str, Any]], namespace: str, size: int) -> int:
    return sum(len(mem.add_records(chunk, namespace=namespace)) for chunk in chunks(specs, size))


def measure(open_memory: Callable[[str], Memory], args: argparse.Namespace) -> tuple[float, float]:
    """(one-by-one records/s, batched records/s) on two stores holding the same events."""
    event_specs = events(args.events, args.depth)
    specs = records(max(args.records, args.one_by_one), args.events)
    rates = []
    for mode in ("one", "batch"):
        mem = open_memory(mode)
        namespace = f"{mode}-{uuid.uuid4().hex[:8]}"  # a store both modes share keeps them apart
        for chunk in chunks(event_specs, 1000):
            mem.add_events(chunk, namespace=namespace)
        start = time.perf_counter()
        if mode == "one":
            written = one_by_one(mem, specs[: args.one_by_one], namespace)
        else:
            written = batched(mem, specs[: args.records], namespace, args.batch)
        rates.append(written / (time.perf_counter() - start))
        mem.close()
    return rates[0], rates[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000, help="records written batched")
    parser.add_argument("--one-by-one", type=int, default=10_000, help="records one by one")
    parser.add_argument("--batch", type=int, default=1_000, help="records per add_records")
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=200, help="turns per conversation")
    parser.add_argument("--pg-dsn", default=os.environ.get("BRANCHMEM_TEST_PG_DSN", ""))
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "records.json"))
    args = parser.parse_args()
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        backends: dict[str, Callable[[str], Memory]] = {
            "memory": lambda mode: Memory(),
            "sqlite": lambda mode: Memory.open(str(Path(folder) / f"{mode}.db")),
        }
        if args.pg_dsn:
            backends["postgres"] = lambda mode: Memory.open(args.pg_dsn)
        print(f"{'backend':8} {'one by one/s':>14} {'batched/s':>12} {'ratio':>7}")
        batched_sqlite = 0.0
        for name, open_memory in backends.items():
            one, batched = measure(open_memory, args)
            print(f"{name:8} {one:14,.0f} {batched:12,.0f} {batched / one:6.1f}x")
            rows[name] = {"one_by_one_per_s": one, "batched_per_s": batched}
            if name == "sqlite":
                batched_sqlite = batched
    verdict = "meets" if batched_sqlite >= GOAL else "misses"
    print(
        f"add_records on SQLite: {batched_sqlite:,.0f} records/s in batches of {args.batch} "
        f"({verdict} the goal of {GOAL:,}/s)"
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps({"batch": args.batch, "backends": rows, "load": os.getloadavg()}, indent=2)
    )


if __name__ == "__main__":
    main()
