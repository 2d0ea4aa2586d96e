"""The conformance suite on PostgreSQL, plus what only a shared server has to show.

Each test gets fresh databases, cloned from a template migrated once per session (``CREATE
DATABASE ... TEMPLATE`` takes tens of milliseconds). The concurrency test runs this file as a
script in several processes: ``python test_backend_postgres.py writer URL NAMESPACE WORKER``.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from branchmem import Memory, NotFoundError
from branchmem.errors import SchemaVersionError
from branchmem.store.base import Store
from branchmem.store.schema import SCHEMA_VERSION
from branchmem.testing import SCALE, BackendConformance, StoreConformance, chengdu
from timing import scaled

pytest_plugins = ["pg"]  # the pg_dsn fixture (a no-op when conftest.py already loads it)

WORKERS = 4
WRITES = 200  # per worker
NAMESPACE = "shared"


class Databases:
    """Creates and drops the databases of this pytest process on the test server."""

    def __init__(self, dsn: str) -> None:
        import psycopg

        from branchmem.store.postgres import PostgresStore
        from pg import with_database  # imported late: pytest registers pg as a plugin first

        self.dsn = dsn
        self.admin = psycopg.connect(dsn, autocommit=True)
        self.prefix = f"bm_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        self.template = f"{self.prefix}_template"
        self.admin.execute(f'CREATE DATABASE "{self.template}"')
        PostgresStore(with_database(dsn, self.template), migrate=True).close()
        self.with_database = with_database
        self.count = 0

    def create(self, *, empty: bool = False) -> tuple[str, str]:
        """A new database (migrated unless ``empty``): its name and URL."""
        self.count += 1
        name = f"{self.prefix}_{self.count}"
        template = "template0" if empty else self.template
        self.admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return name, self.with_database(self.dsn, name)

    def drop(self, name: str) -> None:
        self.admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def close(self) -> None:
        self.drop(self.template)
        self.admin.close()


@pytest.fixture(scope="session")
def databases(pg_dsn: str) -> Iterator[Databases]:
    made = Databases(pg_dsn)
    yield made
    made.close()


@pytest.fixture
def fresh(databases: Databases) -> Iterator[Any]:
    """``fresh()`` -> the URL of a new migrated database, dropped after the test."""
    names: list[str] = []

    def make(*, empty: bool = False) -> str:
        name, url = databases.create(empty=empty)
        names.append(name)
        return url

    yield make
    for name in names:
        databases.drop(name)


class TestPostgres(BackendConformance):
    """Each test gets a fresh database; every ``make_memory`` of a test opens a new ``Memory``
    (its own pool) on it. The differential test's scenarios each use their own namespace, so
    they share the test's database the way tenants share a deployment."""

    # ~1,900 statements per random tree make PostgreSQL's differential round-trip bound;
    # BRANCHMEM_BENCH_SCALE multiplies it for long runs (``make bench``)
    differential_trees = 32 * SCALE

    @pytest.fixture(autouse=True)
    def _database(self, fresh: Any) -> Iterator[None]:
        self.url: str = fresh()
        self.opened: list[Memory] = []
        yield
        for memory in self.opened:
            memory.close()

    def make_memory(self, mode: str = "strict") -> Memory:
        memory = Memory.open(self.url, mode)
        self.opened.append(memory)
        return memory


class TestPostgresContract(StoreConformance):
    """The ``Store`` contract, a fresh database a store (fewer questions: each per-item read
    it is checked against is a round trip)."""

    histories = 3
    questions = 4

    @pytest.fixture(autouse=True)
    def _database(self, fresh: Any) -> None:
        self.fresh = fresh

    def make_store(self) -> Store:
        from branchmem.store.postgres import PostgresStore

        return PostgresStore(self.fresh())


