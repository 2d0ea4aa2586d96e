"""The figures table of docs/scaling.md, rebuilt from what the benchmarks of this run wrote.

``make bench`` runs every benchmark (each writes JSON to bench/results/), then this script,
which rewrites the block between the ``figures`` markers of docs/scaling.md: one row per goal
of the performance contract, the figure measured, the goal and whether it was met, with the
machine, when each benchmark wrote its JSON and the load average it recorded. A benchmark that
did not run shows as "not measured", never as an old figure: the prose around the block says
why a figure is what it is, and dated runs live here only.

    python bench/figures.py [--results bench/results] [--doc docs/scaling.md]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BEGIN = "<!-- figures:begin (bench/figures.py writes this block) -->"
END = "<!-- figures:end -->"

Row = tuple[str, str, str, bool | None]  # what, measured, goal, met


def _load(results: Path, name: str) -> dict[str, Any] | None:
    path = results / name
    return json.loads(path.read_text()) if path.exists() else None


def _ratio_row(what: str, value: float | None, goal: float, *, at_most: bool = True) -> Row:
    if value is None:
        return (what, "not measured", f"{'<=' if at_most else '>='} {goal:g}", None)
    met = value <= goal if at_most else value >= goal
    return (what, f"{value:.2f}", f"{'<=' if at_most else '>='} {goal:g}", met)


def agent_rows(results: Path) -> list[Row]:
    found = _load(results, "agent.json")
    by_read = {row["read"]: row for row in found["rows"]} if found else {}
    turns = found["turns"] if found else [1000, 10000]
    rows = []
    for backend in ("memory", "sqlite", "postgres"):
        for read in ("current()", "current(cross_tree=True)", "visible()"):
            row = by_read.get(f"{backend} {read}")
            rows.append(
                _ratio_row(
                    f"{backend} `{read}` t({turns[-1]:,} turns) / t({turns[0]:,})",
                    row["ratio"] if row else None,
                    1.5,
                )
            )
    row = by_read.get("branchmem BranchStore.get (memory)")
    rows.append(
        _ratio_row("LangGraph `BranchStore.get` t(10k) / t(1k)", row["ratio"] if row else None, 1.5)
    )
    return rows


def context_rows(results: Path) -> list[Row]:
    found = _load(results, "context.json")
    by_read = {row["read"]: row for row in found["rows"]} if found else {}
    size = f"{found['records']:,}" if found else "1,000,000"
    return [
        _ratio_row(
            f"{backend} `context()` / `visible()`, depth 200, {size} records",
            by_read[f"{backend} context()"]["ratio"] if f"{backend} context()" in by_read else None,
            1.3,
        )
        for backend in ("memory", "sqlite")
    ]


def records_rows(results: Path) -> list[Row]:
    found = _load(results, "records.json")
    sqlite = found["backends"].get("sqlite") if found else None
    rate = sqlite["batched_per_s"] if sqlite else None
    return [
        (
            "SQLite `add_records` records/s (batches of 1,000)",
            "not measured" if rate is None else f"{rate:,.0f}",
            ">= 10,000",
            None if rate is None else rate >= 10_000,
        )
    ]


def service_rows(results: Path) -> list[Row]:
    found = _load(results, "service.json")
    by_op = {row["operation"]: row for row in found["rows"]} if found else {}
    rows = []
    for op, goal in (("visible", 1.5), ("search", None)):
        row = by_op.get(op)
        for share in ("p50", "p99"):
            what = f"service / embedded `{op}()` {share}, one client, depth 200"
            value = row[f"ratio_{share}"] if row else None
            if goal is None:
                measured = "not measured" if value is None else f"{value:.2f}"
                rows.append((what, measured, "—", None))
            else:
                rows.append(_ratio_row(what, value, goal))
    worst = found["worst_p99_ratio_per_run"] if found else []
    rows.append(
        (
            f"service / embedded p99, worst operation of each of {len(worst) or 'five'} runs",
            " ".join(f"{ratio:.2f}" for ratio in worst) or "not measured",
            f"<= {found['goal_p99_ratio'] if found else 1.5:g} every run",
            found["all_within_goal"] if found else None,
        )
    )
    runs = [run["rows"] for run in found.get("runs", [])] if found else []
    for side, what in (
        ("hop", "the hop (a bare loopback socket, no HTTP) / embedded `visible()` p99"),
        ("no-direct", "server CPU the direct reads save per `visible()`, ms"),
    ):
        values = []
        for run in runs:
            row = next((row for row in run if row["operation"] == "visible"), {})
            if side == "hop" and "hop_ratio_p99" in row:
                values.append(row["hop_ratio_p99"])
            saved = (row.get("no-direct_server_cpu_ms"), row.get("server_cpu_ms"))
            if side == "no-direct" and None not in saved:
                values.append(saved[0] - saved[1])
        measured = " ".join(f"{value:.2f}" for value in values) or "not measured"
        rows.append((f"{what}, each run", measured, "—", None))
    return rows


def storage_rows(results: Path) -> list[Row]:
    found = _load(results, "storage.json")
    backends = found["backends"] if found else {}
    rows = []
    for backend, goal in (("sqlite", 1.5), ("postgresql", 2.0)):
        got = backends.get(backend)
        sizes = got["rows"] if got else []
        span = (
            f"t({sizes[-1]['records']:,}) / t({sizes[0]['records']:,})" if sizes else "t(1M)/t(10k)"
        )
        rows.append(
            _ratio_row(
                f"{backend} `visible()` at depth 200, {span} records", got and got["ratio"], goal
            )
        )
    lite, pg = backends.get("sqlite"), backends.get("postgresql")
    for kind in ("events", "records"):
        share = None
        if lite and pg:
            share = min(
                p[f"{kind}_per_s_batched"] / s[f"{kind}_per_s_batched"]
                for s, p in zip(lite["rows"], pg["rows"], strict=False)
            )
        rows.append(
            _ratio_row(
                f"PostgreSQL / SQLite batched {kind}/s, lowest over the sizes",
                share,
                0.5,
                at_most=False,
            )
        )
    return rows


def deep_path_rows(results: Path) -> list[Row]:
    found = _load(results, "deep_path.json")
    depth = f"{found['depth']:,}" if found else "100,000"
    rows = []
    for what in ("path", "explain (visible)", "explain (off path)"):
        ratio = None
        if found and what in found["seconds"]["sqlite"]:
            ratio = found["seconds"]["postgresql"][what] / found["seconds"]["sqlite"][what]
        rows.append(_ratio_row(f"PostgreSQL / SQLite `{what}` at depth {depth}", ratio, 2.0))
    return rows


def visibility_rows(results: Path) -> list[Row]:
    found = _load(results, "visibility.json")
    rows = found["rows"] if found else []
    span = f"{rows[-1]['records']:,} / {rows[0]['records']:,}" if rows else "1,000,000 / 10,000"
    largest = f"{rows[-1]['records']:,}" if rows else "1,000,000"
    speedup = rows[-1].get("speedup_vs_naive") if rows else None
    return [
        _ratio_row(
            f"in memory `visible()` median at {span} records", found and found["ratio"], 1.3
        ),
        _ratio_row(
            f"`visible()` speed-up over the naive oracle at {largest} records",
            speedup,
            100,
            at_most=False,
        ),
    ]


def decision_split_rows(results: Path) -> list[Row]:
    found = _load(results, "decision_split.json")
    size = f"{found['records']:,}" if found else "100,000"
    ratio = found["decide_over_read"] if found else None
    return [_ratio_row(f"SQLite `visible()` decide / read, depth 200, {size} records", ratio, 1)]


def footprint_rows(results: Path) -> list[Row]:
    found = _load(results, "footprint.json")
    size = f"{found['records']:,}" if found else "1,000,000"
    per_record = found["record_bytes_per_record"] if found else None
    return [
        (
            f"in-memory bytes per record, records alone, {size} records",
            "not measured" if per_record is None else f"{per_record:,.0f}",
            "<= 1,024",
            None if per_record is None else per_record <= 1024,
        )
    ]


def active_rows(results: Path) -> list[Row]:
    found = _load(results, "active_conversations.json")
    what = (
        f"`visible()` over {found['large']:,} / over {found['small']:,} active conversations, "
        "worst round"
        if found
        else "`visible()` over 10,000 / over 20 active conversations, worst round"
    )
    return [_ratio_row(what, max(found["ratios"]) if found else None, 1.3)]


def current_rows(results: Path) -> list[Row]:
    """The read an agent repeats (its answer kept under the commit stamp), the read right
    after a commit, which decides again, and the read at an agent's new turn right after
    its own write (the answer kept above it stands)."""
    found = _load(results, "current_sqlite.json")
    turns = f"{found['turns'][-1]:,}" if found else "10,000"
    over = found["over_plain"] if found else {}
    goal = found["goal"] if found else 4
    return [
        _ratio_row(
            f"SQLite `Memory.current` / a plain latest-by-key lookup (WAL), {turns} turns",
            over.get("Memory.current"),
            goal,
        ),
        _ratio_row(
            f"the same, right after a commit (decided again), {turns} turns",
            over.get("Memory.current, decided"),
            goal,
        ),
        _ratio_row(
            f"the same at an agent's new turn, right after it wrote the turn (the answer kept "
            f"above it stands), {turns} turns",
            over.get("Memory.current at an agent's new turn"),
            goal,
        ),
    ]


def mem0_add_rows(results: Path) -> list[Row]:
    """``BranchMem0.add`` beside Mem0's own ``add`` on the same state, and how each grows: the
    goals on pgvector (Mem0's own ``add`` is flat there), local Qdrant's figures beside."""
    found = _load(results, "mem0_add.json")
    stores = (found or {}).get("stores", {})
    sizes = found["sizes"] if found else [1000, 10000]
    small, large = f"{sizes[0]:,}", f"{sizes[-1]:,}"

    def grows(store: str, what: str) -> float | None:
        medians = stores.get(store)
        if not medians:
            return None
        return medians[str(sizes[-1])][what] / medians[str(sizes[0])][what]

    def over_mem0(store: str) -> float | None:
        high = stores.get(store, {}).get(str(sizes[-1]))
        return high["branchmem0"] / high["mem0"] if high else None

    def shown(value: float | None) -> str:
        return "not measured" if value is None else f"{value:.2f}"

    return [
        _ratio_row(
            f"`BranchMem0.add` / Mem0's `add`, {large} memories, pgvector", over_mem0("pgvector"), 3
        ),
        _ratio_row(
            f"`BranchMem0.add` t({large} memories) / t({small}), pgvector",
            grows("pgvector", "branchmem0"),
            1.5,
        ),
        _ratio_row(
            f"the wrapper's own share of `add`, t({large}) / t({small}), pgvector",
            grows("pgvector", "own"),
            1.5,
        ),
        _ratio_row(
            f"the wrapper's own steps timed apart (no Mem0 `add` between), t({large}) / t({small})",
            grows("pgvector", "own_apart"),
            1.5,
        ),
        (
            f"Mem0's own `add` t({large}) / t({small}), pgvector (HNSW index)",
            shown(grows("pgvector", "mem0")),
            "—",
            None,
        ),
        _ratio_row(
            f"`BranchMem0.add` / Mem0's `add`, {large} memories, local Qdrant",
            over_mem0("qdrant"),
            3,
        ),
        (
            f"`BranchMem0.add`; Mem0's own `add`; the wrapper's own share: t({large}) / "
            f"t({small}), local Qdrant (its payload filter visits every point)",
            "; ".join(shown(grows("qdrant", what)) for what in ("branchmem0", "mem0", "own"))
            if "qdrant" in stores
            else "not measured",
            "—",
            None,
        ),
    ]


def search_rows(results: Path) -> list[Row]:
    """Gated search against a plain BM25 package over the same visible texts (#44's cost goal)
    and against ungated search over the whole namespace at the largest size (the scale goal)."""
    visible = _load(results, "search_visible.json") or []
    rows: list[Row] = []
    for path in ("memory", "sqlite"):
        for size in (10_000, 100_000):
            found = next(
                (
                    row
                    for row in visible
                    if row["path"] == path and row["visible"] == size and not row["history"]
                ),
                None,
            )
            what = f"{path} gated search / `bm25s`, {size:,} visible records"
            rows.append(_ratio_row(what, found["ratio_to_bm25s"] if found else None, 3))
            latin = found.get("latin_ratio_to_bm25s") if found else None
            what = f"the same, the Latin queries alone (bm25s's tokenizer unaided), {size:,}"
            rows.append(_ratio_row(what, latin, 3))
    for path in ("memory", "sqlite"):
        for size in (10_000, 100_000):
            found = next((r for r in visible if r["path"] == path and r["visible"] == size), None)
            got = found or {}
            first, turn = got.get("after_write_ms"), got.get("after_turn_ms")
            for what, measured in (
                (
                    f"{path} first search after a write (decides the view); the second (builds "
                    f"its term index), ms, {size:,} visible records",
                    None if first is None else f"{first:,.0f}; {got['index_build_ms']:,.0f}",
                ),
                (
                    f"{path} search at an agent's new turn, after it wrote the turn and a fact "
                    f"(its view derived from the one kept), ms; × `bm25s`, {size:,} visible",
                    None
                    if turn is None
                    else f"{turn:,.2f}; {got['after_turn_ratio_to_bm25s']:.1f}",
                ),
            ):
                rows.append((what, measured or "not measured", "—", None))
    scaled = _load(results, "search.json")
    for backend in ("memory", "sqlite"):
        grown = scaled["backends"].get(backend) if scaled else None
        last = grown["rows"][-1] if grown else None
        size = f"{last['records']:,}" if last else "1,000,000"
        what = f"{backend} gated / ungated search at {size} records"
        rows.append(_ratio_row(what, last["ratio_gated_ungated"] if last else None, 1.2))
    return rows


def search_embedder_rows(results: Path) -> list[Row]:
    """What the recommended embedder adds to a search (#44: <= 5 ms a query on 2 cores):
    the query's embedding, and the whole difference, cosines and blend included."""
    found = _load(results, "search_embedder.json") or []
    rows: list[Row] = []
    for row in found or [{"visible": size} for size in (1_000, 10_000)]:
        size, median = row["visible"], row.get("median_ms")
        rows.append(
            _ratio_row(
                f"the query's embedding (`ParaphraseMiniLMEmbedder`), ms, {size:,} visible",
                median["query embedding"] if median else None,
                5,
            )
        )
        rows.append(
            _ratio_row(
                f"search with the embedder − without, ms a query (embedding, cosines, blend), "
                f"{size:,} visible",
                row.get("added_ms"),
                5,
            )
        )
        turn = row.get("after_turn_ms")
        rows.append(
            (
                f"search with the embedder at an agent's new turn (after it wrote the turn and "
                f"a fact), ms, {size:,} visible",
                "not measured" if turn is None else f"{turn:.2f}",
                "—",
                None,
            )
        )
    return rows


def langgraph_rows(results: Path) -> list[Row]:
    found = _load(results, "langgraph_store.json")
    reads = found.get("reads", {}) if found else {}
    searches = [
        row for read, row in reads.items() if read.startswith("BranchStore search(")
    ]  # the four kinds: no query, a filter, a query, both
    get = reads.get("BranchStore get()")
    small, large = found["puts"] if found else (1000, 10000)
    return [
        _ratio_row(
            f"LangGraph `BranchStore.search` t({large:,} puts) / t({small:,}), worst of the four",
            max((row["growth"] for row in searches), default=None),
            1.5,
        ),
        _ratio_row(
            "LangGraph `BranchStore.search` / `InMemoryStore.search`, worst of the four",
            max((row["over_inmemory"] for row in searches), default=None),
            5,
        ),
        _ratio_row(
            "LangGraph `BranchStore.get` / `InMemoryStore.get`, one call timed at a time",
            get and get["over_inmemory"],
            3,
        ),
        _ratio_row(
            "LangGraph `BranchStore.get` / `InMemoryStore.get`, a loop of gets timed whole",
            found and found["loop_get_ratio"],
            3,
        ),
    ]


def langgraph_pg_put_rows(results: Path) -> list[Row]:
    found = _load(results, "langgraph_pg_put.json")
    ratios = found["ratios"] if found else {}
    size = found["batch"] if found else 10
    trips = found["round_trips"] if found else {}
    ours, stock = trips.get("BranchStore", {}), trips.get("PostgresStore", {})
    return [
        _ratio_row(
            "LangGraph `BranchStore.put` / `PostgresStore.put` on PostgreSQL, a loop of puts",
            ratios.get("put"),
            found["goal"] if found else 3,
        ),
        _ratio_row(
            f"LangGraph `BranchStore.batch` / `PostgresStore.batch` of {size} puts, per put",
            ratios.get("batch"),
            found["goal"] if found else 3,
        ),
        (
            f"LangGraph round trips of a put; of a batch of {size} puts: BranchStore / "
            "PostgresStore",
            f"{ours['put']:g} / {stock['put']:g}; {ours['batch']:g} / {stock['batch']:g}"
            if ours and stock
            else "not measured",
            "—",
            None,
        ),
        _client_cpu_row(found),
    ]


def _client_cpu_row(found: dict[str, Any] | None) -> Row:
    """Client CPU of a put beside what psycopg alone spends on as many statements in as many
    round trips: how far fewer round trips could bring the ratio."""
    label = (
        "LangGraph client CPU per put, ms: BranchStore; psycopg alone for as many statements "
        "in as many round trips; PostgresStore"
    )
    cpu = found.get("cpu_ms", {}) if found else {}
    floor = found.get("psycopg_floor_cpu_ms") if found else None
    if floor is None or "BranchStore put" not in cpu:
        return (label, "not measured", "—", None)
    value = f"{cpu['BranchStore put']:.2f}; {floor:.2f}; {cpu['PostgresStore put']:.2f}"
    return (label, value, "—", None)


def ingest_floor_rows(results: Path) -> list[Row]:
    found = _load(results, "ingest_floor.json")
    return [
        _ratio_row(
            "SQLite batched ingest / `executemany` into plain tables (items/s)",
            found and found["ratio"],
            0.3,
            at_most=False,
        )
    ]


READS_ANSWERED = ("get_event", "get_revisions", "current()", "visible()")


def answer_cost_rows(results: Path) -> list[Row]:
    """What the backends' own per-item reads buy over ``Store``'s wrappers over ``answer``:
    no goal, the cost of making those reads final."""
    found = _load(results, "answer_cost.json")
    pairs = found["pairs"] if found else {}
    turns = found["turns"] if found else 10000
    rows = []
    for backend, label in (("memory", "in memory"), ("sqlite", "SQLite")):
        ratios = [pairs.get(f"{backend} {read}", {}).get("ratio") for read in READS_ANSWERED]
        rows.append(
            (
                f"{label}, every per-item read through `answer` / the backend's own: "
                f"`get_event`; `get_revisions`; `current()` and `visible()` decided, "
                f"{turns:,} turns",
                "; ".join(f"{r:.2f}" for r in ratios) if None not in ratios else "not measured",
                "—",
                None,
            )
        )
    built = found.get("question_and_answer_built_us") if found else None
    rows.append(
        (
            "a single-id question and its empty answer built, nothing read, µs",
            "not measured" if built is None else f"{built:.2f}",
            "—",
            None,
        )
    )
    return rows


def load_rows(results: Path) -> list[Row]:
    found = _load(results, "load.json")
    if not found:
        return [
            ("requests/s; all p50 / p99 ms", "not measured", "—", None),
            ("errors; acknowledged writes lost", "not measured", "0; 0", None),
        ]
    every = found["all"]
    return [
        (
            "requests/s; all p50 / p99 ms",
            f"{found['requests_per_s']:,.0f}; {every['p50_ms']:,.0f} / {every['p99_ms']:,.0f}",
            "—",
            None,
        ),
        (
            "errors; acknowledged writes lost",
            f"{found['errors']}; {found['lost']} of {found['acknowledged']:,}",
            "0; 0",
            found["errors"] == 0 and found["lost"] == 0,
        ),
    ]


def erase_soak_rows(results: Path) -> list[Row]:
    """Erasures interleaved with writes, then every erased byte looked for (docs/propagation.md)."""
    found = _load(results, "erase_soak.json")
    rows: list[Row] = []
    for name in ("SQLite", "PostgreSQL"):
        run = next(
            (r for r in (found or {}).get("backends", []) if r["backend"].startswith(name)), None
        )
        what = f"{name}: erasures; failures; erased markers found; integrity; kept markers found"
        if run is None:
            rows.append((what, "not measured", "—; 0; 0; ok; all", None))
            continue
        failures = sum(run["failures"].values())
        rate = run["rounds"] / run["seconds"] if run["seconds"] else 0.0
        measured = (
            f"{run['rounds']:,}; {failures}; {run['residues']}; {run['integrity']}; "
            f"{run['kept_found']:,} ({rate:.1f} erasures/s)"
        )
        met = (
            not failures
            and not run["residues"]
            and str(run["integrity"]).startswith("ok")
            and run["kept_found"] == run["rounds"]
        )
        rows.append((what, measured, "—; 0; 0; ok; all", met))
    return rows


def disk_rows(results: Path) -> list[Row]:
    found = _load(results, "disk.json")
    what = (
        f"SQLite store / plain-table floor at {found['records']:,} records"
        if found
        else ("SQLite store / plain-table floor at 1,000,000 records")
    )
    return [_ratio_row(what, found["ratio"] if found else None, 3.0)]


SECTIONS: list[tuple[str, Callable[[Path], list[Row]]]] = [
    ("visibility at 10k to 1M records (bench/visibility.py)", visibility_rows),
    ("reading and deciding (bench/decision_split.py)", decision_split_rows),
    ("agent history (bench/agent_history.py)", agent_rows),
    ("many active conversations (bench/active_conversations.py)", active_rows),
    ("`current()` against a plain lookup (bench/current_sqlite.py)", current_rows),
    ("Mem0 `add` (bench/mem0_add.py)", mem0_add_rows),
    ("LangGraph stores (bench/langgraph_store.py)", langgraph_rows),
    ("LangGraph `put` on PostgreSQL (bench/langgraph_pg_put.py)", langgraph_pg_put_rows),
    ("search (bench/search_visible.py, bench/search.py)", search_rows),
    ("search with an embedder (bench/search_embedder.py)", search_embedder_rows),
    ("context (bench/context.py)", context_rows),
    ("bulk records (bench/records.py)", records_rows),
    ("ingest against its floor (bench/ingest_floor.py)", ingest_floor_rows),
    ("per-item reads through `answer` (bench/answer_cost.py)", answer_cost_rows),
    ("storage at 10k to 1M records (bench/storage.py)", storage_rows),
    ("depth 100,000 (bench/deep_path.py)", deep_path_rows),
    ("disk (bench/disk.py)", disk_rows),
    ("erasure soak (bench/erase_soak.py)", erase_soak_rows),
    ("memory per record (bench/footprint.py)", footprint_rows),
    ("service overhead (bench/service.py)", service_rows),
    ("two workers, 50 clients (bench/load.py)", load_rows),
]


def table(results: Path) -> str:
    """The block: each benchmark's row under the time its JSON was written and the load
    then, since a block may join runs of different days (one benchmark re-run alone)."""
    ended = []
    for path in sorted(results.glob("*.json")):
        found = json.loads(path.read_text())
        load = found.get("load") if isinstance(found, dict) else None  # some write a list
        when = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.UTC)
        ended.append(
            f"{path.stem} {when:%Y-%m-%d %H:%M}" + (f", load {load[0]:.1f}" if load else "")
        )
    lines = [
        BEGIN,
        f"Rebuilt {datetime.date.today().isoformat()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, from what each benchmark "
        "wrote (when it ended, UTC, and its 1-minute load average then: "
        f"{'; '.join(ended) or 'none ran'}).",
        "",
        "| figure | measured | goal | met |",
        "|---|---:|---:|:---:|",
    ]
    for title, rows_of in SECTIONS:
        lines.append(f"| **{title}** | | | |")
        for what, measured, goal, met in rows_of(results):
            mark = "—" if met is None else ("yes" if met else "**no**")
            lines.append(f"| {what} | {measured} | {goal} | {mark} |")
    lines.append(END)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--results", default=str(HERE / "results"))
    parser.add_argument("--doc", default=str(HERE.parent / "docs" / "scaling.md"))
    args = parser.parse_args()
    doc = Path(args.doc)
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{doc}: no figures block ({BEGIN} ... {END})")
    before, rest = text.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    block = table(Path(args.results))
    doc.write_text(before + block + after)
    print(block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
