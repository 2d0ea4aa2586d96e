"""A child process for the reliability tests: it writes to a durable store and reports every
write on stdout, so that the parent can SIGKILL it mid-write or race several against one store.

    python tests/reliability_worker.py crash PATH SEED GENERATION
    python tests/reliability_worker.py race URL NAMESPACE WORKER WORKERS SHARED OPS SEED

One JSON object per line, each flushed before the next step: ``{"try": op}`` before a call,
then ``{"ack": n, "seq": s}`` once it returned (``s`` orders the write among all writers of
its namespace) or ``{"err": "ConflictError"}`` when the engine refused it. A ``try`` whose line
is complete and has no answer was in flight when the process died. ``race`` waits for a line
on stdin before it starts, so that all writers begin together.

The same ``perform`` replays acknowledged operations into a fresh in-memory ``Memory``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import sys
from contextlib import closing
from typing import Any

from branchmem import Memory
from branchmem.errors import BranchmemError

Op = dict[str, Any]
KEYS = ["city", "budget", "diet", None, None, None]


def perform(mem: Memory, op: Op, namespace: str, *, locate: bool = True) -> int:
    """Apply one operation; return a number that orders it among its namespace's writes.

    Without ``locate``, calls that return nothing are not looked up in the audit log (0).
    """
    kind = op["op"]
    if kind == "event":
        return mem.add_event(
            op["id"], op["parent"], tree=op.get("tree"), content=op["content"], namespace=namespace
        ).seq
    if kind == "batch":
        return max(e.seq for e in mem.add_events(op["events"], namespace=namespace))
    if kind == "record":
        return mem.add_record(
            op["id"], sources=op["sources"], content=op["content"], key=op["key"],
            scope=op["scope"], namespace=namespace,
        ).seq  # fmt: skip
    if kind == "revise":
        return mem.revise(
            op["id"], content=op["content"], sources=op["sources"], namespace=namespace
        ).seq
    if kind == "retract":
        return mem.retract(
            op["id"], sources=op["sources"], targets=op["targets"], key=op["key"],
            key_scope=op["key_scope"], scope=op["scope"], namespace=namespace,
        ).seq  # fmt: skip
    # no return value: find this call in the audit log. Only the writer that owns an item
    # withdraws, restores, supersedes or heads it, so its latest entry there is this call.
    if kind == "withdraw":
        mem.withdraw(op["id"], namespace=namespace)
    elif kind == "restore":
        mem.restore(op["id"], namespace=namespace)
    elif kind == "supersede":
        mem.supersede(op["new"], op["old"], namespace=namespace)
    elif kind == "head":
        mem.set_head(op["id"], namespace=namespace)
    else:
        raise ValueError(f"unknown operation {kind!r}")
    if not locate:
        return 0
    item = op["new"] if kind == "supersede" else op["id"]
    audit_op = "set_head" if kind == "head" else kind
    return mem.audit(id=item, op=audit_op, namespace=namespace)[-1].seq


def say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def attempt(mem: Memory, op: Op, namespace: str, number: int) -> bool:
    """Announce, perform and acknowledge one write; False if the engine refused it."""
    say({"try": op, "n": number})
    try:
        seq = perform(mem, op, namespace)
    except BranchmemError as error:
        say({"err": type(error).__name__, "n": number})
        return False
    say({"ack": number, "seq": seq})
    return True


class Writer:
    """Generates plausible writes: late parents, records on records, revisions, retractions."""

    def __init__(self, rng: random.Random, prefix: str) -> None:
        self.rng = rng
        self.prefix = prefix
        self.counter = 0
        self.events: list[str] = []  # arrived (or acknowledged) events
        self.records: list[str] = []  # non-retraction records this writer may revise
        self.withdrawn: set[str] = set()
        self.own: list[str] = []  # items this writer may withdraw

    def fresh(self, letter: str) -> str:
        self.counter += 1
        return f"{self.prefix}{letter}{self.counter}"

    def sources(self, future: list[str]) -> list[str] | None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.05:
            return None
        if roll < 0.1 or not self.events:
            return []
        picked = rng.sample(self.events[-60:], k=min(len(self.events[-60:]), rng.randint(1, 3)))
        if future and rng.random() < 0.1:  # an event that has not arrived yet
            picked.append(rng.choice(future))
        if self.records and rng.random() < 0.25:
            cited = rng.choice(self.records)
            picked.append(cited if rng.random() < 0.8 else f"{cited}@1")
        return picked

    def record(self, future: list[str]) -> Op:
        record_id = self.fresh("r")
        return {
            "op": "record", "id": record_id, "sources": self.sources(future),
            "content": f"fact {record_id}", "key": self.rng.choice(KEYS),
            "scope": self.rng.choice([None, None, "work"]),
        }  # fmt: skip

    def correction(self, future: list[str]) -> Op | None:
        """A revision, retraction, withdrawal, restore, supersede or head move, if possible."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.4 and self.records:
            target = rng.choice(self.records)
            return {
                "op": "revise", "id": target, "sources": self.sources(future),
                "content": f"revised {target} {rng.randrange(10**6)}",
            }  # fmt: skip
        if roll < 0.6 and self.events:
            targets = [rng.choice(self.records)] if self.records and rng.random() < 0.6 else []
            return {
                "op": "retract", "id": self.fresh("x"),
                "sources": rng.sample(self.events[-30:], k=1), "targets": targets,
                "key": None if targets else rng.choice(["city", "budget"]),
                "key_scope": None, "scope": rng.choice(["branch", "branch", "tree"]),
            }  # fmt: skip
        if roll < 0.75 and self.own:
            item = rng.choice(self.own)
            if item in self.withdrawn:
                return {"op": "restore", "id": item}
            return {"op": "withdraw", "id": item}
        if roll < 0.85 and len(self.records) > 1:
            new, old = rng.sample(self.records, k=2)
            return {"op": "supersede", "new": new, "old": old}
        if self.own_events():
            return {"op": "head", "id": rng.choice(self.own_events())}
        return None

    def own_events(self) -> list[str]:
        return [item for item in self.own[-50:] if item.startswith(self.prefix + "e")]

    def acknowledged(self, op: Op) -> None:
        kind = op["op"]
        if kind == "event":
            self.events.append(op["id"])
            self.own.append(op["id"])
        elif kind == "batch":
            self.events.extend(e["id"] for e in op["events"])
            self.own.extend(e["id"] for e in op["events"])
        elif kind == "record":
            self.records.append(op["id"])
            self.own.append(op["id"])
        elif kind == "retract":
            self.own.append(op["id"])
        elif kind == "withdraw":
            self.withdrawn.add(op["id"])
        elif kind == "restore":
            self.withdrawn.discard(op["id"])


