"""One very deep conversation: ``path()`` and ``explain()`` at depth 100,000, side by side.

Each backend (SQLite, PostgreSQL) gets one chain of ``--depth`` events (written with
``add_events`` in batches) and two records: one citing the root, one citing an event of a
side branch halfway down. It times ``path(anchor)`` at the deepest event and ``explain()`` of
both records there (median of ``--repeat`` calls after one untimed call; the backends take
turns call by call, so the machine's load falls on both alike) and prints PostgreSQL / SQLite
for each (goal: <= 2). PostgreSQL is the server given with ``--pg-dsn`` (or
``BRANCHMEM_TEST_PG_DSN``), else a throwaway embedded one.

    python bench/deep_path.py [--depth 100000] [--repeat 5] [--pg-dsn URL]
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

sys.path.insert(0, str(Path(__file__).parent))

from branchmem import Memory
from pgserver import database, server

GOAL = 2.0  # PostgreSQL / SQLite


def build(mem: Memory, depth: int, batch: int = 5_000) -> str:
    """A chain of ``depth`` events plus a side branch; returns the deepest event."""
    for start in range(0, depth, batch):
        mem.add_events(
            [
                {"id": f"e{i}", "parent": f"e{i - 1}" if i else None, "content": f"turn {i}"}
                for i in range(start, min(depth, start + batch))
            ]
        )
    mem.add_events([{"id": "side", "parent": f"e{depth // 2}", "content": "an edit"}])
    mem.add_record("on-path", sources=["e0"], content="said at the start")
    mem.add_record("off-path", sources=["side"], content="said on a sibling")
    return f"e{depth - 1}"


def build_checked(mem: Memory, depth: int) -> tuple[str, float]:
    started = time.perf_counter()
    anchor = build(mem, depth)
    built = time.perf_counter() - started
    assert len(mem.path(anchor)) == depth
    on = mem.explain("on-path", anchor=anchor)
    off = mem.explain("off-path", anchor=anchor)
    assert on.visible and not off.visible and off.fork == f"e{depth // 2}", (on, off)
    return anchor, built


READS: dict[str, Callable[[Memory, str], object]] = {
    "path": lambda mem, anchor: mem.path(anchor),
    "explain (visible)": lambda mem, anchor: mem.explain("on-path", anchor=anchor),
    "explain (off path)": lambda mem, anchor: mem.explain("off-path", anchor=anchor),
}


def measure(stores: dict[str, tuple[Memory, str]], repeat: int) -> dict[str, dict[str, float]]:
    """Median seconds per read and backend; the backends take turns call by call, so a
    change in the machine's load falls on both alike."""
    times: dict[str, dict[str, list[float]]] = {name: {} for name in stores}
    for what, read in READS.items():
        for mem, anchor in stores.values():
            read(mem, anchor)  # untimed: caches and prepared statements warm up alike
        for _ in range(repeat):
            for name, (mem, anchor) in stores.items():
                started = time.perf_counter()
                read(mem, anchor)
                times[name].setdefault(what, []).append(time.perf_counter() - started)
    return {
        name: {what: statistics.median(found) for what, found in reads.items()}
        for name, reads in times.items()
    }


@contextlib.contextmanager
def sqlite() -> Iterator[Memory]:
    with tempfile.TemporaryDirectory() as folder, Memory.open(Path(folder) / "deep.db") as mem:
        yield mem


@contextlib.contextmanager
def postgres(dsn: str | None) -> Iterator[Memory]:
    with server(dsn) as base, database(base, "branchmem_deep") as url, Memory.open(url) as mem:
        yield mem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pg-dsn", default=os.environ.get("BRANCHMEM_TEST_PG_DSN") or None)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "deep_path.json"))
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        stores: dict[str, tuple[Memory, str]] = {}
        for name, opened in (("sqlite", sqlite()), ("postgresql", postgres(args.pg_dsn))):
            mem = stack.enter_context(opened)
            anchor, built = build_checked(mem, args.depth)
            stores[name] = (mem, anchor)
            print(f"{name}: built {args.depth:,} events in {built:.1f} s", flush=True)
        results = measure(stores, args.repeat)
    print(
        f"\n{'depth ' + format(args.depth, ','):<22} {'SQLite s':>9} {'PG s':>9} {'PG/SQLite':>10}"
    )
    for what in READS:
        lite, pg = results["sqlite"][what], results["postgresql"][what]
        print(f"{what:<22} {lite:9.3f} {pg:9.3f} {pg / lite:9.2f}x")
    worst = max(results["postgresql"][w] / results["sqlite"][w] for w in READS)
    print(
        f"worst PostgreSQL / SQLite: {worst:.2f} (goal <= {GOAL}); "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            {"depth": args.depth, "seconds": results, "load": os.getloadavg(), "goal": GOAL},
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
