"""Every statement the PostgreSQL store sends is routed by namespace (issue 26, item 5).

A sharded PostgreSQL (Citus) distributed on the ``namespace`` column answers a statement on
one shard when every table it reads or writes is pinned to one namespace: a ``SELECT``,
``UPDATE`` or ``DELETE`` whose every table reference is constrained by ``namespace = <value>``
(directly, or by a join's ``x.namespace = y.namespace`` to a reference that is), an
``INSERT``/``COPY`` that names the ``namespace`` column (Citus routes each row by it). The
whole backend conformance suite on PostgreSQL (``TestPostgres`` in test_backend_postgres.py)
runs with every statement the driver sends captured (a wrapper around psycopg's
``Cursor.execute``/``executemany``/``copy``, installed by the test, so nothing in the store can
bypass it) and ``assert_routed`` below fails a test that sent a statement that is neither routed
nor on the explicit list of exemptions; this file holds the capture, the tests of the checker
itself, and what the conformance suite does not reach. The checker, the reader of our own SQL
with its exemptions, is namespace_routing.py; the first tests pin it on statements known
either way.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from branchmem import Memory
from namespace_routing import UNDISTRIBUTED, Verdict, array_values, verdict

pytest_plugins = ["pg"]  # the pg_dsn fixture (a no-op when conftest.py already loads it)


# -- the checker on statements known either way --------------------------------------------
ROUTED = [
    "SELECT * FROM events WHERE namespace = ? AND id = ?",
    "SELECT e.id FROM events e JOIN heads h ON h.namespace = e.namespace AND h.event_id = e.id "
    "WHERE e.namespace = ?",
    "DELETE FROM frontiers WHERE namespace = ? AND event_id = ANY(?)",
    "UPDATE revisions SET content = '' WHERE namespace = %s AND record_id = %s",
    "INSERT INTO events (namespace, id) VALUES (?, ?) ON CONFLICT (namespace, id) DO NOTHING",
    "INSERT INTO heads (namespace, tree, event_id) SELECT * FROM unnest(%s::text[], %s::text[], "
    "%s::text[]) ON CONFLICT (namespace, tree) DO UPDATE SET event_id = excluded.event_id",
    "COPY events (namespace, id, parent) FROM STDIN",
    "SELECT asked.key, page.* FROM unnest(?::text[]) WITH ORDINALITY AS asked(key, n) "
    "CROSS JOIN LATERAL (SELECT r.id, k.depth FROM key_frontiers k JOIN revisions r "
    "ON r.namespace = k.namespace AND r.record_id = k.record_id WHERE k.namespace = ? "
    "AND k.key_name = asked.key ORDER BY k.depth DESC LIMIT ?) page ORDER BY asked.n",
    "WITH RECURSIVE up(n, parent, i1) AS (SELECT 0, parent, id FROM events WHERE namespace = ? "
    "AND id = ? UNION ALL SELECT up.n + 1, e1.parent, e1.id FROM up JOIN events e1 "
    "ON e1.namespace = ? AND e1.id = up.parent WHERE up.parent IS NOT NULL) SELECT i1 FROM up",
    "SELECT id FROM revisions r WHERE r.namespace = ? AND EXISTS (SELECT 1 FROM citing c "
    "WHERE c.namespace = r.namespace AND c.target = r.record_id)",
    "SELECT version FROM branchmem_schema ORDER BY version",
    "SELECT key_id FROM api_keys WHERE key_id = ?",
    "SELECT namespace FROM namespaces WHERE seq > 0 ORDER BY namespace",
    "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass(%s)",
    "SELECT pg_advisory_xact_lock_shared(?), pg_advisory_xact_lock(?)",
    "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    "VACUUM (ANALYZE) events, revisions",
    "CREATE INDEX x ON events (namespace, seq)",
]
NOT_ROUTED = [
    "SELECT namespace, seq FROM audit ORDER BY seq LIMIT 1",
    "SELECT * FROM events WHERE id = ?",
    "SELECT * FROM events WHERE namespace = ? OR id = ?",
    "SELECT * FROM events WHERE namespace = ANY(?)",
    "SELECT e.id FROM events e JOIN heads h ON h.event_id = e.id WHERE e.namespace = ?",
    "SELECT e.id FROM events e, heads h WHERE e.namespace = ? AND h.event_id = e.id",
    "SELECT e.id FROM events e JOIN heads h ON h.event_id = e.id WHERE namespace = ?",
    "DELETE FROM frontiers WHERE event_id = ?",
    "UPDATE revisions SET content = '' WHERE record_id = ?",
    "INSERT INTO events (id, parent) VALUES (?, ?)",
    "COPY events (id, parent) FROM STDIN",
    "INSERT INTO tree_keys (namespace, tree) SELECT k.namespace, k.tree FROM key_frontiers k",
    "SELECT id FROM revisions r WHERE r.namespace = ? AND EXISTS (SELECT 1 FROM citing c "
    "WHERE c.target = r.record_id)",
    "SELECT namespace FROM namespaces WHERE seq > 0",
    "SELECT 1 FROM events WHERE namespace = ? UNION ALL SELECT 1 FROM heads",
    "SELECT k.id FROM api_keys k JOIN events e ON e.id = k.key_id",
    "TRUNCATE events",
]


@pytest.mark.parametrize("text", ROUTED)
def test_the_checker_passes_a_routed_or_exempt_statement(text: str) -> None:
    assert verdict(text).problem is None


@pytest.mark.parametrize("text", NOT_ROUTED)
def test_the_checker_refuses_a_statement_not_pinned_to_one_namespace(text: str) -> None:
    assert verdict(text).problem is not None


def test_the_checker_finds_where_each_statement_names_its_namespace() -> None:
    assert verdict("SELECT * FROM events e JOIN heads h ON h.namespace = ? AND h.tree = ? "
                   "WHERE e.namespace = ? AND e.id = ?").params == (0, 2)  # fmt: skip
    assert verdict("INSERT INTO heads (tree, namespace) VALUES (?, ?), (?, ?)").params == (1, 3)
    assert verdict("INSERT INTO heads (tree, namespace) SELECT * FROM unnest(?::text[], "
                   "?::text[])").arrays == (1,)  # fmt: skip
    assert verdict("COPY heads (tree, namespace, event_id) FROM STDIN").copy_column == 1
    assert array_values('{"a","b\\\\c","d\\"e",NULL}') == ["a", "b\\c", 'd"e', None]


def test_one_execution_naming_two_namespaces_is_refused() -> None:
    captured = Captured()
    captured.add("SELECT * FROM events e JOIN heads h ON h.namespace = ? "
                 "WHERE e.namespace = ?", [("alice", "bob")])  # fmt: skip
    captured.add("INSERT INTO heads (namespace, tree) SELECT * FROM unnest(?::text[], "
                 "?::text[])", [('{"alice","alice"}', '{"x","y"}')])  # fmt: skip
    captured.add(
        "INSERT INTO heads (namespace, tree) VALUES (?, ?)", [("alice", "x"), ("bob", "y")]
    )
    assert [why.split(":")[0] for why in captured.mixed] == [
        "one execution names namespaces ['alice', 'bob']"
    ] * 2


def test_unreadable_text_fails_loudly() -> None:
    with pytest.raises(ValueError, match="cannot read"):
        verdict("SELECT * FROM events WHERE namespace = ? AND id = `x`")


# -- capture -------------------------------------------------------------------------------
class Captured:
    """Every statement text psycopg was asked to send (from any thread), and the executions
    whose parameters named more than one namespace."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.texts: list[str] = []
        self.mixed: list[str] = []
        self.migrating = threading.local()  # statements of a migration are exempt

    def add(self, query: Any, rows: list[Any] | None) -> list[Any] | None:
        """Record one execution (``rows``: its parameter rows; None for a COPY, whose rows
        are added to the returned list as they are written)."""
        if getattr(self.migrating, "depth", 0):
            return None
        text = query if isinstance(query, str) else query.as_string(None)
        copied: list[Any] = []
        with self.lock:
            self.texts.append(text)
        reading = verdict(text)
        if reading.problem is None and reading.exempt is None:
            if rows is None:
                copied = []
                return copied
            self.check(text, reading, rows)
        return None

    def check(self, text: str, reading: Verdict, rows: list[Any]) -> None:
        names: set[Any] = set()
        for row in rows:
            if reading.copy_column is not None:
                names.add(row[reading.copy_column])
                continue
            names.update(row[index] for index in reading.params)
            for index in reading.arrays:
                names.update(array_values(row[index]))
        if len(names) > 1:
            with self.lock:
                self.mixed.append(f"one execution names namespaces {sorted(names)}: {text}")

    def take(self) -> tuple[list[str], list[str]]:
        with self.lock:
            taken, self.texts = self.texts, []
            mixed, self.mixed = self.mixed, []
        return taken, mixed