# -- crash: one writer, killed at random moments ---------------------------------------------
RECENT_EVENTS = "SELECT id FROM events ORDER BY seq DESC LIMIT 300"
RECENT_RECORDS = (
    "SELECT record_id FROM revisions WHERE revision = 1 AND kind != 'retraction' "
    "ORDER BY seq DESC LIMIT 300"
)


def crash(path: str, seed: int, generation: int) -> None:
    """Write forever (until killed) to ``path``, growing what earlier generations left."""
    rng = random.Random(seed)
    writer = Writer(rng, f"g{generation}.")
    with Memory.open(path) as mem:
        with closing(sqlite3.connect(path)) as db:  # what earlier generations left, latest first
            writer.events = [row[0] for row in db.execute(RECENT_EVENTS)][::-1]
            writer.records = [row[0] for row in db.execute(RECENT_RECORDS)][::-1]
        say({"ready": True})
        number = 0
        while True:
            number += 1
            roll = rng.random()
            if roll < 0.3:
                op = crash_batch(writer)
            elif roll < 0.5:
                op = crash_event(writer)
            elif roll < 0.8:
                op = writer.record([])
            else:
                op = writer.correction([]) or writer.record([])
            if attempt(mem, op, "default", number):
                writer.acknowledged(op)


def crash_event(writer: Writer) -> Op:
    event_id = writer.fresh("e")
    known = writer.events[-200:]
    parent = writer.rng.choice(known) if known and writer.rng.random() < 0.9 else None
    return {"op": "event", "id": event_id, "parent": parent, "tree": None, "content": event_id}


