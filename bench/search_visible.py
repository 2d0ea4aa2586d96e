"""Gated search over 10k and 100k *visible* records against an ungated bm25s query over the
same texts, side by side in one run (docs/retrieval.md "Speed").

One conversation of N turns, each with one record citing it (chat-like text from
bench/search.py's Zipf vocabulary), so every record is visible at the last turn: the worst
case for a gated search, which ranks what the anchor sees. At each size the same queries go,
in interleaved rounds, to ``Memory.search(query, anchor, k=10)`` (in memory, then on SQLite)
and to a ``bm25s`` index built once over the same texts (tokenise the query, score, top
10; CJK runs written as bigrams for it, ``cjk_bigrams``, so its Chinese queries find what
they ask for; the ratio over the Latin queries alone, bm25s's tokenizer unaided, is printed
beside).
Before them, one record is written and the first two searches are timed apart: the first
after a write decides the view, the second builds the view's term index
(_engine/viewcache.py); the queries after use both, as an agent asking several questions of
one view between writes does. After them, ``--turns`` agent turns: each writes an event
below the anchor and a fact on it, then searches at the new event, whose view is derived
from the one kept before the write (_engine/derive.py). Nothing is asserted: the table
prints median and p95 latency, the ratio gated / bm25s, those two first searches and the
agent turns' median.

    python bench/search_visible.py [--sizes 10000,100000] [--queries 50] [--history 0]
                                   [--turns 20]

``--history H`` first writes H more turns on an abandoned branch (not visible): the gated
cost should not move with them. The turns alternate speakers, user and assistant, as a chat
does, so search weighs the assistant's records (docs/retrieval.md "Whose words") and ranks
further down its index when they lead; ``--one-speaker`` writes every turn as the user's.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from branchmem import Memory
from search import Vocabulary
from storage import percentile


def grow(
    mem: Memory,
    texts: list[str],
    history: int,
    rng: random.Random,
    vocabulary: Vocabulary,
    *,
    speakers: tuple[str, ...] = ("user", "assistant"),
) -> str:
    """The main line (one record per turn, the turns' roles taking ``speakers`` in turn)
    after ``history`` abandoned turns; returns the anchor."""
    batch = 2000
    if history:
        mem.add_event("root")
        side = [
            {"id": f"x{i}", "parent": "root" if i == 0 else f"x{i - 1}", "content": "x"}
            for i in range(history)
        ]
        for start in range(0, history, batch):
            mem.add_events(side[start : start + batch])
            mem.add_records(
                {"id": f"xr{i}", "sources": [f"x{i}"], "content": vocabulary.text(rng)}
                for i in range(start, min(history, start + batch))
            )
    first_parent = "root" if history else None
    for start in range(0, len(texts), batch):
        mem.add_events(
            {
                "id": f"e{i}",
                "parent": first_parent if i == 0 else f"e{i - 1}",
                "role": speakers[i % len(speakers)],
                "content": "turn",
            }
            for i in range(start, min(len(texts), start + batch))
        )
        mem.add_records(
            {"id": f"r{i}", "sources": [f"e{i}"], "content": texts[i]}
            for i in range(start, min(len(texts), start + batch))
        )
    return f"e{len(texts) - 1}"


# a run of CJK characters (ideographs, kana, hangul): written without spaces
CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


def cjk_bigrams(text: str) -> str:
    """``text`` with each CJK run written as its overlapping bigrams, space-separated (as
    Lucene's CJK analyzer splits it): bm25s's ``\\w\\w+`` tokens would take a Chinese
    record whole, one token no query matches, and answer half the queries by finding
    nothing. The Latin words are left to bm25s's own tokenizer."""

    def split(match: re.Match[str]) -> str:
        run = match.group()
        return " ".join(run[i : i + 2] for i in range(max(1, len(run) - 1)))

    return CJK_RUN.sub(lambda match: f" {split(match)} ", text)


def bm25s_index(texts: list[str]) -> Any:
    import bm25s  # type: ignore[import-untyped, import-not-found, unused-ignore]

    index = bm25s.BM25()
    tokens = bm25s.tokenize([cjk_bigrams(t) for t in texts], stopwords="en", show_progress=False)
    index.index(tokens, show_progress=False)
    return index


def bm25s_query(index: Any, query: str, k: int) -> list[int]:
    import bm25s  # type: ignore[import-untyped, import-not-found, unused-ignore]

    tokens = bm25s.tokenize(
        [cjk_bigrams(query)], stopwords="en", return_ids=False, show_progress=False
    )[0]
    if not tokens:
        return []
    scores = index.get_scores(tokens)
    top = scores.argsort()[::-1][:k]
    return [int(i) for i in top if scores[i] > 0]


def agent_turns(
    stores: dict[str, Memory],
    anchors: dict[str, str],
    queries: list[str],
    turns: int,
    k: int,
    rng: random.Random,
    vocabulary: Vocabulary,
    first: int = 0,
) -> dict[str, list[float]]:
    """Seconds of each search an agent makes at its new turn: it writes the turn (an event
    below the anchor) and a fact on it, then searches there, ``turns`` times, the stores
    interleaved. The view kept before the write is what the search derives its own from."""
    found: dict[str, list[float]] = {name: [] for name in stores}
    for turn in range(first, first + turns):
        text, query = vocabulary.text(rng), queries[turn % len(queries)]
        for name, mem in stores.items():
            event = f"turn{turn}"
            mem.add_event(event, anchors[name], role="user", content="turn")
            mem.add_record(f"fact{turn}", sources=[event], content=text)
            anchors[name] = event
            started = time.perf_counter()
            mem.search(query, event, k=k)
            found[name].append(time.perf_counter() - started)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--history", type=int, default=0)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--turns", type=int, default=20, help="agent turns timed after")
    parser.add_argument("--out", type=Path, default=Path("bench/results/search_visible.json"))
    parser.add_argument(
        "--one-speaker", action="store_true", help="every turn the user's (default: alternate)"
    )
    args = parser.parse_args()
    speakers = ("user",) if args.one_speaker else ("user", "assistant")
    vocabulary = Vocabulary.make()
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        rng = random.Random(size)
        texts = [vocabulary.text(rng) for _ in range(size)]
        queries = [vocabulary.query(rng) for _ in range(args.queries)]
        index = bm25s_index(texts)
        with tempfile.TemporaryDirectory() as folder:
            stores = {"memory": Memory(), "sqlite": Memory.open(Path(folder) / "v.db")}
            anchors = {
                name: grow(mem, texts, args.history, rng, vocabulary, speakers=speakers)
                for name, mem in stores.items()
            }
            times: dict[str, list[float]] = {name: [] for name in [*stores, "bm25s"]}
            first: dict[str, dict[str, float]] = {}
            for name, mem in stores.items():  # after a write: the view decided, then indexed
                mem.add_record(f"w{name}", sources=[anchors[name]], content=vocabulary.text(rng))
                first[name] = {}
                for step in ("decided", "indexed"):
                    started = time.perf_counter()
                    mem.search(queries[0], anchors[name], k=args.k)
                    first[name][step] = 1000 * (time.perf_counter() - started)
            for query in queries:  # interleaved: load weighs on every side alike
                for name, mem in stores.items():
                    started = time.perf_counter()
                    mem.search(query, anchors[name], k=args.k)
                    times[name].append(time.perf_counter() - started)
                started = time.perf_counter()
                bm25s_query(index, query, args.k)
                times["bm25s"].append(time.perf_counter() - started)
            turns = agent_turns(stores, anchors, queries, args.turns, args.k, rng, vocabulary)
            for mem in stores.values():
                mem.close()
        base = statistics.median(times["bm25s"])
        latin = [n for n, query in enumerate(queries) if not CJK_RUN.search(query)]
        latin_base = statistics.median([times["bm25s"][n] for n in latin]) if latin else None
        for name, values in times.items():
            latin_median = statistics.median([values[n] for n in latin]) if latin else None
            row = {
                "visible": size,
                "history": args.history,
                "speakers": len(speakers),
                "path": name,
                "median_ms": 1000 * statistics.median(values),
                "p95_ms": 1000 * percentile(values, 95),
                "ratio_to_bm25s": statistics.median(values) / base,
                # the queries without CJK, where bm25s's tokenizer is its own throughout
                "latin_queries": len(latin),
                "latin_ratio_to_bm25s": (
                    latin_median / latin_base if latin_median and latin_base else None
                ),
                # the first search after a write decides the view; the second builds its
                # term index; the rest (the median) use both (_engine/viewcache.py)
                "after_write_ms": first.get(name, {}).get("decided"),
                "index_build_ms": first.get(name, {}).get("indexed"),
                # a search at an agent's new turn, after it wrote the turn and a fact on it,
                # its view derived from the one kept before (_engine/derive.py)
                "after_turn_ms": 1000 * statistics.median(turns[name]) if name in turns else None,
                "after_turn_ratio_to_bm25s": (
                    statistics.median(turns[name]) / base if name in turns else None
                ),
            }
            rows.append(row)
            cold = ""
            if name in first:
                cold = (
                    f"  first after a write {row['after_write_ms']:8.1f} ms,"
                    f" second {row['index_build_ms']:8.1f} ms,"
                    f" after an agent's turn {row['after_turn_ms']:6.2f} ms"
                    f" (×{row['after_turn_ratio_to_bm25s']:.1f} bm25s)"
                )
            print(
                f"{size:>7} visible  history {args.history:>6}  {name:<7} median"
                f" {row['median_ms']:8.2f} ms  p95 {row['p95_ms']:8.2f} ms"
                f"  ×{row['ratio_to_bm25s']:.1f} bm25s"
                f" (Latin queries ×{row['latin_ratio_to_bm25s'] or 0:.1f}){cold}",
                flush=True,
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