# -- schema ------------------------------------------------------------------------------
def test_a_store_from_a_newer_branchmem_is_refused(fresh: Any) -> None:
    import psycopg

    url = fresh()
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("INSERT INTO branchmem_schema (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    with pytest.raises(SchemaVersionError, match="newer"):
        Memory.open(url)


def test_processes_migrating_a_new_database_at_once_migrate_it_once(fresh: Any) -> None:
    import psycopg

    from branchmem.store.postgres import PostgresStore

    url = fresh(empty=True)
    start = threading.Barrier(6)
    errors: list[BaseException] = []

    def open_it() -> None:  # each store has its own connections: as separate processes do
        try:
            start.wait()
            PostgresStore(url).close()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with psycopg.connect(url) as db:
        versions = [row[0] for row in db.execute("SELECT version FROM branchmem_schema")]
    assert versions == list(range(1, SCHEMA_VERSION + 1))


def test_every_table_leads_its_primary_key_with_namespace(fresh: Any) -> None:
    import psycopg

    url = fresh()
    with psycopg.connect(url) as db:
        tables = [
            row[0]
            for row in db.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() "
                "AND table_name NOT IN ('branchmem_schema', 'api_keys')"  # global by design:
            )  # a service key names the namespaces it may use
        ]
        first = dict(
            db.execute(  # type: ignore[arg-type]
                "SELECT c.relname, a.attname FROM pg_index i "
                "JOIN pg_class c ON c.oid = i.indrelid JOIN pg_attribute a "
                "ON a.attrelid = c.oid AND a.attnum = i.indkey[0] "
                "WHERE i.indisprimary AND c.relnamespace = current_schema()::regnamespace"
            ).fetchall()
        )
    assert len(tables) >= 10
    assert {table: first.get(table) for table in tables} == dict.fromkeys(tables, "namespace")


# -- isolation ---------------------------------------------------------------------------
def _exercise_every_public_method(memory: Memory, namespace: str) -> None:
    chengdu_in(memory, namespace)
    memory.set_head("a2b", namespace=namespace)
    memory.add_record("f-budget", sources=["u2b"], content="budget 5k", key="budget",
                      namespace=namespace)  # fmt: skip
    memory.revise("f-budget", content="budget 6k", sources=["a2b"], namespace=namespace)
    memory.add_record("f-plan", sources=["f-hangzhou"], content="plan", namespace=namespace)
    memory.supersede("f-budget", "f-planning", namespace=namespace)
    memory.retract("x-city", sources=["a2b"], key="city", namespace=namespace)
    memory.withdraw("f-plan", namespace=namespace)
    memory.restore("f-plan", namespace=namespace)
    memory.add_events([{"id": "z1"}, {"id": "z2", "parent": "z1"}], namespace=namespace)
    memory.context("a2b", query="budget", session="s1", namespace=namespace)
    memory.revise("f-hangzhou", content="moving to Hangzhou in May", sources=["a2"],
                  namespace=namespace)  # fmt: skip
    memory.repair(lambda record, view: (record.content, ["a2b"]), namespace=namespace)
    memory.erase("z2", reason="test", namespace=namespace)
    _read_everything(memory, namespace)


def chengdu_in(memory: Memory, namespace: str) -> None:
    class Bound:
        def __getattr__(self, name: str) -> Any:
            method = getattr(memory, name)
            return lambda *a, **k: method(*a, namespace=namespace, **k)

    chengdu(Bound())  # type: ignore[arg-type]


