"""Acknowledged writes survive other processes using the same SQLite file, on every call.

SQLite's locks are POSIX locks, held per process: closing any descriptor of a file drops all
of that process's locks on it ("How to corrupt a database", §2.2). A holder that reads the
live database, ``-wal`` or ``-shm`` with plain file I/O (a byte check) loses its locks; the
next process that opens and closes the file believes itself the last user and unlinks the
``-wal``, and from then on two WALs take writes and the holder's acknowledged ones are lost.

So each case runs a holder (``tests/durability_worker.py``) that keeps the file open and makes
its calls, while a peer process opens, reads, writes and closes the same file in a loop during
each call and once after it. The holder then writes (the peer takes one more turn among those
writes) and is killed by SIGKILL while writing. The case fails unless the ``-wal`` and
``-shm`` kept their inode while the holder lived (one WAL), every acknowledged write (the
holder's, the peer's, and what the call itself wrote) is in the file, and ``PRAGMA
integrity_check`` is ok.

The calls are generated: every operation of the API table that writes, erases or checks
(``Operation.mutates``), with ``forget`` as a dry run and for real, and every ``branchmem
keys`` command. Arguments come from ``EXAMPLES`` (by parameter name) and ``BY_OPERATION``; an
operation whose required parameter has no example fails here, so a new one joins the suite
with one entry. The integrations' files are covered too: a LangGraph ``SqliteSaver``'s and
Mem0's history database, through the wrappers' ``forget`` and ``verify_receipt``.
"""

from __future__ import annotations

import inspect
import json
import os
import queue
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import closing, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from branchmem import Memory
from branchmem.api.operations import operations
from branchmem.cli.main import keys_app
from branchmem.server.keys import KeyRing
from durability_worker import STORED, snapshot
from test_reliability import read_transcript
from timing import scaled

WORKER = Path(__file__).with_name("durability_worker.py")
SRC = Path(__file__).parent.parent / "src"
TIMEOUT = scaled(
    90
)  # a safety net only (grows with the load): every wait ends on a line from the process
WRITES = 30  # acknowledged writes of the holder before the kill


# -- what each call is given ------------------------------------------------------------------
@dataclass(frozen=True)
class Seed:
    """What an argument must name in the seeded store (written by this process, closed before
    the holder opens the file, so the holder's locks are its own from the start)."""

    receipt: dict[str, Any]
    key_id: str


Example = Any | Callable[[Seed], Any]  # a callable is given the seed

EXAMPLES: dict[str, Example] = {  # by parameter name, for every call that has it
    "parent": "u3",
    "content": "a write that must stay written",
    "sources": ["u3"],
    "event_id": "u4",
    "new_id": "r2",
    "old_id": "r1",
    "record_id": "r1",
    "onto": "u4",
    "anchor": "u3",
    "events": [
        {"id": "batch-e2", "parent": "batch-e1", "content": "second of a batch"},
        {"id": "batch-e1", "parent": "u3", "content": "first of a batch"},
    ],
    "records": [{"id": "batch-r1", "sources": ["u3"], "content": "a batched fact"}],
    "receipt": lambda seed: seed.receipt,
    "tenant": "durable",
    "namespaces": ["durable/*"],
    "key_id": lambda seed: seed.key_id,
}
BY_OPERATION: dict[str, dict[str, Example]] = {  # where the name alone does not say it
    "add_event": {"id": "new-event"},
    "add_record": {"id": "new-record"},
    "revise": {"id": "r1"},
    "retract": {"id": "new-retraction", "targets": ["r1"]},
    "withdraw": {"id": "r2"},
    "erase": {"id": "r3"},
    "restore": {"id": "w1"},
    "forget": {"kind": "message", "id": "u5"},
    "context": {"session": "s1"},  # a session is what makes it write (its deliveries)
}
VARIANTS: dict[str, tuple[dict[str, Any], ...]] = {
    "forget": ({"dry_run": True}, {"dry_run": False}),
}


