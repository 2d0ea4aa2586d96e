"""forget reaches what the integrations keep in branchmem: a LangGraph ``BranchStore``'s items
are records (sourced at checkpoints, their LangGraph namespace in ``meta``), so a subject
named by that namespace, or the thread's conversation, takes them, and the store's cache
(keyed by the Memory's write generation) does not serve them afterwards."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from branchmem.errors import NotFoundError

pytest.importorskip("langgraph")

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from branchmem import Memory
from branchmem.integrations.langgraph import BranchCheckpointer, BranchStore
from branchmem.integrations.langgraph.mapping import thread_event_id
from test_langgraph_store import build_graph, new_thread


def test_forget_a_subject_takes_the_langgraph_items_of_that_namespace() -> None:
    memory = Memory()
    graph = build_graph(BranchStore(memory), BranchCheckpointer(InMemorySaver(), memory))
    thread = new_thread()
    graph.invoke({"said": "my cat is called Mittens"}, thread)
    assert graph.invoke({"said": "dogs"}, thread)["recalled"] == [
        "dogs", "my cat is called Mittens",
    ]  # fmt: skip
    receipt = memory.forget("subject", "facts")  # FACTS = ("user", "facts")
    assert len(receipt.erased["records"]) == 2 and receipt.check.clean
    assert graph.invoke({"said": "birds"}, thread)["recalled"] == ["birds"]


def test_forget_a_thread_takes_its_checkpoints_and_the_items_put_there() -> None:
    memory = Memory()
    graph = build_graph(BranchStore(memory), BranchCheckpointer(InMemorySaver(), memory))
    thread, other = new_thread(), new_thread()
    graph.invoke({"said": "my cat is called Mittens"}, thread)
    graph.invoke({"said": "tea"}, other)
    receipt = memory.forget("conversation", thread_event_id(thread["configurable"]["thread_id"]))
    assert receipt.erased["events"] and len(receipt.erased["records"]) == 1
    assert graph.invoke({"said": "coffee"}, other)["recalled"] == ["coffee", "tea"]


# -- BranchCheckpointer.forget: the saver's checkpoints go too ------------------------------
MARKER = "Mittens"  # in the graph's state (what was said) and in the item put from it


def saver_bytes(saver: Any, path: Path | None) -> bytes:
    """Everything the saver holds, read independently of the receipt's check: a SQLite
    saver's files, an in-memory saver's pickled storage, a PostgreSQL saver's rows and the
    statistics sampled from them."""
    connection = getattr(saver, "conn", None)
    if type(saver).__name__ == "PostgresSaver":
        with saver.lock:
            rows = [
                row
                for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
                for row in connection.execute(f"SELECT * FROM {table}").fetchall()
            ]
            rows += connection.execute(
                "SELECT most_common_vals::text, histogram_bounds::text FROM pg_stats "
                "WHERE schemaname = current_schema() AND tablename LIKE 'checkpoint%'"
            ).fetchall()
        return repr(rows).encode()
    if path is None and connection is not None:  # an in-memory SQLite database: its rows
        rows = [*connection.execute("SELECT * FROM checkpoints")]
        return repr([*rows, *connection.execute("SELECT * FROM writes")]).encode()
    if path is not None:
        return b"".join(
            Path(f"{path}{suffix}").read_bytes()
            for suffix in ("", "-wal", "-journal")
            if Path(f"{path}{suffix}").is_file()
        )
    return repr((saver.storage, saver.writes, saver.blobs)).encode()  # bytes shown as they are


@pytest.fixture(params=["memory", "sqlite", "sqlite-in-memory", "postgres"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Path | None]]:
    if request.param == "memory":
        yield InMemorySaver(), None
        return
    if request.param == "postgres":
        with postgres_saver(request.getfixturevalue("pg_dsn")) as made:
            yield made, None
        return
    path = None if request.param == "sqlite-in-memory" else tmp_path / "checkpoints.db"
    connection = sqlite3.connect(path or ":memory:", check_same_thread=False)
    try:
        yield SqliteSaver(connection), path
    finally:
        connection.close()


@contextlib.contextmanager
def postgres_saver(dsn: str) -> Iterator[Any]:
    """A ``PostgresSaver`` on a fresh database, its connection as LangGraph's docs make it."""
    psycopg = pytest.importorskip("psycopg")
    postgres = pytest.importorskip("langgraph.checkpoint.postgres")
    from psycopg.rows import dict_row

    from pg import fresh_database

    with (
        fresh_database(dsn, "bm_saver") as url,
        psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as db,
    ):
        saver = postgres.PostgresSaver(db)
        saver.setup()
        yield saver


