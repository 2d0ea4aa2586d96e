"""One very deep conversation: ``path()`` and ``explain()`` at depth 100,000, side by side.

Each backend (SQLite, PostgreSQL) gets one chain of ``--depth`` events (written with
``add_events`` in batches) and two records: one citing the root, one citing an event of a
side branch near the top. It times ``path(anchor)`` at the deepest event and ``explain()`` of
both records there (median of ``--repeat`` calls, after one untimed call), and prints
PostgreSQL / SQLite for each (goal: <= 2). PostgreSQL is the server given with ``--pg-dsn``
(or ``BRANCHMEM_TEST_PG_DSN``), else a throwaway embedded one. No ``ANALYZE`` is run: the
queries must keep their plan on a freshly loaded table.

    python bench/deep_path.py [--depth 100000] [--repeat 5] [--pg-dsn URL]
"""

from __future__ import annotations

import argparse
import contextlib
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


def timed(call: Callable[[], object], repeat: int) -> float:
    call()  # untimed: caches and prepared statements warm up alike on both backends
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(mem: Memory, depth: int, repeat: int) -> dict[str, float]:
    started = time.perf_counter()
    anchor = build(mem, depth)
    built = time.perf_counter() - started
    path = mem.path(anchor)
    assert len(path) == depth, len(path)
    on = mem.explain("on-path", anchor=anchor)
    off = mem.explain("off-path", anchor=anchor)
    assert on.visible and not off.visible and off.fork == f"e{depth // 2}", (on, off)
    return {
        "build s": built,
        "path": timed(lambda: mem.path(anchor), repeat),
        "explain (visible)": timed(lambda: mem.explain("on-path", anchor=anchor), repeat),
        "explain (off path)": timed(lambda: mem.explain("off-path", anchor=anchor), repeat),
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
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    for name, opened in (("sqlite", sqlite()), ("postgresql", postgres(args.pg_dsn))):
        with opened as mem:
            results[name] = measure(mem, args.depth, args.repeat)
        print(
            f"{name}: built {args.depth:,} events in {results[name]['build s']:.1f} s", flush=True
        )
    print(
        f"\n{'depth ' + format(args.depth, ','):<22} {'SQLite s':>9} {'PG s':>9} {'PG/SQLite':>10}"
    )
    for what in ("path", "explain (visible)", "explain (off path)"):
        lite, pg = results["sqlite"][what], results["postgresql"][what]
        print(f"{what:<22} {lite:9.3f} {pg:9.3f} {pg / lite:9.2f}x")
    worst = max(
        results["postgresql"][w] / results["sqlite"][w]
        for w in ("path", "explain (visible)", "explain (off path)")
    )
    print(
        f"worst PostgreSQL / SQLite: {worst:.2f} (goal <= {GOAL}); "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