def crash_batch(writer: Writer) -> Op:
    """A run of events given child-first (shuffled), hanging off an existing event."""
    rng = writer.rng
    known = writer.events[-200:]
    parent = rng.choice(known) if known else None
    events = []
    for _ in range(rng.randint(5, 80)):
        event_id = writer.fresh("e")
        events.append({"id": event_id, "parent": parent, "content": f"batched {event_id}"})
        parent = event_id if rng.random() < 0.85 else rng.choice([e["id"] for e in events])
    rng.shuffle(events)
    return {"op": "batch", "events": events}


# -- race: several writers, one store ----------------------------------------------------------
def race(
    url: str, namespace: str, worker: int, workers: int, shared: bool, ops: int, seed: int
) -> None:
    """``ops`` writes; with ``shared`` the writers' events interleave in one tree space.

    Event ``i`` of writer ``w`` has rank ``i * workers + w`` and a parent of lower rank,
    which another writer (or this one, later) may not have written yet.
    """
    rng = random.Random(seed * 1000 + worker)
    writer = Writer(rng, f"w{worker}.")
    stride = workers if shared else 1
    offset = worker if shared else 0

    def event_id(rank: int) -> str:
        owner, index = (rank % workers, rank // workers) if shared else (worker, rank)
        return f"w{owner}.e{index}"

    def parent_of(rank: int) -> str | None:
        if rank < stride or rng.random() < 0.05:
            return None
        return event_id(rng.randrange(max(0, rank - 12 * stride), rank))

    order = list(range(2 * ops))  # this writer's event indices, shuffled within windows of 6
    for start in range(0, len(order), 6):
        window = order[start : start + 6]
        rng.shuffle(window)
        order[start : start + 6] = window
    taken = 0

    def next_events(count: int) -> list[dict[str, Any]]:
        nonlocal taken
        made = []
        for index in order[taken : taken + count]:
            rank = index * stride + offset
            made.append({"id": event_id(rank), "parent": parent_of(rank), "content": f"r{rank}"})
        taken += count
        return made

    def upcoming() -> list[str]:
        """Events about to be written, by this writer or (shared) by the others."""
        now = taken * stride + offset
        found = [event_id(rank) for rank in range(max(0, now - 8 * stride), now + 8 * stride)]
        if shared and rng.random() < 0.3:  # another writer's record, which may not exist
            other = rng.randrange(workers)
            found.append(f"w{other}.r{rng.randrange(1, writer.counter + 2)}")
        return found

    with Memory.open(url) as mem:
        say({"ready": True})
        sys.stdin.readline()  # the start signal
        for number in range(1, ops + 1):
            roll = rng.random()
            if roll < 0.3:
                (made,) = next_events(1)
                op: Op = {"op": "event", "tree": None, **made}
            elif roll < 0.4:
                op = {"op": "batch", "events": next_events(rng.randint(2, 8))}
            elif roll < 0.7:
                op = writer.record(upcoming())
            else:
                op = writer.correction(upcoming()) or writer.record(upcoming())
            if attempt(mem, op, namespace, number):
                writer.acknowledged(op)
    say({"done": True})


def erase_and_die(path: str, marker: str) -> None:
    """Erase a record holding ``marker``, then die by SIGKILL in the cleanup window: after
    the erase committed, before its WAL checkpoint (the store's own cleanup step is where
    the process is killed, so the moment is exact, not a timing guess)."""
    mem = Memory.open(path)
    mem.add_event("root", content="root")
    mem.add_record("secret", sources=["root"], content=f"passport {marker}")
    for i in range(10):
        mem.add_record(f"filler{i}", sources=["root"], content=f"filler {i}")

    def killed() -> str | None:
        say({"ready": True})
        os.kill(os.getpid(), signal.SIGKILL)
        return None

    mem.store._clean_files = killed  # type: ignore[attr-defined]
    mem.erase("secret")
    say({"survived": True})  # never reached


def main(argv: list[str]) -> None:
    command, *args = argv
    if command == "crash":
        path, seed, generation = args
        crash(path, int(seed), int(generation))
    elif command == "erase-and-die":
        path, marker = args
        erase_and_die(path, marker)
    elif command == "race":
        url, namespace, worker, workers, shared, ops, seed = args
        race(url, namespace, int(worker), int(workers), shared == "1", int(ops), int(seed))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