def forgetting(saver: Any) -> tuple[Memory, BranchCheckpointer, Any]:
    """A Memory, the checkpointer over ``saver`` and the test graph over both."""
    memory = Memory()
    checkpointer = BranchCheckpointer(saver, memory)
    return memory, checkpointer, build_graph(BranchStore(memory), checkpointer)


def test_forget_a_thread_deletes_its_checkpoints_in_the_saver(
    saver: tuple[Any, Path | None],
) -> None:
    plain, path = saver
    memory, checkpointer, graph = forgetting(plain)
    thread, other = new_thread(), new_thread()
    # the other thread first: a LangGraph store is shared by threads, so a thread that ran
    # later would recall the item, and its own state would hold a copy of the text
    graph.invoke({"said": "tea"}, other)
    graph.invoke({"said": f"my cat is called {MARKER}"}, thread)
    assert MARKER.encode() in saver_bytes(plain, path)
    thread_id = thread["configurable"]["thread_id"]
    receipt = checkpointer.forget("conversation", thread_event_id(thread_id))
    (section,) = receipt.stores
    assert section.name == "langgraph" and section.erased == {"threads": (thread_id,)}
    assert plain.get_tuple(thread) is None and plain.get_tuple(other) is not None
    assert MARKER.encode() not in saver_bytes(plain, path)  # an independent scan agrees
    assert receipt.hash_matches and memory.verify_receipt(receipt).in_audit
    assert graph.invoke({"said": "coffee"}, other)["recalled"] == ["coffee", "tea"]
    # the other thread's checkpoints share windows with the text that went (timestamps,
    # the metadata's field names): the check reports them. With it gone too, the saver
    # holds nothing, and the check is clean.
    last = checkpointer.forget("conversation", thread_event_id(other["configurable"]["thread_id"]))
    assert last.stores[0].check.clean, last.stores[0].check
    assert last.stores[0].check.locations  # it did read the saver
    # (the store's own check counts the items' keys, which are the texts said here: the
    # record ids the tombstones keep are made of them, as Mem0 memory ids are)


def test_a_thread_erased_in_part_keeps_its_checkpoints_and_the_receipt_says_so() -> None:
    plain = InMemorySaver()
    memory, checkpointer, graph = forgetting(plain)
    thread = new_thread()
    graph.invoke({"said": f"my cat is called {MARKER}"}, thread)
    graph.invoke({"said": "tea"}, thread)
    thread_id = thread["configurable"]["thread_id"]
    root = thread_event_id(thread_id)
    first = next(e.id for e in memory.path(memory.heads()[root]) if e.parent == root)
    dry = checkpointer.forget("branch", first, dry_run=True)  # below the root: not whole
    receipt = checkpointer.forget("branch", first)
    for made in (dry, receipt):
        (section,) = made.stores
        assert section.erased == {"threads": ()}
        assert any(thread_id in line and "in part" in line for line in section.cannot_clean)
        assert not section.check.clean  # the state still holds what was said, and it shows
    assert plain.get_tuple(thread) is not None


def test_a_dry_run_deletes_nothing_and_aforget_deletes() -> None:
    plain = InMemorySaver()
    memory, checkpointer, graph = forgetting(plain)
    thread = new_thread()
    graph.invoke({"said": f"my cat is called {MARKER}"}, thread)
    conversation = thread_event_id(thread["configurable"]["thread_id"])
    dry = checkpointer.forget("conversation", conversation, dry_run=True)
    (section,) = dry.stores
    assert section.counts == {"threads": 1} and not section.check.clean
    assert plain.get_tuple(thread) is not None and memory.visible(memory.heads()[conversation])
    receipt = asyncio.run(checkpointer.aforget("conversation", conversation))
    assert receipt.stores[0].check.clean and plain.get_tuple(thread) is None