def seed(path: Path) -> Seed:
    """The store every case starts from, written and closed before the holder opens it."""
    with Memory.open(path) as memory:
        memory.add_event("u1", content="I need help planning a move.")
        memory.add_event("u2", "u1", content="I'm moving to Chengdu next month.")
        memory.add_event("u3", "u2", content="Budget is tight.")
        memory.add_event("u4", "u2", content="Actually, Hangzhou.")
        memory.add_event("u5", "u3", content="My passport number is X1234567.")
        for record_id, source in (("r1", "u3"), ("r2", "u3"), ("r3", "u2"), ("w1", "u2")):
            memory.add_record(record_id, sources=[source], content=f"fact {record_id}", key="city")
        memory.add_record("r5", sources=["u5"], content="passport X1234567")
        memory.withdraw("w1")
        memory.add_event("gone", content="My locker code is 4711.")
        memory.add_record("gone-fact", sources=["gone"], content="locker code 4711")
        receipt = memory.forget("message", "gone")
        _, grant = KeyRing(memory).create("seed", ["seed"])
    return Seed(receipt.to_json(), grant.key_id)


@dataclass(frozen=True)
class Case:
    """One call the holder makes: ``on`` names the object (``memory`` or ``keys``)."""

    on: str
    name: str  # the method
    key: str  # in BY_OPERATION
    params: tuple[tuple[str, bool], ...]  # (name, required)
    variant: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        extra = ",".join(f"{k}={v}" for k, v in self.variant.items())
        return f"{self.key}[{extra}]" if extra else self.key

    def missing(self) -> list[str]:
        """Required parameters that no table gives a value."""
        given = BY_OPERATION.get(self.key, {})
        return [
            name
            for name, required in self.params
            if required and name not in given and name not in self.variant and name not in EXAMPLES
        ]

    def arguments(self, seed: Seed) -> dict[str, Any]:
        if self.missing():
            pytest.fail(
                f"{self.label}: no example argument for {self.missing()}; add one to EXAMPLES "
                "(by parameter name) or BY_OPERATION (by operation)",
                pytrace=False,
            )
        chosen = {**BY_OPERATION.get(self.key, {}), **self.variant}
        for name, required in self.params:
            if required and name not in chosen:
                chosen[name] = EXAMPLES[name]
        return {name: value(seed) if callable(value) else value for name, value in chosen.items()}


def generated_cases() -> list[Case]:
    """Every mutating operation of the API table, then every ``branchmem keys`` command (the
    ``KeyRing`` method of the same name, which the command calls)."""
    found = []
    for op in operations().values():
        if not op.mutates:
            continue
        params = tuple((p.name, p.required) for p in op.params)
        for variant in VARIANTS.get(op.name, ({},)):
            found.append(Case("memory", op.name, op.name, params, variant))
    for command in keys_app.registered_commands:
        assert command.name, command
        method = getattr(KeyRing, command.name)
        signature = list(inspect.signature(method).parameters.values())[1:]  # self
        params = tuple((p.name, p.default is inspect.Parameter.empty) for p in signature)
        found.append(Case("keys", command.name, f"keys {command.name}", params))
    return found


CASES = generated_cases()


