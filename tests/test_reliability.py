"""Reliability with real processes and real files: SIGKILL mid-write, racing writers, reopening.

The crash test kills a writer (tests/reliability_worker.py) at random moments and checks,
after each kill, that the file passes ``PRAGMA integrity_check``, holds every acknowledged
write and no partial one. The race test runs four writers against one store and checks that
the result equals a fresh in-memory engine fed the acknowledged writes in commit order. The
reopen test checks that closing and reopening changes no decision (against the oracle too).
``BRANCHMEM_BENCH_SCALE`` turns the counts up: 200 kills, every race at 4 x 2,000 writes
(in CI the own-namespace races and PostgreSQL's run shorter), SCALE times the histories.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from branchmem import Memory
from branchmem._core.visibility import Decision
from branchmem._engine import views
from branchmem.testing import Oracle, apply, compare, random_history
from reliability_worker import Op, perform
from timing import scaled

SCALED = bool(os.environ.get("BRANCHMEM_BENCH_SCALE"))
SCALE = int(os.environ.get("BRANCHMEM_BENCH_SCALE") or 1)
KILLS = 200 if SCALED else 20
REPLAY_EVERY = 50 if SCALED else 10  # kills between full comparisons with a replay
RACE_OPS = 2000  # writes per process
WORKERS = 4
WORKER = Path(__file__).with_name("reliability_worker.py")
SRC = Path(__file__).parent.parent / "src"


# -- talking to workers ------------------------------------------------------------------------
class Child:
    """A worker process whose stdout is drained by a thread (a full pipe would stall it)."""

    def __init__(self, *args: str, stdin: bool = False) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), *args],
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.chunks: list[bytes] = []
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self) -> None:
        assert self.process.stdout is not None
        while chunk := self.process.stdout.read1(65536):
            self.chunks.append(chunk)
            if not self.ready.is_set() and b'{"ready": true}\n' in b"".join(self.chunks):
                self.ready.set()
        self.ready.set()  # the process ended: wake anyone waiting

    def wait_ready(self, timeout: float = 60.0) -> None:
        assert self.ready.wait(scaled(timeout)), "worker did not start"
        if self.process.poll() is not None and b"ready" not in b"".join(self.chunks):
            raise AssertionError(f"worker failed to start: {self.stderr()}")

    def finish(self, timeout: float) -> str:
        """The transcript, once the process has ended (``timeout``: as on an idle machine)."""
        self.process.wait(scaled(timeout))
        self.reader.join(scaled(timeout))
        return b"".join(self.chunks).decode()

    def stderr(self) -> str:
        assert self.process.stderr is not None
        return self.process.stderr.read().decode(errors="replace")[-3000:]


@dataclass
class Transcript:
    """What a worker reported: acknowledged writes with their order, and a write in flight."""

    acked: list[tuple[Op, int]] = field(default_factory=list)
    in_flight: Op | None = None
    refused: Counter[str] = field(default_factory=Counter)
    done: bool = False


def read_transcript(text: str) -> Transcript:
    """Parse complete lines only: a line cut by the kill was never acted on."""
    transcript = Transcript()
    pending: dict[str, Any] | None = None
    for line in text.split("\n")[:-1]:
        message = json.loads(line)
        if "try" in message:
            assert pending is None, f"a new write began before {pending} was answered"
            pending = message
        elif "ack" in message:
            assert pending is not None and pending["n"] == message["ack"], message
            transcript.acked.append((pending["try"], message["seq"]))
            pending = None
        elif "err" in message:
            transcript.refused[message["err"]] += 1
            pending = None
        elif "done" in message:
            transcript.done = True
    transcript.in_flight = None if pending is None else pending["try"]
    return transcript


# -- comparing two memories ------------------------------------------------------------------
def written_ids(op: Op) -> list[str]:
    if op["op"] == "batch":
        return [event["id"] for event in op["events"]]
    return [op["id"]] if op["op"] in ("event", "record", "retract") else []


def assert_same_contents(
    got: Memory, want: Memory, namespace: str, *, same_seq: bool = False
) -> None:
    """Events, every revision, statuses, heads and the audit log, in the same arrival order.

    Arrival numbers (``seq``) are compared only with ``same_seq``: ordering is the contract
    every backend keeps; the exact numbers are checked by their own test.
    """

    def plain(item: Any) -> Any:
        return item if same_seq else replace(item, seq=0)

    got_store, want_store = got.store, want.store
    with got_store.reading(namespace):
        got_nodes = list(got_store.iter_events(namespace))
        got_records = got_store.record_ids(namespace)
        got_revisions = {r: got_store.get_revisions(namespace, r) for r in got_records}
        got_status = got_store.statuses(namespace, [*got_records, *(e.id for e in got_nodes)])
    want_nodes = list(want_store.iter_events(namespace))
    assert [plain(e) for e in got_nodes] == [plain(e) for e in want_nodes]
    want_records = want_store.record_ids(namespace)
    assert got_records == want_records
    for record_id in want_records:
        want_revisions = want_store.get_revisions(namespace, record_id)
        assert [plain(r) for r in got_revisions[record_id]] == [plain(r) for r in want_revisions], (
            record_id
        )
    assert got_status == want_store.statuses(
        namespace, [*want_records, *(e.id for e in want_nodes)]
    )
    assert got.heads(namespace=namespace) == want.heads(namespace=namespace)

    def entries(mem: Memory) -> list[tuple[Any, ...]]:
        return [
            (e.seq if same_seq else 0, e.op, e.ids, e.revision, e.reason)
            for e in mem.audit(namespace=namespace)
        ]

    assert entries(got) == entries(want)


def summary(decisions: dict[str, Decision]) -> dict[str, tuple[Any, ...]]:
    """A decision without the arrival numbers inside its revision."""
    return {
        record_id: (
            d.reason,
            d.revision.revision if d.revision else None,
            d.source,
            d.fork,
            d.retracted,
            d.superseded,
            d.stale,
            d.missing,
        )
        for record_id, d in decisions.items()
    }


def assert_same_decisions(
    got: Memory, want: Memory, namespace: str, anchors: list[str | None]
) -> int:
    """Every decision of every shown record, and the order visible() returns, at each anchor."""
    compared = 0
    record_ids = want.store.record_ids(namespace)
    record_ids = random.Random(len(record_ids)).sample(record_ids, k=min(20, len(record_ids)))

    def observe(mem: Memory, anchor: str | None, mode: str, cross_tree: bool) -> Any:
        with mem._read(namespace) as ns:
            view = views.view(ns, anchor, cross_tree, mode)
            ordered = [
                [
                    (d.record_id, d.revision.revision if d.revision else None)
                    for d in views.chosen(view, None, None, None, include, include)
                ]
                for include in (False, True)
            ]
            reasons = {r: view.decide(r).reason for r in record_ids}
            return summary(view.decisions()), reasons, ordered

    for anchor in anchors:
        for mode in ("strict", "compat"):
            for cross_tree in (False, True):
                with got.store.reading(namespace):
                    seen = observe(got, anchor, mode, cross_tree)
                expected = observe(want, anchor, mode, cross_tree)
                assert seen == expected, (anchor, mode, cross_tree)
                compared += len(expected[0])
        shown = [
            [(r.id, r.revision) for r in m.visible(anchor, namespace=namespace)]
            for m in (got, want)
        ]
        assert shown[0] == shown[1], anchor
    return compared


def sample_anchors(mem: Memory, namespace: str, count: int, rng: random.Random) -> list[str | None]:
    events = [node.id for node in mem.store.iter_events(namespace)]
    return [None, *rng.sample(events, k=min(count, len(events)))]


def replay(ops: list[tuple[Op, int]], namespace: str) -> Memory:
    """A fresh in-memory engine fed ``ops`` in order; none may be refused."""
    mem = Memory()
    for op, _ in ops:
        perform(mem, op, namespace, locate=False)
    return mem


# -- crash ---------------------------------------------------------------------------------------
def integrity_check(path: Path) -> None:
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []


def assert_no_partial_write(path: Path) -> None:
    """Index rows, revisions and the audit log agree: every call landed whole or not at all."""
    with sqlite3.connect(path) as db:

        def one(query: str) -> Any:
            return db.execute(query).fetchone()[0]

        ops = dict(db.execute("SELECT op, COUNT(*) FROM audit GROUP BY op").fetchall())
        assert one("SELECT COUNT(*) FROM events") == one(
            "SELECT COUNT(*) FROM audit_ids i JOIN audit a ON a.namespace = i.namespace "
            "AND a.seq = i.seq WHERE a.op IN ('add_event', 'add_events')"
        )
        revisions = one("SELECT COUNT(*) FROM revisions")
        assert revisions == ops.get("add_record", 0) + ops.get("revise", 0)
        assert one("SELECT COUNT(*) FROM retractions") == ops.get("retract", 0)
        assert one("SELECT COUNT(*) FROM revisions WHERE kind = 'retraction'") == ops.get(
            "retract", 0
        )
        assert one("SELECT COUNT(*) FROM supersedes") <= ops.get("supersede", 0)
        # a revision is indexed either at its frontier events or as ungated, never neither
        assert (
            one(
                "SELECT COUNT(*) FROM revisions r WHERE NOT EXISTS (SELECT 1 FROM frontiers f "
                "WHERE f.namespace = r.namespace AND f.record_id = r.record_id AND f.revision = "
                "r.revision) AND NOT EXISTS (SELECT 1 FROM ungated u WHERE u.namespace = "
                "r.namespace AND u.record_id = r.record_id AND u.revision = r.revision)"
            )
            == 0
        )
        # every audit entry names its ids (NOT IN a list SQLite builds once: the same
        # question as NOT EXISTS, which searched audit_ids by namespace alone for every entry,
        # ~6 s a check on the 20th generation)
        assert (
            one(
                "SELECT COUNT(*) FROM audit a WHERE (a.namespace, a.seq) NOT IN "
                "(SELECT namespace, seq FROM audit_ids)"
            )
            == 0
        )
        top = max(
            one(f"SELECT COALESCE(MAX(seq), 0) FROM {table}")
            for table in ("audit", "events", "revisions")
        )
        assert (
            one("SELECT COALESCE(MAX(seq), 0) FROM namespaces")
            == top
            == one("SELECT COALESCE(MAX(seq), 0) FROM audit")
        )
        # statuses are exactly what the withdraw/restore entries of the audit log add up to
        expected: set[str] = set()
        for op, ids in db.execute(
            "SELECT op, ids FROM audit WHERE op IN ('withdraw', 'restore') ORDER BY seq"
        ):
            (item,) = json.loads(ids)
            (expected.add if op == "withdraw" else expected.discard)(item)
        assert {r[0] for r in db.execute("SELECT id FROM statuses")} == expected


def landed(mem: Memory, op: Op, acked_counts: Counter[tuple[str, str]]) -> bool:
    """Did the write in flight at the kill commit? (Checked all-or-nothing by the caller.)"""
    store = mem.store
    kind = op["op"]
    if kind in ("event", "batch"):
        present = [store.get_event("default", i) is not None for i in written_ids(op)]
        assert all(present) or not any(present), f"a batch landed in part: {present}"
        return present[0]
    if kind in ("record", "retract"):
        return bool(store.get_revisions("default", op["id"]))
    key = audit_key(op)
    assert key is not None
    entries = [e for e in mem.audit(id=key[1], op=key[0]) if e.ids[0] == key[1]]
    assert len(entries) - acked_counts[key] in (0, 1)
    return len(entries) > acked_counts[key]


def audit_key(op: Op) -> tuple[str, str] | None:
    """(audit op, id) of a call that adds no id of its own, so its count tells if it landed."""
    kind = op["op"]
    if kind not in ("revise", "withdraw", "restore", "supersede", "head"):
        return None
    return ("set_head" if kind == "head" else kind, op["new"] if kind == "supersede" else op["id"])


def test_sigkill_loses_no_acknowledged_write_and_leaves_no_partial_one(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    rng = random.Random(20260)
    history: list[tuple[Op, int]] = []  # what the store must hold, in commit order
    acked_counts: Counter[tuple[str, str]] = Counter()
    in_flight_landed = in_flight_lost = 0
    for generation in range(KILLS):
        child = Child("crash", str(path), str(rng.randrange(10**9)), str(generation))
        child.wait_ready()
        time.sleep(rng.uniform(0.01, 0.35))
        os.kill(child.process.pid, signal.SIGKILL)
        transcript = read_transcript(child.finish(timeout=30))
        assert child.process.returncode == -signal.SIGKILL, child.stderr()

        integrity_check(path)
        assert_no_partial_write(path)
        with Memory.open(path) as mem:
            for op, _ in transcript.acked:  # acknowledged: must be there
                for item in written_ids(op):
                    assert mem.store.get_event("default", item) or mem.store.get_revisions(
                        "default", item
                    ), f"generation {generation}: acknowledged {item!r} is missing"
            history.extend(transcript.acked)
            acked_counts.update(filter(None, (audit_key(op) for op, _ in transcript.acked)))
            if transcript.in_flight is not None:
                if landed(mem, transcript.in_flight, acked_counts):
                    in_flight_landed += 1
                    history.append((transcript.in_flight, -1))
                    acked_counts.update(filter(None, [audit_key(transcript.in_flight)]))
                else:
                    in_flight_lost += 1
            if generation % REPLAY_EVERY == REPLAY_EVERY - 1 or generation == KILLS - 1:
                fresh = replay(history, "default")
                assert_same_contents(mem, fresh, "default")
                anchors = sample_anchors(fresh, "default", 5, rng)
                assert_same_decisions(mem, fresh, "default", anchors)
    # the kills must have caught writes in flight, or nothing partial was ever at risk
    assert in_flight_landed + in_flight_lost >= KILLS // 2, (in_flight_landed, in_flight_lost)
    with Memory.open(path) as mem:
        assert mem.report()["store"]["events"] > 200  # the one file grew across the kills


# -- race ------------------------------------------------------------------------------------------
def postgres_url(request: pytest.FixtureRequest) -> str:
    if importlib.util.find_spec("branchmem.store.postgres") is None:
        pytest.skip("the PostgreSQL backend is not installed")
    try:
        return str(request.getfixturevalue("pg_dsn"))
    except pytest.FixtureLookupError:
        pytest.skip("no pg_dsn fixture (tests/pg.py is not loaded)")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "race.db")  # not created: the writers race to create it too
    else:
        yield postgres_url(request)


@pytest.mark.parametrize("shared", [True, False], ids=["one-namespace", "own-namespaces"])
def test_racing_writers_end_with_the_union_of_their_acknowledged_writes(
    store_url: str, shared: bool
) -> None:
    run = uuid.uuid4().hex[:8]
    namespaces = [f"race-{run}" if shared else f"race-{run}-{w}" for w in range(WORKERS)]
    ops = RACE_OPS
    if not SCALED:  # CI: the contended race in full on SQLite, the others shorter
        if not shared:
            ops //= 8
        if store_url.startswith("postgresql"):
            ops //= 8  # a round trip per statement
    children = [
        Child(
            "race",
            store_url,
            namespaces[w],
            str(w),
            str(WORKERS),
            "1" if shared else "0",
            str(ops),
            str(7 + w),
            stdin=True,
        )
        for w in range(WORKERS)
    ]
    for child in children:
        child.wait_ready()
    for child in children:  # start together
        assert child.process.stdin is not None
        child.process.stdin.write(b"go\n")
        child.process.stdin.flush()
    transcripts = []
    for child in children:
        text = child.finish(timeout=600)
        assert child.process.returncode == 0, child.stderr()
        transcripts.append(read_transcript(text))
        assert transcripts[-1].done and transcripts[-1].in_flight is None

    by_namespace: dict[str, list[tuple[Op, int]]] = {}
    for namespace, transcript in zip(namespaces, transcripts, strict=True):
        by_namespace.setdefault(namespace, []).extend(transcript.acked)
    refused = sum((t.refused for t in transcripts), Counter())
    acked = sum(len(t.acked) for t in transcripts)
    assert acked >= 0.9 * WORKERS * ops, (acked, refused)  # writes, not a pile of refusals

    rng = random.Random(run)
    with Memory.open(store_url) as mem:
        for namespace, writes in by_namespace.items():
            writes.sort(key=lambda item: item[1])  # commit order
            seqs = [seq for _, seq in writes]
            assert len(set(seqs)) == len(seqs), "two acknowledged writes share a seq"
            expected_events = {
                i for op, _ in writes if op["op"] in ("event", "batch") for i in written_ids(op)
            }
            held_events = {node.id for node in mem.store.iter_events(namespace)}
            assert held_events == expected_events
            expected_records = {op["id"] for op, _ in writes if op["op"] in ("record", "retract")}
            assert set(mem.store.record_ids(namespace)) == expected_records
            revisions = Counter(op["id"] for op, _ in writes if op["op"] == "revise")
            for record_id in expected_records:
                got = mem.get_record(record_id, namespace=namespace).revision
                assert got == 1 + revisions[record_id], record_id

            fresh = replay(writes, namespace)
            assert_same_contents(mem, fresh, namespace)
            anchors = sample_anchors(fresh, namespace, 8 if shared else 3, rng)
            assert assert_same_decisions(mem, fresh, namespace, anchors) > 0


# -- reopen --------------------------------------------------------------------------------------
def test_a_reopened_store_decides_like_the_engine_and_the_oracle(tmp_path: Path) -> None:
    rng = random.Random(31)
    path = tmp_path / "reopen.db"
    histories = {f"h{i}": random_history(rng) for i in range(30 * SCALE)}
    oracles = {namespace: Oracle() for namespace in histories}
    in_memory = Memory()
    queue = [(ns, op) for ns, ops in histories.items() for op in ops]
    # interleave the namespaces, keeping each one's order
    rng.shuffle(queue)
    positions: dict[str, int] = Counter()
    ordered = []
    for namespace, _ in queue:
        ordered.append((namespace, histories[namespace][positions[namespace]]))
        positions[namespace] += 1
    shadows = {namespace: Oracle() for namespace in histories}  # for the in-memory engine
    mem = Memory.open(path)
    try:
        for namespace, op in ordered:
            apply(mem, oracles[namespace], op, namespace)
            apply(in_memory, shadows[namespace], op, namespace)
            if rng.random() < 0.01:  # close and reopen midway through the histories
                mem.close()
                mem = Memory.open(path)
    finally:
        mem.close()
    compared = 0
    with Memory.open(f"sqlite:///{path}") as reopened:
        for namespace in histories:
            compared += compare(reopened, oracles[namespace], namespace)
            assert_same_contents(reopened, in_memory, namespace)
            anchors = sample_anchors(in_memory, namespace, 6, rng)
            assert_same_decisions(reopened, in_memory, namespace, anchors)
    assert compared > 0


def test_arrival_numbers_are_the_same_on_sqlite_and_in_memory(tmp_path: Path) -> None:
    rng = random.Random(8)
    in_memory = Memory()
    with Memory.open(tmp_path / "seq.db") as mem:
        for index in range(20):
            namespace = f"h{index}"
            shadows = (Oracle(), Oracle())
            for op in random_history(rng):
                apply(mem, shadows[0], op, namespace)
                apply(in_memory, shadows[1], op, namespace)
            assert_same_contents(mem, in_memory, namespace, same_seq=True)


def test_sigkill_in_the_erase_cleanup_window_is_resumed_on_the_next_open(tmp_path: Path) -> None:
    marker = "QX-crash-marker-7d21"
    path = tmp_path / "cleanup.db"
    child = Child("erase-and-die", str(path), marker)
    child.wait_ready()
    child.finish(60)
    assert child.process.returncode == -signal.SIGKILL
    assert "survived" not in b"".join(child.chunks).decode()
    files = [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm")]
    # the erase committed, its cleanup did not run: the marker is still in the files
    assert sum(f.read_bytes().count(marker.encode()) for f in files if f.exists()) > 0
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM erase_cleanup").fetchone()[0] == 1
    with Memory.open(path) as mem:  # opening resumes the cleanup
        assert mem.finish_cleanup() is None
        assert mem.explain("secret", "root").reason == "erased"
        for file in files:
            if file.exists():
                assert marker.encode() not in file.read_bytes(), file.name
    integrity_check(path)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM erase_cleanup").fetchone()[0] == 0