def _read_everything(memory: Memory, namespace: str) -> dict[str, Any]:
    """Every public read, as plain values; NotFoundError becomes the string 'not found'."""

    def attempt(call: Any) -> Any:
        try:
            return call()
        except NotFoundError:
            return "not found"

    ns = {"namespace": namespace}
    out: dict[str, Any] = {
        "heads": memory.heads(**ns),
        "head": attempt(lambda: memory.head("u1", **ns)),
        "report": memory.report(**ns)["store"],
        "audit": [(e.op, e.ids) for e in memory.audit(**ns)],
        "audit_id": [e.op for e in memory.audit(id="f-chengdu", **ns)],
    }
    for event_id in ("u1", "a2", "a2b", "z2"):
        out[f"event {event_id}"] = attempt(lambda e=event_id: memory.get_event(e, **ns).content)
        out[f"path {event_id}"] = attempt(lambda e=event_id: [x.id for x in memory.path(e, **ns)])
        out[f"visible {event_id}"] = attempt(
            lambda e=event_id: [(r.id, r.revision) for r in memory.visible(
                e, include_superseded=True, include_stale=True, **ns)]
        )  # fmt: skip
        out[f"stale {event_id}"] = attempt(lambda e=event_id: [r.id for r in memory.stale(e, **ns)])
        out[f"current {event_id}"] = attempt(lambda e=event_id: memory.current("city", e, **ns))
        for record_id in ("f-chengdu", "f-hangzhou", "f-budget", "f-plan"):
            key = f"{record_id} at {event_id}"
            out["explain " + key] = attempt(
                lambda r=record_id, e=event_id: memory.explain(r, e, **ns).reason
            )
            out["is_visible " + key] = attempt(
                lambda r=record_id, e=event_id: memory.is_visible(r, e, **ns)
            )
    for record_id in ("f-chengdu", "f-budget", "f-plan", "x-city"):
        out[f"record {record_id}"] = attempt(lambda r=record_id: memory.get_record(r, **ns))
        out[f"history {record_id}"] = attempt(
            lambda r=record_id: [h["op"] for h in memory.history(r, **ns)]
        )
        out[f"dependents {record_id}"] = attempt(lambda r=record_id: memory.dependents(r, **ns))
    out["visible none"] = [r.id for r in memory.visible(None, mode="compat", **ns)]
    for event_id in ("a2", "a2b"):
        out[f"search {event_id}"] = attempt(
            lambda e=event_id: [h.record.id for h in memory.search("budget", e, **ns)]
        )
        out[f"context {event_id}"] = attempt(lambda e=event_id: memory.context(e, **ns).items)
    out["deliveries"] = [d.items for d in memory.deliveries("s1", **ns)]
    out["stale_deliveries"] = [d.record_id for d in memory.stale_deliveries("s1", **ns)]
    out["repair_queue"] = [i.record_id for i in memory.repair_queue(**ns)]
    return out


def test_namespaces_are_isolated_through_every_public_read(fresh: Any) -> None:
    with Memory.open(fresh()) as memory:
        _exercise_every_public_method(memory, "alice")
        alice = _read_everything(memory, "alice")
        bob = _read_everything(memory, "bob")
        # bob sees nothing of alice: every read is empty or not found
        for name, value in bob.items():
            if name == "report":
                assert set(value.values()) == {0}, value
            else:
                assert value in ("not found", [], {}, None, set()), (name, value)
        assert alice["visible a2b"] and alice["event u1"] != "not found"
        # the same ids written into bob change nothing alice reads
        _exercise_every_public_method(memory, "bob")
        assert _read_everything(memory, "alice") == alice


# -- reliability -------------------------------------------------------------------------
def test_a_reopened_store_gives_the_same_decisions(fresh: Any) -> None:
    url = fresh()
    reference = Memory()
    with Memory.open(url) as memory:
        _exercise_every_public_method(memory, "default")
    _exercise_every_public_method(reference, "default")
    with Memory.open(url) as memory:
        got = _read_everything(memory, "default")
    want = _read_everything(reference, "default")
    for reads in (got, want):  # arrival numbers and times are the store's own
        del reads["report"]
        for name in [n for n in reads if n.startswith("record ")]:
            reads[name] = reads[name].id, reads[name].revision, reads[name].content
    assert got == want


def test_a_lost_connection_is_replaced_before_the_next_call(fresh: Any) -> None:
    from pg import kill_other_connections

    url = fresh()
    with Memory.open(url) as memory:
        chengdu(memory)
        assert kill_other_connections(url), "the store held no connection to kill"
        assert [r.id for r in memory.visible("a2b")] == ["f-planning", "f-hangzhou"]
        memory.add_event("u3", "a2b", content="after the restart")
        assert memory.get_event("u3").parent == "a2b"


