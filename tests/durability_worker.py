"""Child processes for the multi-process durability tests: a holder that keeps a SQLite file
open and runs the calls it is sent, and a peer that opens, reads, writes and closes the same
file again and again, as another process (the CLI, a second service worker) does.

    python tests/durability_worker.py holder store PATH        (a Memory on PATH)
    python tests/durability_worker.py holder langgraph PATH    (a SqliteSaver on PATH)
    python tests/durability_worker.py holder mem0 DIRECTORY    (Mem0, history.db in WAL mode)
    python tests/durability_worker.py peer branchmem PATH      (Memory.open, read, write, close)
    python tests/durability_worker.py peer sqlite PATH         (sqlite3: read, write, close)

Commands are JSON lines on stdin, answers JSON lines on stdout, each flushed. Writes are
reported as ``reliability_worker`` reports them (``{"try": op, "n": n}``, then ``{"ack": n}``),
so ``test_reliability.read_transcript`` reads both transcripts. The holder answers
``{"call": ..., "on": ..., "args": {...}}`` with ``{"answer": name, ...}``; ``{"write": N}``
makes it write forever, saying ``{"written": N}`` after the N-th acknowledged write, so the
parent's SIGKILL lands while writes go on. The peer cycles on ``cycle`` (once), ``loop``
(until ``stop``), and ends at the end of stdin.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import sys
import threading
from collections.abc import Callable
from typing import Any

from branchmem import Memory
from reliability_worker import Op, attempt, say

USER = "alice"
# Where each kind of write lands, to check after the kill that every acknowledged one did
STORED = {
    "store": "SELECT id FROM events",
    "branchmem": "SELECT id FROM events",
    "sqlite": "SELECT id FROM durability_peer",
    "langgraph": "SELECT thread_id FROM checkpoints",
    "mem0": "SELECT new_memory FROM history",
}
MARKER = "Mittens"


def snapshot(memory: Memory) -> dict[str, list[Any]]:
    """What a store holds, by id: events, records, audit entries and API keys."""
    store = memory.store
    with store.reading("default"):
        events = sorted(event.id for event in store.iter_events("default"))
        records = sorted(store.record_ids("default"))
    return {
        "events": events,
        "records": records,
        "audit": sorted([entry.seq, entry.op] for entry in memory.audit()),
        "keys": sorted(row.key_id for row in memory.api_keys().list()),
    }


def plain(result: Any) -> Any:
    """A call's result as JSON (a receipt as its ``to_json``: it is verified later)."""
    to_json = getattr(result, "to_json", None)
    return to_json() if callable(to_json) else None


class Held:
    """What a holder keeps open: the objects calls go to, its writes and its state."""

    targets: dict[str, Any]

    def write(self, number: int) -> None:
        raise NotImplementedError

    def state(self) -> Any:
        return None


class HeldStore(Held):
    def __init__(self, path: str) -> None:
        from branchmem.server.keys import KeyRing

        self.memory = Memory.open(path, create=False)
        self.targets = {"memory": self.memory, "keys": KeyRing(self.memory)}

    def write(self, number: int) -> None:
        op: Op = {
            "op": "event", "id": f"held.{number}", "parent": None, "tree": None,
            "content": f"held write {number}",
        }  # fmt: skip
        attempt(self.memory, op, "default", number)

    def state(self) -> Any:
        return snapshot(self.memory)


class HeldLangGraph(Held):
    """A LangGraph ``SqliteSaver`` (WAL mode, as its ``setup`` sets) under the checkpointer;
    the thread ``secret`` said the marker, ``kept`` did not."""

    def __init__(self, path: str) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        from branchmem.integrations.langgraph import BranchCheckpointer, BranchStore
        from test_langgraph_store import build_graph

        memory = Memory()
        saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
        self.checkpointer = BranchCheckpointer(saver, memory)
        self.graph = build_graph(BranchStore(memory), self.checkpointer)
        self.graph.invoke({"said": "tea"}, thread("kept"))
        self.graph.invoke({"said": f"my cat is called {MARKER}"}, thread("secret"))
        self.targets = {"checkpointer": self.checkpointer}

    def write(self, number: int) -> None:
        name = f"held-{number}"
        say({"try": {"op": "thread", "id": name}, "n": number})
        self.graph.invoke({"said": f"held write {number}"}, thread(name))
        say({"ack": number, "seq": 0})


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


