"""How ``visible()`` at depth ~200 on SQLite splits between reading and deciding.

A whole view (``visibility.View``) reads its candidates and the facts the rules ask about
(statuses, superseders, retractions) from the store, then decides in Python. This builds
chat-like histories (``bench/chatlike.py``) in a SQLite file and, for each query, builds the
view on a reader that times every store call, so one run measures both sides: read = the
time inside store calls, decide = the rest of ``View.decisions()``. It prints the medians and
the ratio decide / read (goal: <= 1, issue 26), and writes them as JSON to
bench/results/decision_split.json (bench/figures.py reads it).

    python bench/decision_split.py [--full] [--queries 100]

The default is 10k records (a short run); ``--full`` builds 100k.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from branchmem import Memory
from branchmem._core.visibility import STRICT, View
from branchmem.store.sqlite import SQLiteStore
from chatlike import conversations


class TimedReader:
    """The store, with the time spent inside each of its calls summed in ``seconds``."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.seconds = 0.0

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._store, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        return timed


def build(path: Path, size: int) -> tuple[Memory, SQLiteStore, list[str]]:
    store = SQLiteStore(path)
    mem = Memory(store=store, path_events_per_entry=None)  # always the whole view
    anchors: list[str] = []
    for conv in conversations(size):
        mem.add_events(conv.events)
        for start in range(0, len(conv.records), 500):
            mem.add_records(conv.records[start : start + 500])
        anchors.append(conv.main_line[200])
    gc.collect()
    return mem, store, anchors


def split(store: SQLiteStore, anchor: str) -> tuple[float, float, int]:
    """(read seconds, decide seconds, records shown) for one whole view at ``anchor``."""
    reader = TimedReader(store)
    started = time.perf_counter()
    with store.reading("default"):
        view = View(reader, "default", anchor, STRICT)
        decisions = view.decisions()
    total = time.perf_counter() - started
    return reader.seconds, total - reader.seconds, len(decisions)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--full", action="store_true", help="100k records (default 10k)")
    parser.add_argument("--records", type=int, default=None)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "decision_split.json")
    )
    args = parser.parse_args()
    size = args.records or (100_000 if args.full else 10_000)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        mem, store, anchors = build(Path(tmp) / "split.db", size)
        built = time.perf_counter() - started
        rng = random.Random(1)
        reads: list[float] = []
        decides: list[float] = []
        shown = 0
        for _ in range(args.queries):
            anchor = rng.choice(anchors)
            read, decide, count = split(store, anchor)
            reads.append(read)
            decides.append(decide)
            shown += count
        totals: list[float] = []
        for _ in range(args.queries):  # the public call, for scale
            anchor = rng.choice(anchors)
            started = time.perf_counter()
            mem.visible(anchor)
            totals.append(time.perf_counter() - started)
        store.close()
    read_ms = statistics.median(reads) * 1000
    decide_ms = statistics.median(decides) * 1000
    figures = {
        "records": size,
        "build_s": built,
        "decisions_per_view": shown / args.queries,
        "read_ms": read_ms,
        "decide_ms": decide_ms,
        "decide_over_read": decide_ms / read_ms,
        "visible_ms": statistics.median(totals) * 1000,
    }
    print(
        f"SQLite, {size:,} records, anchors at depth 200, {args.queries} views "
        f"(built in {built:.0f} s, {figures['decisions_per_view']:.0f} decisions a view)"
    )
    print(f"  read candidates and facts  median {read_ms:8.2f} ms")
    print(f"  decide                     median {decide_ms:8.2f} ms")
    print(f"  decide / read              {figures['decide_over_read']:8.2f} (goal <= 1)")
    print(f"  visible() end to end       median {figures['visible_ms']:8.2f} ms")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({**figures, "load": os.getloadavg()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