def test_driver_errors_become_branchmem_errors(fresh: Any) -> None:
    from branchmem.errors import ConflictError, InvalidInput, StorageError
    from branchmem.store.postgres import PostgresStore

    store = PostgresStore(fresh())
    try:
        with store.transaction("default"):
            store.set_head("default", "t", "e1")
            with pytest.raises(ConflictError, match="duplicate"), store.transaction("default"):
                store._run("INSERT INTO heads (namespace, tree, event_id) VALUES (?, ?, ?)",
                           ("default", "t", "e2"))  # fmt: skip
        with pytest.raises(StorageError, match=r"\[42P01\].*no_such_table"), store.reading("x"):
            store._run("SELECT * FROM no_such_table")
        assert store.heads("default") == {"t": "e1"}  # the savepoint kept the outer write
        with Memory(store=store) as memory, pytest.raises(InvalidInput, match="NUL"):
            memory.add_event("u1", content="a\x00b")
    finally:
        store.close()


def test_an_unreachable_server_is_a_storage_error_without_the_password(pg_dsn: str) -> None:
    import socket

    from branchmem.errors import StorageError
    from branchmem.store.postgres import PostgresStore

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://someone:s3cret-word@127.0.0.1:{port}/nowhere"
    with pytest.raises(StorageError, match=f"127.0.0.1:{port}/nowhere") as caught:
        PostgresStore(url, timeout=1.0)
    assert "s3cret-word" not in str(caught.value)


def test_one_namespace_writes_alone_others_write_alongside(fresh: Any) -> None:
    from branchmem.store.postgres import PostgresStore

    url = fresh()
    holder = PostgresStore(url)
    with Memory.open(url) as memory:
        finished = threading.Event()

        def same_namespace() -> None:
            memory.add_event("late", namespace="alpha")
            finished.set()

        waiter = None
        with holder.transaction("alpha"):
            holder.heads("alpha")  # the lock goes with the transaction's first statement
            memory.add_event("free", namespace="beta")  # another namespace: not blocked
            waiter = threading.Thread(target=same_namespace)
            waiter.start()
            assert not finished.wait(0.5), "a writer of a locked namespace did not wait"
        waiter.join(10)
        assert finished.is_set()
        assert memory.get_event("late", namespace="alpha").id == "late"
    holder.close()


# -- concurrency: real processes ---------------------------------------------------------
Op = tuple[str, dict[str, Any]]


def plan(seed: int) -> list[list[Op]]:
    """Each worker's writes: events whose parents other workers may write later, records on
    sources that may not have arrived, revisions, withdrawals and retractions of its own."""
    rng = random.Random(seed)
    ops: list[list[Op]] = [[] for _ in range(WORKERS)]
    events: list[str] = []
    for worker in range(WORKERS):
        own_records: list[str] = []
        withdrawn: set[str] = set()
        for index in range(WRITES):
            roll = rng.random()
            live = [r for r in own_records if r not in withdrawn]
            if roll < 0.5 or not events:
                batch = []
                for part in range(rng.choice([1, 1, 1, 2, 3])):
                    event_id = f"w{worker}e{index}.{part}"
                    parent = rng.choice(events) if events and rng.random() < 0.9 else None
                    batch.append({"id": event_id, "parent": parent, "content": event_id})
                    events.append(event_id)
                ops[worker].append(("events", {"events": batch}))
            elif roll < 0.75 or not live:
                record_id = f"w{worker}r{index}"
                pool = events + own_records
                sources = rng.sample(pool, min(len(pool), rng.choice([1, 1, 2])))
                ops[worker].append(("record", {
                    "id": record_id, "sources": sources, "content": record_id,
                    "key": rng.choice([None, "city", "budget"]),
                }))  # fmt: skip
                own_records.append(record_id)
            elif roll < 0.88:
                record_id = rng.choice(live)
                ops[worker].append(("revise", {
                    "id": record_id, "content": f"{record_id} revised at {index}",
                    "sources": [rng.choice(events)],
                }))  # fmt: skip
            elif roll < 0.94:
                record_id = rng.choice(live)
                withdrawn.add(record_id)
                ops[worker].append(("withdraw", {"id": record_id}))
            else:
                ops[worker].append(("retract", {
                    "id": f"w{worker}x{index}", "sources": [rng.choice(events)],
                    "targets": [rng.choice(own_records)],
                }))  # fmt: skip
        rng.shuffle(ops[worker])  # children before parents inside one worker, too
        ops[worker] = _creation_first(ops[worker])
    return ops


