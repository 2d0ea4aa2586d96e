"""What reading item by item through ``answer`` costs, beside each backend's own per-item reads.

``Store`` defines its per-item reads (``get_event``, ``get_revisions``, ...) as wrappers over
the one bulk reader ``answer``: a backend that defines nothing else reads correctly
(``branchmem.testing.answers_only``). The shipped in-process backends override every one with
their own look-up. This measures what the overrides buy, side by side in one run, in rounds
that time every read in turn (a batch of calls each: warm, as a loop of reads runs), on the
agent workload of ``bench/agent_history.py`` (10 keys, one keyed write per turn, 10,000
turns), in memory and on SQLite:

- one per-item read, the backend's own against ``Store``'s wrapper over the same backend's
  ``answer`` (``get_event`` of an event on the path, ``get_revisions`` of a record);
- the question and the empty answer alone (``Questions(events={id})`` and ``Facts()``), what
  any answer to a single-id question builds before it reads anything;
- ``Memory.current`` and ``Memory.visible`` at the head, decided at each call (the kept
  answers dropped first), on the backend against on an equal backend whose 17 per-item reads
  are ``Store``'s wrappers (``ThroughAnswer``; the keyed index reads stay the backend's, as a
  backend answering only through ``answer`` would page its index there).

It prints medians and the ratios. No goal: the figures say what making the per-item reads
final functions over ``answer`` would cost today. Writes JSON to
bench/results/answer_cost.json (bench/figures.py reads it).

    python bench/answer_cost.py [--turns 10000] [--rounds 200]
"""

from __future__ import annotations

import argparse
import contextlib
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_history import KEYS, build_memory
from branchmem import Memory
from branchmem._core.questions import Facts, Questions
from branchmem.store.base import Store
from branchmem.store.inmemory import InMemoryStore
from branchmem.store.sqlite import SQLiteStore
from branchmem.testing.answers_only import AnswersOnlyStore, forwarding

NAMESPACE = "default"
BATCH, BATCH_VIEWS = 50, 5  # calls timed together in one round


# Store's keyed wrappers read a key's whole history; every shipped backend serves them from
# its index, and a backend answering only through ``answer`` would page it there (``pages``)
KEYED_INDEX_READS = ("key_candidates", "revisions_newest_first", "retractions_naming")


class ThroughAnswer(AnswersOnlyStore):
    """The 17 per-item reads through ``Store``'s wrappers over ``answer``; the keyed index
    reads forwarded as the backend serves them, so only the wrappers differ."""

    locals().update({name: forwarding(name) for name in KEYED_INDEX_READS})


class LocalThroughAnswer(ThroughAnswer):
    """Over an in-memory store: process-local as it is, so a ``Memory`` keeps no more and no
    less than over the store itself."""

    process_local = True


READS = ("get_event", "get_revisions", "current()", "visible()")


def reads(
    own: Memory, store: Store, through: Memory, head: str, turns: int
) -> dict[str, tuple[Callable[[], object], Callable[[], object]]]:
    """Each timed read of one backend as (the backend's own, through ``answer``): ``own``
    over ``store``, ``through`` over an equal store behind ``ThroughAnswer``."""
    rng = random.Random(7)

    def event_id() -> str:
        return f"e{rng.randrange(turns)}"

    def record_id() -> str:
        return f"w{rng.randrange(turns)}"

    def decided(mem: Memory, read: Callable[[Memory], object]) -> Callable[[], object]:
        def call() -> object:
            mem._views.clear()  # no answer kept from an earlier call: decided now
            return read(mem)

        return call

    def current(mem: Memory) -> object:
        return mem.current(f"k{rng.randrange(KEYS)}", head)

    def visible(mem: Memory) -> object:
        return mem.visible(head)

    return {
        "get_event": (
            lambda: store.get_event(NAMESPACE, event_id()),
            lambda: Store.get_event(store, NAMESPACE, event_id()),
        ),
        "get_revisions": (
            lambda: store.get_revisions(NAMESPACE, record_id()),
            lambda: Store.get_revisions(store, NAMESPACE, record_id()),
        ),
        "current()": (decided(own, current), decided(through, current)),
        "visible()": (decided(own, visible), decided(through, visible)),
    }


def batched(timed: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds per call over ``rounds`` rounds; each round times every read in turn,
    a batch of calls each (warm, as a loop of reads runs), so the reads share the machine's
    drift."""
    per_call: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(rounds):
        for name, read in timed.items():
            calls = BATCH_VIEWS if "visible" in name else BATCH
            started = time.perf_counter()
            for _ in range(calls):
                read()
            per_call[name].append((time.perf_counter() - started) / calls)
    return {name: statistics.median(values) for name, values in per_call.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "answer_cost.json")
    )
    args = parser.parse_args()
    turns = args.turns
    timed: dict[str, Callable[[], object]] = {}
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        in_memory = InMemoryStore()
        own = stack.enter_context(Memory(store=in_memory))
        through = stack.enter_context(Memory(store=LocalThroughAnswer(InMemoryStore())))
        head = build_memory(own, turns)
        assert build_memory(through, turns) == head
        for name, (by_own, by_answer) in reads(own, in_memory, through, head, turns).items():
            timed[f"memory {name} own"], timed[f"memory {name} answer"] = by_own, by_answer
        path = folder / "agent.db"
        with Memory.open(path) as writer:
            build_memory(writer, turns)
        on_file = SQLiteStore(path)
        own_sqlite = stack.enter_context(Memory(store=on_file))
        through_sqlite = stack.enter_context(Memory(store=ThroughAnswer(SQLiteStore(path))))
        on_sqlite = reads(own_sqlite, on_file, through_sqlite, head, turns)
        for name, (by_own, by_answer) in on_sqlite.items():
            timed[f"sqlite {name} own"], timed[f"sqlite {name} answer"] = by_own, by_answer
        timed["built"] = lambda: (Questions(events=frozenset((head,))), Facts())
        for mem in (own, through, own_sqlite, through_sqlite):  # every answer equal
            assert [r.id for r in mem.visible(head)] == [r.id for r in own.visible(head)]
            for key in range(KEYS):
                assert mem.current(f"k{key}", head) == own.current(f"k{key}", head)
        gc.collect()
        medians = batched(timed, args.rounds)

    pairs = {}
    print(f"{turns:,} turns on one path, {KEYS} keys; medians of {args.rounds:,} rounds\n")
    print(f"{'read':<24} {'own us':>9} {'answer us':>10} {'ratio':>7}")
    for backend in ("memory", "sqlite"):
        for read in READS:
            by_own, by_answer = (
                medians[f"{backend} {read} own"],
                medians[f"{backend} {read} answer"],
            )
            pairs[f"{backend} {read}"] = {
                "own_us": by_own * 1e6,
                "through_answer_us": by_answer * 1e6,
                "ratio": by_answer / by_own,
            }
            print(
                f"{backend + ' ' + read:<24} {by_own * 1e6:>9.2f} {by_answer * 1e6:>10.2f} "
                f"{by_answer / by_own:>7.2f}"
            )
    alone = medians["built"] * 1e6
    print(f"\nthe question and the empty answer alone: {alone:.2f} us")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            {
                "turns": turns,
                "pairs": pairs,
                "question_and_answer_built_us": alone,
                "load": os.getloadavg(),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