@contextmanager
def capturing() -> Iterator[Captured]:
    """Wrap the three doors a psycopg cursor sends SQL by (``Connection.execute`` and the
    pipelines go through ``Cursor.execute``), and the store's migration, whose statements
    (DDL, backfills of new tables from old ones) run once, on the coordinator."""
    import psycopg

    from branchmem.store.postgres import PostgresStore

    captured = Captured()
    cursor = psycopg.Cursor
    execute, executemany, copy = cursor.execute, cursor.executemany, cursor.copy
    migrate = PostgresStore.migrate

    def recorded_execute(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        captured.add(query, [tuple(params or ())])
        return execute(self, query, params, **kwargs)

    def recorded_executemany(self: Any, query: Any, params_seq: Any, **kwargs: Any) -> Any:
        rows = [tuple(row) for row in params_seq]
        captured.add(query, rows)
        return executemany(self, query, rows, **kwargs)

    @contextmanager
    def recorded_copy(self: Any, statement: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        copied = captured.add(statement, None)
        with copy(self, statement, *args, **kwargs) as copying:
            if copied is not None:
                write_row = copying.write_row

                def recorded_row(row: Any) -> None:
                    copied.append(tuple(row))
                    write_row(row)

                copying.write_row = recorded_row
            yield copying
        if copied:
            text = statement if isinstance(statement, str) else statement.as_string(None)
            captured.check(text, verdict(text), copied)

    def migrating(self: Any, *args: Any, **kwargs: Any) -> Any:
        local = captured.migrating
        local.depth = getattr(local, "depth", 0) + 1
        try:
            return migrate(self, *args, **kwargs)
        finally:
            local.depth -= 1

    cursor.execute = recorded_execute  # type: ignore[method-assign,assignment]
    cursor.executemany = recorded_executemany  # type: ignore[method-assign]
    cursor.copy = recorded_copy  # type: ignore[method-assign,assignment]
    PostgresStore.migrate = migrating  # type: ignore[method-assign]
    try:
        yield captured
    finally:
        cursor.execute, cursor.executemany, cursor.copy = (  # type: ignore[method-assign]
            execute, executemany, copy,
        )  # fmt: skip
        PostgresStore.migrate = migrate  # type: ignore[method-assign]


def failures(captured: Captured) -> str:
    """The statements not routed and the executions naming two namespaces, one a line."""
    texts, mixed = captured.take()
    assert texts, "nothing was captured: the wrapper missed the driver"
    problems = {text: why for text in dict.fromkeys(texts) if (why := verdict(text).problem)}
    return "\n".join([f"- {why}: {text}" for text, why in problems.items()] + mixed)


def assert_routed(captured: Captured) -> None:
    """Fail naming every statement not routed and every execution naming two namespaces
    (what test_backend_postgres.py's TestPostgres calls after each conformance test)."""
    found = failures(captured)
    if found:
        pytest.fail("statements not routed by namespace:\n" + found, pytrace=False)


@pytest.fixture(scope="module")
def template(pg_dsn: str) -> Iterator[tuple[Any, str]]:
    """A migrated template database (migrated before any capture: DDL is exempt anyway)."""
    import uuid

    import psycopg

    from branchmem.store.postgres import PostgresStore
    from pg import with_database

    admin = psycopg.connect(pg_dsn, autocommit=True)
    name = f"bm_route_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    PostgresStore(with_database(pg_dsn, name), migrate=True).close()
    yield admin, name
    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.close()


def test_every_public_method_the_key_store_and_vectors_are_routed(
    template: tuple[Any, str], pg_dsn: str
) -> None:
    """What the conformance suite does not reach: vectors (an embedder), deliveries,
    counters of the repair queue, the service's API keys, the erase's cleanup."""
    from branchmem.search.embedding import HashingEmbedder
    from branchmem.store.keys import ApiKeyRow
    from branchmem.store.postgres import PostgresStore
    from pg import with_database
    from test_backend_postgres import _exercise_every_public_method

    admin, name = template
    database = f"{name}_public"
    admin.execute(f'CREATE DATABASE "{database}" TEMPLATE "{name}"')
    try:
        with capturing() as captured:
            store = PostgresStore(with_database(pg_dsn, database))
            with Memory(store=store, embedder=HashingEmbedder(32)) as memory:
                _exercise_every_public_method(memory, "alice")
                memory.search("budget", "a2b", namespace="alice")
                memory.finish_cleanup()
                assert memory.namespaces() == ["alice"]
                row = ApiKeyRow("k1", "hash", "acme", ("alice",), 1.0)
                store.add_api_key(row, lambda rows: None)
                assert store.get_api_key("k1") == row
                assert store.list_api_keys() == [row]
                assert store.delete_api_key("k1")
            found = failures(captured)
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    assert not found, "statements not routed by namespace:\n" + found


def test_the_tables_are_the_ones_the_docs_distribute(
    template: tuple[Any, str], pg_dsn: str
) -> None:
    """docs/scaling.md's distribution statements name every table of the schema once: the
    reference tables are exactly those this test lets go unrouted, the rest distributed."""
    from pathlib import Path

    import psycopg

    from branchmem.store.schema import REFERENCE_TABLES
    from pg import with_database

    with psycopg.connect(with_database(pg_dsn, template[1])) as db:
        tables = {
            str(row[0])
            for row in db.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        }
    docs = (Path(__file__).parents[1] / "docs" / "scaling.md").read_text()
    block = docs.split("SELECT create_distributed_table('namespaces'", 1)[1].split("```")[0]
    distributed, reference = (re.findall(r"'(\w+)'", names) for names in
                              re.findall(r"ARRAY\[([^\]]*)\]", block))  # fmt: skip
    assert sorted(["namespaces", *distributed]) == sorted(tables - set(REFERENCE_TABLES))
    assert sorted(reference) == sorted(REFERENCE_TABLES)
    assert set(UNDISTRIBUTED) == set(REFERENCE_TABLES)


def test_the_wrapper_sees_every_door_the_driver_has(template: tuple[Any, str], pg_dsn: str) -> None:
    """execute, a pipeline, executemany and COPY on a real connection are all captured, and
    each execution's namespaces are read from its parameters or its COPY rows."""
    import psycopg

    from pg import with_database

    admin, name = template
    database = f"{name}_doors"
    admin.execute(f'CREATE DATABASE "{database}" TEMPLATE "{name}"')
    try:
        with capturing() as captured, psycopg.connect(with_database(pg_dsn, database)) as db:
            db.execute("SELECT tree FROM heads WHERE namespace = %s", ("alice",))
            with db.pipeline():
                db.execute("SELECT tree FROM heads WHERE namespace = %s", ("bob",))
            with db.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO heads (namespace, tree, event_id) VALUES (%s, %s, %s)",
                    [("alice", "t1", "e1"), ("bob", "t1", "e1")],
                )
                with cursor.copy("COPY heads (namespace, tree, event_id) FROM STDIN") as copy:
                    copy.write_row(("alice", "t2", "e2"))
                    copy.write_row(("carol", "t2", "e2"))
            texts, mixed = captured.take()
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    assert [text.split()[0] for text in texts] == ["SELECT", "SELECT", "INSERT", "COPY"]
    assert [why.split(":")[0] for why in mixed] == [
        "one execution names namespaces ['alice', 'bob']",
        "one execution names namespaces ['alice', 'carol']",
    ]


def test_every_index_of_a_distributed_table_leads_with_namespace(
    template: tuple[Any, str], pg_dsn: str
) -> None:
    """Citus requires every unique index of a distributed table to hold the distribution
    column; leading with it keeps every lookup within one namespace's range."""
    import psycopg

    from branchmem.store.schema import REFERENCE_TABLES
    from pg import with_database

    with psycopg.connect(with_database(pg_dsn, template[1])) as db:
        indexes = db.execute(
            "SELECT c.relname, i.relname, a.attname FROM pg_index x "
            "JOIN pg_class c ON c.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = x.indkey[0] "
            "WHERE c.relnamespace = current_schema()::regnamespace"
        ).fetchall()
    leading = {str(index): str(column) for table, index, column in indexes
               if table not in REFERENCE_TABLES}  # fmt: skip
    assert len(leading) >= 20
    assert leading == dict.fromkeys(leading, "namespace")


def test_the_check_after_each_conformance_test_fails_on_one_unrouted_statement() -> None:
    """What TestPostgres runs after each test refuses a capture holding one statement that
    is not routed among routed ones, naming that statement and only it."""
    captured = Captured()
    captured.add("BEGIN", [()])
    captured.add("SELECT tree FROM heads WHERE namespace = %s", [("alice",)])
    captured.add("SELECT tree FROM heads WHERE tree = %s", [("t1",)])
    with pytest.raises(pytest.fail.Exception, match="not routed by namespace") as raised:
        assert_routed(captured)
    lines = str(raised.value).splitlines()[1:]
    assert lines == ["- not pinned to one namespace: heads: SELECT tree FROM heads WHERE tree = %s"]
    captured.add("SELECT tree FROM heads WHERE namespace = %s", [("alice",)])
    assert_routed(captured)  # the capture is taken: the next test starts clean