def _creation_first(ops: list[Op]) -> list[Op]:
    """Revisions, withdrawals and retractions of a record wait for the record itself."""
    created: set[str] = set()
    waiting: dict[str, list[Op]] = {}
    ordered: list[Op] = []
    for op in ops:
        kind, args = op
        if kind in ("revise", "withdraw", "retract"):
            needs = args["targets"][0] if kind == "retract" else args["id"]
            if needs not in created:
                waiting.setdefault(needs, []).append(op)
                continue
        ordered.append(op)
        if kind == "record":
            created.add(args["id"])
            ordered.extend(waiting.pop(args["id"], []))
    assert not waiting
    return ordered


def apply_op(memory: Memory, op: Op, namespace: str) -> None:
    kind, args = op
    if kind == "events":
        memory.add_events(args["events"], namespace=namespace)
    elif kind == "record":
        memory.add_record(args["id"], sources=args["sources"], content=args["content"],
                          key=args["key"], namespace=namespace)  # fmt: skip
    elif kind == "revise":
        memory.revise(args["id"], content=args["content"], sources=args["sources"],
                      namespace=namespace)  # fmt: skip
    elif kind == "withdraw":
        memory.withdraw(args["id"], namespace=namespace)
    else:
        memory.retract(args["id"], sources=args["sources"], targets=args["targets"],
                       namespace=namespace)  # fmt: skip


def writer(url: str, namespace: str, worker: int, seed: int, start_at: float) -> None:
    """One API worker: applies its writes, printing each acknowledged one."""
    ops = plan(seed)[worker]
    with Memory.open(url) as memory:
        time.sleep(max(0.0, start_at - time.time()))
        for index, op in enumerate(ops):
            apply_op(memory, op, namespace)
            print(f"ack {index}", flush=True)


def decisions(memory: Memory, namespace: str, anchors: list[str]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for anchor in anchors:
        for mode in ("strict", "compat"):
            seen[f"{anchor} {mode}"] = sorted(
                (r.id, r.revision, r.content)
                for r in memory.visible(anchor, mode=mode, include_superseded=True,
                                        include_stale=True, namespace=namespace)
            )  # fmt: skip
            seen[f"{anchor} {mode} plain"] = sorted(
                r.id for r in memory.visible(anchor, mode=mode, namespace=namespace)
            )
        seen[f"{anchor} stale"] = sorted(r.id for r in memory.stale(anchor, namespace=namespace))
    return seen


def test_concurrent_writer_processes_keep_every_acknowledged_write(fresh: Any) -> None:
    url = fresh()
    seed = random.randrange(10**6)
    start_at = time.time() + 1.5  # every worker has imported and connected by then
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "writer",
                url,
                NAMESPACE,
                str(worker),
                str(seed),
                str(start_at),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in range(WORKERS)
    ]
    try:
        outputs = [worker.communicate(timeout=scaled(120)) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    for worker, (_, stderr) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, f"seed {seed}: {stderr[-3000:]}"
    planned = plan(seed)
    acknowledged = [
        [planned[w][int(line.split()[1])] for line in out.splitlines() if line.startswith("ack ")]
        for w, (out, _) in enumerate(outputs)
    ]
    assert [len(a) for a in acknowledged] == [len(p) for p in planned], f"seed {seed}"
    events = [e["id"] for ops in acknowledged for k, a in ops if k == "events"
              for e in a["events"]]  # fmt: skip

    with Memory.open(url) as memory:
        # the audit log, in commit order, holds exactly the acknowledged writes
        arrival = arrival_order(memory, acknowledged)
        reference = Memory()  # the in-memory engine, fed the same writes in the same order
        for op in arrival:
            apply_op(reference, op, NAMESPACE)
        got = memory.report(namespace=NAMESPACE)["store"]
        assert got == reference.report(namespace=NAMESPACE)["store"], f"seed {seed}"
        assert got["events"] == len(events)
        for event_id in events:
            assert memory.get_event(event_id, namespace=NAMESPACE).parent == (
                reference.get_event(event_id, namespace=NAMESPACE).parent
            )
        anchors = random.Random(seed).sample(events, 40)
        assert decisions(memory, NAMESPACE, anchors) == decisions(reference, NAMESPACE, anchors)


AUDIT_KINDS = {"add_event": "events", "add_events": "events", "add_record": "record",
               "revise": "revise", "withdraw": "withdraw", "retract": "retract"}  # fmt: skip


def arrival_order(memory: Memory, acknowledged: list[list[Op]]) -> list[Op]:
    """The acknowledged writes in the order the store committed them (its audit order)."""
    waiting: dict[tuple[str, str], list[Op]] = {}
    for worker_ops in acknowledged:
        for op in worker_ops:
            kind, args = op
            first = args["events"][0]["id"] if kind == "events" else args["id"]
            waiting.setdefault((kind, first), []).append(op)
    arrival: list[Op] = []
    for entry in memory.audit(namespace=NAMESPACE):
        queue = waiting.get((AUDIT_KINDS.get(entry.op, ""), entry.ids[0]))
        if queue:  # a retraction's own add_record entry matches nothing planned: skipped
            arrival.append(queue.pop(0))
    assert not any(waiting.values()), "acknowledged writes missing from the store"
    assert len(arrival) == sum(len(ops) for ops in acknowledged)
    return arrival


if __name__ == "__main__" and len(sys.argv) == 7 and sys.argv[1] == "writer":
    writer(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]))