def test_a_copy_in_another_threads_state_stays_and_the_check_finds_it() -> None:
    plain = InMemorySaver()
    _, checkpointer, graph = forgetting(plain)
    thread, other = new_thread(), new_thread()
    graph.invoke({"said": f"my cat is called {MARKER}"}, thread)
    graph.invoke({"said": "tea"}, other)  # recalls the item: its state copies the text
    receipt = checkpointer.forget(
        "conversation", thread_event_id(thread["configurable"]["thread_id"])
    )
    (section,) = receipt.stores
    assert plain.get_tuple(thread) is None
    assert MARKER.encode() in saver_bytes(plain, None)  # the other thread's state
    assert not section.check.clean and sum(section.check.locations.values()) > 0


def test_verify_receipt_checks_the_saver_again() -> None:
    plain = InMemorySaver()
    memory, checkpointer, graph = forgetting(plain)
    thread = new_thread()
    graph.invoke({"said": f"my cat is called {MARKER}"}, thread)
    receipt = checkpointer.forget(
        "conversation", thread_event_id(thread["configurable"]["thread_id"])
    )
    verified = checkpointer.verify_receipt(receipt.to_json())  # read back from JSON too
    assert verified.wrapped is not None and verified.wrapped.clean
    assert verified.ok == verified.store.ok  # the store's own check counts the item's key
    # the text comes back into the saver (a thread restored from a backup)
    plain.blobs[("restored", "", "said", "1")] = ("msgpack", f"my cat is called {MARKER}".encode())
    again = asyncio.run(checkpointer.averify_receipt(receipt))
    assert again.wrapped is not None and not again.wrapped.clean and not again.ok
    assert memory.verify_receipt(receipt).in_audit


def test_a_thread_forgotten_past_the_checkpointer_is_caught_up_with() -> None:
    plain = InMemorySaver()
    memory, checkpointer, graph = forgetting(plain)
    thread, other = new_thread(), new_thread()
    graph.invoke({"said": "tea"}, other)
    graph.invoke({"said": f"my cat is called {MARKER}"}, thread)
    thread_id = thread["configurable"]["thread_id"]
    memory.forget("conversation", thread_event_id(thread_id))  # the Memory alone
    assert plain.get_tuple(thread) is not None  # the saver still holds the thread
    dry = checkpointer.forget(
        "message", thread_event_id(other["configurable"]["thread_id"]), dry_run=True
    )
    assert dry.stores[0].erased == {"threads": (thread_id,)} and plain.get_tuple(thread)
    receipt = checkpointer.forget(
        "conversation", thread_event_id(other["configurable"]["thread_id"])
    )
    assert set(receipt.stores[0].erased["threads"]) == {
        thread_id,
        other["configurable"]["thread_id"],
    }
    assert plain.get_tuple(thread) is None and plain.get_tuple(other) is None
    assert receipt.stores[0].check.clean
    with pytest.raises(NotFoundError, match="forget subject 'facts'"):
        checkpointer.forget("subject", "facts")  # nothing names it: said, not an empty receipt


def test_a_saver_never_used_is_named_unchecked_not_an_error() -> None:
    memory = Memory()
    checkpointer = BranchCheckpointer(SqliteSaver(sqlite3.connect(":memory:")), memory)
    memory.add_event("c1", content=f"my cat is called {MARKER}")  # a conversation of its own
    receipt = checkpointer.forget("conversation", memory.get_event("c1").tree or "c1")
    (section,) = receipt.stores
    assert section.erased == {"threads": ()} and receipt.check.clean
    assert len(section.check.unchecked) == 2 and not section.check.clean


