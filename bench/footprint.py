"""Memory held per record by the in-memory store, and the time of a full garbage collection.

An agent-like history is built through ``Memory`` on the in-memory backend:

- events: one per turn, on one path that forks (every turn, with probability 1/50 the agent
  retries: the next turn continues from an event 1 to 20 turns back, so the namespace is a
  tree of branches, as regenerated answers and resumed threads make it); event text is a
  message of 60 to 240 characters;
- records: one per turn, citing 1 to 3 events of the turn's own path (the turn and up to two
  of the ten before it); 1 in 20 also cites the record written two turns before (a summary
  built on a fact); 1 in 4 carries a key from a pool of records/40, so each key is rewritten
  ~10 times; kinds from a set of five; record text of 40 to 160 characters (the length of a
  Mem0-style extracted fact).

Bytes are Python heap bytes counted by ``tracemalloc`` (allocations live at the end, the
whole ``Memory`` included; each batch is handed over as fresh objects, as a decoded request
body would be, so the strings the store keeps are counted), reported per record for the
records alone (the growth from the events-only store to the full one) and for the whole store
(events and records, divided by the records); the full collection is ``gc.collect()`` timed
with everything alive.

    python bench/footprint.py [--records 100000] [--seed 7] [--out bench/results/footprint.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from branchmem import Memory

KINDS = ("fact", "preference", "plan", "summary", "observation")
SENTENCE = (
    "the user prefers short answers about deployment and asked again whether the staging "
    "cluster uses the new schema before friday because the migration failed twice on the "
    "reporting replica while tests were green locally and the invoice export stays blocked"
)
WORDS = SENTENCE.split(" ")
BATCH = 1000


def text(rng: random.Random, low: int, high: int, tag: str) -> str:
    """A distinct sentence of ``low`` to ``high`` characters (``tag`` keeps it unique)."""
    target = rng.randint(low, high)
    words = [tag]
    size = len(tag)
    while size < target:
        word = WORDS[rng.randrange(len(WORDS))]
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:target]


def history(records: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The events and records of the agent-like shape the module docstring describes."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    writes: list[dict[str, Any]] = []
    path: list[str] = []  # the current branch, root first
    keys = max(1, records // 40)
    for turn in range(records):
        if path and rng.random() < 1 / 50:
            del path[len(path) - rng.randint(1, min(20, len(path))) :]  # retry from earlier
        event_id = f"m{turn}"
        role = "user" if turn % 2 == 0 else "assistant"
        parent = path[-1] if path else None
        content = text(rng, 60, 240, f"#{turn}")
        events.append({"id": event_id, "parent": parent, "role": role, "content": content})
        path.append(event_id)
        recent = path[-11:-1]
        cited = [event_id, *rng.sample(recent, min(len(recent), rng.randint(0, 2)))]
        if turn >= 2 and rng.random() < 1 / 20 and f"m{turn - 2}" in recent:
            cited.append(f"r{turn - 2}")
        write: dict[str, Any] = {
            "id": f"r{turn}",
            "sources": cited,
            "content": text(rng, 40, 160, f"r{turn}"),
            "kind": KINDS[rng.randrange(len(KINDS))],
        }
        if rng.random() < 1 / 4:
            write["key"] = f"user.setting.{rng.randrange(keys)}"
        writes.append(write)
    return events, writes


def fresh(value: Any) -> Any:
    """A deep copy with new string objects, as a JSON body decoded per request would be."""
    if isinstance(value, str):
        return value.encode().decode()
    if isinstance(value, list):
        return [fresh(item) for item in value]
    if isinstance(value, dict):
        return {fresh(key): fresh(item) for key, item in value.items()}
    return value


def build(events: list[dict[str, Any]], writes: list[dict[str, Any]]) -> dict[str, Any]:
    """Build the store under tracemalloc; return bytes and the time of a full collection."""
    warm_events, warm_writes = history(50, 1)  # modules imported on first use are not counted
    warm = Memory()
    warm.add_events(fresh(warm_events))
    warm.add_records(fresh(warm_writes))
    warm.close()
    del warm
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    mem = Memory()
    started = time.perf_counter()
    for start in range(0, len(events), BATCH):
        mem.add_events(fresh(events[start : start + BATCH]))
    gc.collect()
    after_events = tracemalloc.get_traced_memory()[0]
    for start in range(0, len(writes), BATCH):
        mem.add_records(fresh(writes[start : start + BATCH]))
    built_s = time.perf_counter() - started
    gc.collect()
    after_records = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    collections = []
    for _ in range(3):
        started = time.perf_counter()
        gc.collect()
        collections.append(time.perf_counter() - started)
    tracked = len(gc.get_objects())
    n = len(writes)
    result = {
        "records": n,
        "events": len(events),
        "record_bytes_per_record": (after_records - after_events) / n,
        "store_bytes_per_record": (after_records - base) / n,
        "event_bytes_per_event": (after_events - base) / len(events),
        "store_mib": (after_records - base) / 2**20,
        "gc_full_s": min(collections),
        "gc_tracked_objects": tracked,
        "build_s": built_s,
    }
    mem.close()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "footprint.json"))
    args = parser.parse_args()
    events, writes = history(args.records, args.seed)
    result = build(events, writes)
    result["machine"] = f"{platform.machine()}, Python {platform.python_version()}"
    print(f"in-memory store, {result['records']:,} records and {result['events']:,} events")
    print(f"  records alone   {result['record_bytes_per_record']:8.0f} bytes per record")
    print(f"  events alone    {result['event_bytes_per_event']:8.0f} bytes per event")
    print(
        f"  whole store     {result['store_bytes_per_record']:8.0f} bytes per record"
        f" ({result['store_mib']:,.0f} MiB)"
    )
    print(
        f"  gc.collect()    {result['gc_full_s']:8.3f} s"
        f" ({result['gc_tracked_objects']:,} tracked objects)"
    )
    print(f"  built in        {result['build_s']:8.1f} s (under tracemalloc)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