def test_two_tenants_racing_for_one_binding_never_both_get_it(fresh: Any) -> None:
    from keyrace import race_for_one_binding

    outcomes = []
    for _ in range(8):
        url = fresh()
        outcomes.append(race_for_one_binding([Memory.open(url) for _ in range(2)]))  # two pools
    assert outcomes == [["granted", "refused"]] * 8, outcomes


def test_erase_leaves_no_row_holding_a_retraction_about_it(fresh: Any) -> None:
    import psycopg

    url = fresh()
    with Memory.open(url) as mem:
        chengdu(mem)
        mem.add_record("f-health", sources=["u2"], content="ok", key="QX-key-asthma")
        mem.retract("r", sources=["a2"], targets=["f-health"], reason="QX-reason-private")
        mem.retract("r2", sources=["a2"], key="QX-key-asthma", reason="QX-reason-never")
        mem.erase("f-health")
        assert mem.finish_cleanup() is None
    with psycopg.connect(url, autocommit=True) as db:
        tables = [row[0] for row in db.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )]  # fmt: skip
        for table in tables:
            text = "\n".join(str(row) for row in db.execute(f'SELECT * FROM "{table}"'))
            for marker in ("QX-key-asthma", "QX-reason-private", "QX-reason-never"):
                assert marker not in text, (table, marker)


# -- batched writes ------------------------------------------------------------------------
AWKWARD_TEXT = [
    'a "quoted" word', "back\\slash", "{braces, and commas}", "NULL", "", "  spaced  ",
    "line\nbreak\ttab", "ünïcødé ✓ 𝄞", "\\\"", "'single'", "a,b", "}{",
]  # fmt: skip


def test_batched_text_reads_back_as_written(fresh: Any) -> None:
    """A batch's columns travel as array literals the server parses: quotes, backslashes,
    braces, commas and the word NULL must come back unchanged."""
    with Memory.open(fresh()) as mem:
        events = [{"id": "root", "content": "start"}] + [
            {"id": f"e{i}", "parent": "root", "content": text, "meta": {"note": text}, "ts": 1.5}
            for i, text in enumerate(AWKWARD_TEXT)
        ]
        mem.add_events(events)
        mem.add_records(
            {"id": f"r{i}", "sources": [f"e{i}"], "content": text, "key": text or None,
             "scope": text or None, "meta": {"why": text}, "kind": "fact"}
            for i, text in enumerate(AWKWARD_TEXT)
        )  # fmt: skip
        for i, text in enumerate(AWKWARD_TEXT):
            event = mem.get_event(f"e{i}")
            assert (event.content, event.meta, event.ts) == (text, {"note": text}, 1.5)
            record = mem.get_record(f"r{i}")
            assert (record.content, record.key, record.scope, record.meta) == (
                text, text or None, text or None, {"why": text},
            )  # fmt: skip


