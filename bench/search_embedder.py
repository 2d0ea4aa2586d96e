"""What the recommended embedder adds to a search, side by side in one run (#44's cost goal:
the embedder adds <= 5 ms a query on 2 cores).

One conversation of N turns, each with one record citing it (bench/search.py's Zipf texts,
alternating speakers), written twice: into a ``Memory`` without an embedder and into one
with ``ParaphraseMiniLMEmbedder`` (every record embedded when written, in batches). At each
size the same queries go, in interleaved rounds, to the query's embedding alone
(``embed([query])``), to the plain search and to the blended one (both at the last turn,
``k=10``, each view kept from the searches before, as an agent asking several questions of
one view between writes has it). The embedding is the goal's figure; the blended search
also scores every visible record's cosine to the query (one pass over the vectors,
``embedding.VectorTable``) and ranks every candidate, and the table prints that whole
difference too. Last, ``min(20, --queries)`` agent turns: each writes a turn and a fact on
it, then searches at the new turn with the embedder (the view, its vectors' matrix and
their alignment derived from the ones kept before the write). Nothing is asserted.

    python bench/search_embedder.py [--sizes 1000,10000] [--queries 50]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from branchmem import Memory
from branchmem.search.embedding import ParaphraseMiniLMEmbedder
from search import Vocabulary
from search_visible import grow
from storage import percentile


def measure(
    embedder: ParaphraseMiniLMEmbedder, vocabulary: Vocabulary, size: int, queries: int, k: int
) -> dict[str, Any]:
    """One size: both Memories written, then the three sides timed in interleaved rounds."""
    rng = random.Random(size)
    texts = [vocabulary.text(rng) for _ in range(size)]
    asked = [vocabulary.query(rng) for _ in range(queries)]
    plain, blended = Memory(), Memory(embedder=embedder)
    started = time.perf_counter()
    anchor = grow(blended, texts, 0, random.Random(0), vocabulary)
    written = time.perf_counter() - started
    grow(plain, texts, 0, random.Random(0), vocabulary)
    sides: dict[str, Callable[[str], object]] = {
        "query embedding": lambda query: embedder.embed([query]),
        "search": lambda query: plain.search(query, anchor, k=k),
        "search + embedder": lambda query: blended.search(query, anchor, k=k),
    }
    for side in sides.values():  # the kept views and their term index, built once
        for query in asked[:3]:
            side(query)
    times: dict[str, list[float]] = {name: [] for name in sides}
    for query in asked:  # interleaved: load weighs on every side alike
        for name, side in sides.items():
            started = time.perf_counter()
            side(query)
            times[name].append(time.perf_counter() - started)
    median = {name: 1000 * statistics.median(values) for name, values in times.items()}
    turns = []  # an agent's turn: it writes a turn and a fact on it, then searches there
    for turn in range(min(20, queries)):
        event = f"turn{turn}"
        blended.add_event(event, anchor, role="user", content="turn")
        blended.add_record(f"fact{turn}", sources=[event], content=vocabulary.text(rng))
        anchor = event
        started = time.perf_counter()
        blended.search(asked[turn], anchor, k=k)
        turns.append(time.perf_counter() - started)
    return {
        "visible": size,
        "median_ms": median,
        "p95_ms": {name: 1000 * percentile(values, 95) for name, values in times.items()},
        "added_ms": median["search + embedder"] - median["search"],
        "write_ms_per_record": 1000 * written / size,
        # its view derived from the one kept before the write, vectors and all
        "after_turn_ms": 1000 * statistics.median(turns) if turns else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("bench/results/search_embedder.json"))
    args = parser.parse_args()
    vocabulary = Vocabulary.make()
    embedder = ParaphraseMiniLMEmbedder()
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        row = measure(embedder, vocabulary, size, args.queries, args.k)
        rows.append(row)
        median = row["median_ms"]
        print(
            f"{size:>7} visible  query embedding {median['query embedding']:6.2f} ms"
            f"  search {median['search']:7.2f} ms  search + embedder"
            f" {median['search + embedder']:7.2f} ms  (added {row['added_ms']:7.2f} ms)"
            f"  writes {row['write_ms_per_record']:.2f} ms a record"
            f"  search at an agent's new turn {row['after_turn_ms'] or 0:.2f} ms",
            flush=True,
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