def test_a_postgres_savers_statistics_and_restored_rows_are_checked(pg_dsn: str) -> None:
    """The saver's tables are analyzed after the delete, so the planner's samples of the
    deleted rows (``pg_stats``) go with them (cleared where a table is left empty); a row
    written back afterwards is found by ``verify_receipt``."""
    with postgres_saver(pg_dsn) as plain:
        _, checkpointer, graph = forgetting(plain)
        thread = new_thread()
        for turn in range(3):
            graph.invoke({"said": f"my cat is called {MARKER} ({turn})"}, thread)
        with plain.lock:
            plain.conn.execute("ANALYZE checkpoints, checkpoint_blobs, checkpoint_writes")
        assert MARKER.encode() in saver_bytes(plain, None)
        receipt = checkpointer.forget(
            "conversation", thread_event_id(thread["configurable"]["thread_id"])
        )
        (section,) = receipt.stores
        assert MARKER.encode() not in saver_bytes(plain, None)  # rows and statistics
        assert section.check.clean, section.check
        assert "postgres saver pg_stats" in section.check.locations
        assert any("VACUUM FULL" in line for line in section.cannot_clean)
        with plain.lock:  # the thread restored from a backup
            plain.conn.execute(
                "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, "
                "type, blob) VALUES ('restored', '', 'said', '1', 'msgpack', %s)",
                (f"my cat is called {MARKER}".encode(),),
            )
        again = checkpointer.verify_receipt(receipt)
        assert again.wrapped is not None and not again.wrapped.clean and not again.ok


# -- the async savers: cleaned and checked through their own event loop ------------------
@contextlib.asynccontextmanager
async def async_saver(kind: str, path: Path, request: pytest.FixtureRequest) -> Any:
    """An ``AsyncSqliteSaver`` (on a file, or in memory) or an ``AsyncPostgresSaver`` (on a
    fresh database), made by their own ``from_conn_string`` and set up."""
    if kind.startswith("postgres"):
        pytest.importorskip("psycopg")
        postgres = pytest.importorskip("langgraph.checkpoint.postgres.aio")
        from pg import fresh_database

        with fresh_database(request.getfixturevalue("pg_dsn"), "bm_asaver") as url:
            if kind == "postgres":
                async with postgres.AsyncPostgresSaver.from_conn_string(url) as saver:
                    await saver.setup()
                    yield saver
                return
            pool_module = pytest.importorskip("psycopg_pool")
            from psycopg.rows import dict_row

            options = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
            async with pool_module.AsyncConnectionPool(url, kwargs=options, open=False) as pool:
                saver = postgres.AsyncPostgresSaver(pool)
                await saver.setup()
                yield saver
        return
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(
        ":memory:" if kind == "sqlite-in-memory" else str(path)
    ) as saver:
        await saver.setup()
        yield saver


@contextlib.asynccontextmanager
async def pg_connection(saver: Any) -> Any:
    """The async PostgreSQL saver's connection (or one of its pool's)."""
    if hasattr(saver.conn, "getconn"):
        async with saver.conn.connection() as held:
            yield held
    else:
        yield saver.conn


async def async_saver_bytes(saver: Any, kind: str, path: Path) -> bytes:
    """Everything the async saver holds, read independently of the receipt's check."""
    if kind.startswith("postgres"):
        async with saver.lock, pg_connection(saver) as db:
            rows = []
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
                rows += await (await db.execute(f"SELECT * FROM {table}")).fetchall()
            rows += await (
                await db.execute(
                    "SELECT most_common_vals::text, histogram_bounds::text FROM pg_stats "
                    "WHERE schemaname = current_schema() AND tablename LIKE 'checkpoint%'"
                )
            ).fetchall()
        return repr(rows).encode()
    if kind == "sqlite-in-memory":
        async with saver.lock:
            rows = [*await saver.conn.execute_fetchall("SELECT * FROM checkpoints")]
            rows += await saver.conn.execute_fetchall("SELECT * FROM writes")
        return repr(rows).encode()
    return saver_bytes(None, path)


async def restore_a_row(saver: Any, kind: str) -> None:
    """The forgotten text written back into the saver (a thread restored from a backup)."""
    text = f"my cat is called {MARKER}".encode()
    if kind.startswith("postgres"):
        async with saver.lock, pg_connection(saver) as db:
            await db.execute(
                "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, "
                "type, blob) VALUES ('restored', '', 'said', '1', 'msgpack', %s)",
                (text,),
            )
        return
    async with saver.lock:
        await saver.conn.execute(
            "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, "
            "channel, type, value) VALUES ('restored', '', '1', 't', 0, 'said', 'msgpack', ?)",
            (text,),
        )
        await saver.conn.commit()