# -- the processes ----------------------------------------------------------------------------
class Proc:
    """A worker process; a thread reads its stdout lines, so every wait has a deadline."""

    def __init__(self, name: str, log: Path, *args: str) -> None:
        env = dict(os.environ)
        paths = [str(SRC), str(WORKER.parent), env.get("PYTHONPATH")]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
        self.name = name
        self.log = log
        with open(log, "wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, str(WORKER), *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=env,
            )
        self.lines: list[str] = []  # complete lines: a line cut by the kill was never said
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        try:
            for raw in iter(self.process.stdout.readline, b""):
                if not raw.endswith(b"\n"):
                    break
                line = raw.decode()
                self.lines.append(line)
                self.messages.put(json.loads(line))
        finally:
            self.messages.put(None)

    def send(self, command: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command).encode() + b"\n")
        self.process.stdin.flush()

    def expect(self, key: str) -> dict[str, Any]:
        """The next line holding ``key`` (lines reporting writes are kept in ``lines``)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                message = self.messages.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"{self.name}: no {key!r} within {TIMEOUT}s") from None
            if message is None:
                self.messages.put(None)
                raise AssertionError(f"{self.name} ended before {key!r}:\n{self.stderr()}")
            if key in message:
                return message

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def kill(self) -> None:
        """SIGKILL (no cleanup runs), then every complete line it wrote."""
        if self.process.poll() is None:
            self.process.kill()
        self.end()

    def end(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            with suppress(BrokenPipeError):
                self.process.stdin.close()
        self.process.wait(TIMEOUT)
        self.reader.join(TIMEOUT)
        assert self.process.stdout is not None
        self.process.stdout.close()

    def acked(self) -> list[str]:
        """The ids of the writes it acknowledged."""
        return [op["id"] for op, _ in read_transcript("".join(self.lines)).acked]


def files(path: Path) -> dict[str, tuple[int, int] | None]:
    """The ``-wal`` and ``-shm`` files' identity, read from outside (``stat`` takes no lock)."""
    found: dict[str, tuple[int, int] | None] = {}
    for suffix in ("-wal", "-shm"):
        try:
            info = os.stat(f"{path}{suffix}")
        except FileNotFoundError:
            found[suffix] = None
        else:
            found[suffix] = (info.st_dev, info.st_ino)
    return found