class HeldMem0(Held):
    """A real Mem0 (scripted LLM, local Qdrant, history.db) wrapped by ``BranchMem0``; the
    message ``secret`` holds the marker. The history database is put in WAL mode: Mem0's
    default rollback journal holds no lock between transactions, so only a WAL file can
    show a lock dropped under it (an application sharing the file with readers sets WAL)."""

    def __init__(self, directory: str) -> None:
        from branchmem.integrations.mem0 import BranchMem0
        from branchmem.integrations.mem0.offline import AnnotatedFact, offline_memory

        self.fact = AnnotatedFact
        mem0 = offline_memory(directory)
        mem0.db.connection.execute("PRAGMA journal_mode = WAL")
        self.store = Memory()
        self.wrapper = BranchMem0(mem0, self.store)
        self.store.add_event("root", None, role="user", content="Hello there.")
        for event_id, content, text in (
            ("secret", f"My locker code word is {MARKER}.", f"Locker code word is {MARKER}"),
            ("allergy", "I am allergic to shrimp.", "User is allergic to shrimp"),
        ):
            self.add(event_id, content, text)
        self.targets = {"wrapper": self.wrapper}

    def add(self, event_id: str, content: str, text: str) -> None:
        self.wrapper.memory.llm.annotate(content, [self.fact(event_id, text)])
        self.store.add_event(event_id, "root", role="user", content=content)
        self.wrapper.add([{"role": "user", "content": content}], event_ids=[event_id], user_id=USER)

    def write(self, number: int) -> None:
        text = f"User's favourite number is {number}"
        say({"try": {"op": "fact", "id": text}, "n": number})
        self.add(f"held.{number}", f"My favourite number is {number}.", text)
        say({"ack": number, "seq": 0})


HOLDERS: dict[str, Callable[[str], Held]] = {
    "store": HeldStore,
    "langgraph": HeldLangGraph,
    "mem0": HeldMem0,
}


def holder(kind: str, path: str) -> None:
    held = HOLDERS[kind](path)
    say({"ready": True})
    for line in iter(sys.stdin.readline, ""):
        command = json.loads(line)
        if "write" in command:
            number = 0
            while True:  # until killed
                number += 1
                held.write(number)
                if number == command["write"]:
                    say({"written": number})
        name = command["call"]
        try:
            result = getattr(held.targets[command["on"]], name)(**command["args"])
        except Exception as error:
            say({"answer": name, "failed": f"{type(error).__name__}: {error}"})
            continue
        say({"answer": name, "result": plain(result), "state": held.state()})


# -- the peer -------------------------------------------------------------------------------
def peer_cycle(kind: str, path: str, number: int) -> None:
    """Open the file, read, write one acknowledged row, close: every step a CLI call takes."""
    op: Op = {"op": "event", "id": f"peer.{number}", "parent": None, "tree": None,
              "content": f"peer write {number}"}  # fmt: skip
    if kind == "branchmem":
        with Memory.open(path, create=False) as memory:
            memory.heads()
            attempt(memory, op, "default", number)
        return
    db = sqlite3.connect(path, timeout=60)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        say({"try": op, "n": number})
        with db:
            db.execute("CREATE TABLE IF NOT EXISTS durability_peer (id TEXT PRIMARY KEY)")
            db.execute("INSERT INTO durability_peer VALUES (?)", (op["id"],))
        say({"ack": number, "seq": 0})
    finally:
        db.close()


def peer(kind: str, path: str) -> None:
    commands: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in iter(sys.stdin.readline, ""):
            commands.put(json.loads(line))
        commands.put(None)

    threading.Thread(target=read, daemon=True).start()
    say({"ready": True})
    number = 0
    looping = False
    while True:
        try:
            command = commands.get(block=not looping)
        except queue.Empty:
            command = ""
        if command is None:
            return
        if command == "stop":
            looping = False
            say({"stopped": number})
            continue
        if command or looping:
            number += 1
            peer_cycle(kind, path, number)
        if command == "cycle":
            say({"cycled": number})
        elif command == "loop":  # said after the first cycle: the file was opened and closed
            looping = True
            say({"looping": number})


def main(argv: list[str]) -> None:
    role, kind, path = argv
    if role == "holder":
        holder(kind, path)
    elif role == "peer":
        peer(kind, path)
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