@pytest.mark.parametrize("kind", ["sqlite", "sqlite-in-memory", "postgres", "postgres-pool"])
def test_an_async_saver_is_cleaned_and_checked_by_aforget(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """``aforget`` over ``AsyncSqliteSaver``/``AsyncPostgresSaver`` deletes the thread, then
    vacuums and checks the saver's storage through the saver's event loop (no longer named
    ``unchecked``); a synchronous ``forget`` on that loop is refused before anything is
    erased, and ``averify_receipt`` finds a row written back."""
    path = tmp_path / "checkpoints.db"

    async def scenario() -> None:
        async with async_saver(kind, path, request) as plain:
            memory, checkpointer, graph = forgetting(plain)
            thread, other = new_thread(), new_thread()
            await graph.ainvoke({"said": "tea"}, other)
            for turn in range(3):
                await graph.ainvoke({"said": f"my cat is called {MARKER} ({turn})"}, thread)
            if kind.startswith("postgres"):  # the planner's samples hold the text too
                async with plain.lock, pg_connection(plain) as db:
                    await db.execute("ANALYZE checkpoints, checkpoint_blobs, checkpoint_writes")
                    stats = await (
                        await db.execute(
                            "SELECT most_common_vals::text, histogram_bounds::text "
                            "FROM pg_stats WHERE tablename LIKE 'checkpoint%'"
                        )
                    ).fetchall()
                assert MARKER in repr(stats)
            assert MARKER.encode() in await async_saver_bytes(plain, kind, path)
            thread_id = thread["configurable"]["thread_id"]
            conversation = thread_event_id(thread_id)
            with pytest.raises(asyncio.InvalidStateError, match="aforget"):
                checkpointer.forget("conversation", conversation)
            assert memory.visible(memory.heads()[conversation])  # nothing was erased
            receipt = await checkpointer.aforget("conversation", conversation)
            (section,) = receipt.stores
            assert section.erased == {"threads": (thread_id,)}
            assert section.check.locations and not section.check.unchecked, section.check
            assert await plain.aget_tuple(thread) is None
            assert await plain.aget_tuple(other) is not None
            assert MARKER.encode() not in await async_saver_bytes(plain, kind, path)
            last = await checkpointer.aforget(
                "conversation", thread_event_id(other["configurable"]["thread_id"])
            )
            assert last.stores[0].check.clean, last.stores[0].check
            with pytest.raises(asyncio.InvalidStateError, match="averify_receipt"):
                checkpointer.verify_receipt(receipt)
            verified = await checkpointer.averify_receipt(receipt)
            assert verified.wrapped is not None and verified.wrapped.clean
            await restore_a_row(plain, kind)
            again = await checkpointer.averify_receipt(receipt)
            assert again.wrapped is not None and not again.wrapped.clean and not again.ok

    asyncio.run(scenario())


def test_a_forget_over_an_async_saver_whose_loop_has_ended_is_refused_first(
    tmp_path: Path,
) -> None:
    """An async saver's statements run on its event loop: once that loop has ended, a
    ``forget`` is refused before the Memory erases anything (not left half done)."""
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    memory = Memory()

    async def run_a_thread() -> tuple[BranchCheckpointer, str]:
        async with aiosqlite.connect(str(tmp_path / "checkpoints.db")) as connection:
            saver = AsyncSqliteSaver(connection)
            checkpointer = BranchCheckpointer(saver, memory)
            graph = build_graph(BranchStore(memory), checkpointer)
            thread = new_thread()
            await graph.ainvoke({"said": f"my cat is called {MARKER}"}, thread)
            return checkpointer, thread["configurable"]["thread_id"]

    checkpointer, thread_id = asyncio.run(run_a_thread())
    conversation = thread_event_id(thread_id)
    with pytest.raises(asyncio.InvalidStateError, match="not running"):
        checkpointer.forget("conversation", conversation)
    with pytest.raises(asyncio.InvalidStateError, match="not running"):
        asyncio.run(checkpointer.aforget("conversation", conversation))
    assert memory.visible(memory.heads()[conversation])  # nothing was erased