def test_a_batch_holding_a_nul_is_refused_whole(fresh: Any) -> None:
    from branchmem.errors import InvalidInput

    with Memory.open(fresh()) as mem:
        with pytest.raises(InvalidInput, match="NUL"):
            mem.add_events([{"id": "a", "content": "fine"}, {"id": "b", "content": "a\x00b"}])
        with pytest.raises(NotFoundError):
            mem.get_event("a")


def test_a_deferred_write_that_fails_fails_its_transaction_or_savepoint(fresh: Any) -> None:
    """Writes inside a transaction are sent with the next statement: one that the server
    refuses still rolls back exactly its own transaction (or savepoint)."""
    from branchmem.errors import ConflictError
    from branchmem.store.postgres import PostgresStore

    duplicate = "INSERT INTO heads (namespace, tree, event_id) VALUES (?, ?, ?)"
    store = PostgresStore(fresh())
    try:
        with store.transaction("default"):
            store.set_head("default", "t", "e1")
            with pytest.raises(ConflictError, match="duplicate"), store.transaction("default"):
                store.set_head("default", "u", "e9")
                store._many(duplicate, [("default", "t", "e2")])  # sent with RELEASE
            store.set_head("default", "v", "e3")
        assert store.heads("default") == {"t": "e1", "v": "e3"}
        with pytest.raises(ConflictError, match="duplicate"), store.transaction("default"):
            store.set_head("default", "w", "e4")
            store._many(duplicate, [("default", "t", "e5")])  # sent with COMMIT
        assert store.heads("default") == {"t": "e1", "v": "e3"}
    finally:
        store.close()


def test_a_batch_takes_as_many_round_trips_whatever_its_size(
    fresh: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every table's rows of a batch go in one statement, and writes travel with the next
    read: a conversation of 400 events costs the round trips of one of 10."""
    from pg import counting_store

    Counting, tally = counting_store(monkeypatch)
    with Memory(store=Counting(fresh())) as mem:
        counts = []
        for size in (10, 400):
            namespace = f"n{size}"
            events = [{"id": "e0", "content": "start"}] + [
                {"id": f"e{i}", "parent": f"e{i - 1}", "content": f"turn {i}"}
                for i in range(1, size)
            ]
            records = [
                {"id": f"f{i}", "sources": [f"e{i}"], "key": f"k{i % 7}"} for i in range(size)
            ]
            tally["trips"] = 0
            mem.add_events(events, namespace=namespace)
            mem.add_records(records, namespace=namespace)
            counts.append(tally["trips"])
    assert counts[0] == counts[1], counts


# -- every statement of the conformance suite is routed by namespace ---------------------
@pytest.fixture(autouse=True)
def _every_statement_routed(request: pytest.FixtureRequest) -> Iterator[None]:
    """TestPostgres's statements, each test's own, are checked as test_namespace_routing.py
    reads them (one run of the suite serves both): a statement not pinned to one namespace,
    or one execution naming two, fails the test that sent it."""
    if request.cls is not TestPostgres:
        yield
        return
    from test_namespace_routing import assert_routed, capturing

    with capturing() as captured:
        yield
    assert_routed(captured)


def test_every_conformance_test_is_checked_for_routing(request: pytest.FixtureRequest) -> None:
    """The routing check is wired to every TestPostgres test (collected afresh, so a run of
    a few tests still checks them all)."""
    module = request.node.parent
    (suite,) = [node for node in module.collect() if node.name == "TestPostgres"]
    items = [item for item in suite.collect() if isinstance(item, pytest.Function)]
    assert len(items) > 50
    unchecked = [item.name for item in items if "_every_statement_routed" not in item.fixturenames]
    assert unchecked == []