class Scene:
    """A holder with the file open and a peer using the same file; what went wrong."""

    def __init__(self, tmp: Path, holder: str, path: Path, watched: Path, peer: str) -> None:
        self.kind, self.peer_kind, self.watched = holder, peer, watched
        self.holder = Proc("holder", tmp / "holder.log", "holder", holder, str(path))
        self.peer = Proc("peer", tmp / "peer.log", "peer", peer, str(watched))
        self.problems: list[str] = []
        self.state: dict[str, list[Any]] | None = None  # the store after the last call

    def __enter__(self) -> Scene:
        self.holder.expect("ready")
        self.peer.expect("ready")
        self.wal = files(self.watched)
        assert all(self.wal.values()), f"the holder has no WAL open on {self.watched}: {self.wal}"
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        for proc in (self.holder, self.peer):
            if proc.process.poll() is None:
                proc.kill()

    def call(self, on: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """The call, with the peer cycling during it and once after it."""
        label = f"{name}(dry_run=True)" if args.get("dry_run") else name
        self.peer.send("loop")
        self.peer.expect("looping")
        self.holder.send({"call": name, "on": on, "args": args})
        answer = self.holder.expect("answer")
        self.peer.send("stop")
        self.peer.expect("stopped")
        self.peer.send("cycle")
        self.peer.expect("cycled")
        if "failed" in answer:
            self.problems.append(f"{label} failed in the holder: {answer['failed']}")
        else:
            self.state = answer["state"]
        self.check_wal(f"after {label}")
        return answer

    def check_wal(self, when: str) -> None:
        now = files(self.watched)
        if now != self.wal:
            self.problems.append(
                f"{when}: the holder's -wal/-shm of {self.watched.name} were replaced or "
                f"unlinked while it held the file open ({self.wal} -> {now})"
            )

    def finish(self) -> None:
        """Holder writes, the peer opens, writes and closes once among them, SIGKILL; then
        everything acknowledged is there. (A peer looping through all the writes makes each
        wait out SQLite's busy back-off: many seconds per case for nothing more.)"""
        self.holder.send({"write": WRITES})
        self.holder.expect("written")
        self.check_wal("during the holder's writes")
        self.peer.send("cycle")  # while the holder goes on writing
        self.peer.expect("cycled")
        self.check_wal("after a peer's cycle among the holder's writes")
        self.holder.kill()
        self.peer.end()
        self.check_file()
        assert not self.problems, "\n".join(self.problems)

    def check_file(self) -> None:
        try:
            with closing(sqlite3.connect(self.watched)) as db:
                integrity = [row[0] for row in db.execute("PRAGMA integrity_check")]
                if integrity != ["ok"]:
                    self.problems.append(f"integrity_check: {integrity[:5]}")
                for who, proc, kind in (
                    ("holder", self.holder, self.kind),
                    ("peer", self.peer, self.peer_kind),
                ):
                    stored = {row[0] for row in db.execute(STORED[kind])}
                    acked = proc.acked()
                    lost = [item for item in acked if item not in stored]
                    if lost:
                        self.problems.append(
                            f"{len(lost)} of the {len(acked)} writes the {who} acknowledged "
                            f"are not in the file: {lost[:4]}..."
                        )
        except sqlite3.DatabaseError as error:
            self.problems.append(f"the file cannot be read after the kill: {error}")
            return
        if self.state is not None:
            self.check_state(self.state)

    def check_state(self, state: dict[str, list[Any]]) -> None:
        """What the holder's store held after its last call is still there (the call's own
        write acknowledged); no key came or went but by that call."""
        with Memory.open(self.watched, create=False) as memory:
            final = snapshot(memory)
        for part in ("events", "records", "audit"):
            lost = [item for item in state[part] if item not in final[part]]
            if lost:
                self.problems.append(f"{part} the holder had after its call are lost: {lost[:4]}")
        if final["keys"] != state["keys"]:
            self.problems.append(f"API keys after the kill {final['keys']} != {state['keys']}")


# -- the cases --------------------------------------------------------------------------------
def test_every_call_that_writes_has_example_arguments() -> None:
    """A mutating operation added to the API joins the suite with one table entry, not none."""
    labels = {case.label for case in CASES}
    assert {"forget[dry_run=True]", "forget[dry_run=False]", "verify_receipt"} <= labels
    assert {"keys create", "keys delete"} <= labels
    missing = {case.label: case.missing() for case in CASES if case.missing()}
    assert not missing, f"add example arguments (EXAMPLES or BY_OPERATION) for {missing}"


@pytest.mark.parametrize("case", CASES, ids=[case.label for case in CASES])
def test_a_call_keeps_every_acknowledged_write_with_another_process_on_the_file(
    case: Case, tmp_path: Path
) -> None:
    """The store's own file: one WAL while the holder lives, nothing acknowledged lost."""
    path = tmp_path / "e.db"
    made = seed(path)
    args = case.arguments(made)
    with Scene(tmp_path, "store", path, path, "branchmem") as scene:
        scene.call(case.on, case.name, args)
        scene.finish()


def test_the_langgraph_saver_file_keeps_every_acknowledged_checkpoint(tmp_path: Path) -> None:
    """``BranchCheckpointer.forget`` and ``verify_receipt`` read the saver's files."""
    pytest.importorskip("langgraph.checkpoint.sqlite")
    from branchmem.integrations.langgraph.mapping import thread_event_id

    path = tmp_path / "checkpoints.db"
    conversation = {"kind": "conversation", "id": thread_event_id("secret")}
    with Scene(tmp_path, "langgraph", path, path, "sqlite") as scene:
        scene.call("checkpointer", "forget", {**conversation, "dry_run": True})
        receipt = scene.call("checkpointer", "forget", conversation)["result"]
        scene.call("checkpointer", "verify_receipt", {"receipt": receipt})
        scene.finish()


def test_the_mem0_history_database_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    """``BranchMem0.forget`` and ``verify_receipt`` read (and rewrite) Mem0's history.db."""
    pytest.importorskip("mem0")
    directory = tmp_path / "mem0"
    message = {"kind": "message", "id": "secret"}
    with Scene(tmp_path, "mem0", directory, directory / "history.db", "sqlite") as scene:
        scene.call("wrapper", "forget", {**message, "dry_run": True})
        receipt = scene.call("wrapper", "forget", message)["result"]
        scene.call("wrapper", "verify_receipt", {"receipt": receipt})
        scene.finish()
