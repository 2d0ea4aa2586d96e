"""PostgreSQL at first contact: a failed connection says why in one line and a few seconds,
the base install names the extra, and a writer of one call per turn keeps statistics fresh.

Run against a real server (the ``pg_dsn`` fixture of tests/pg.py). The wrong-password case
adds one ``pg_hba.conf`` line for a role of its own (password auth for that role only) and
takes it out again, so it needs a superuser; the throwaway server's ``postgres`` is one.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.errors import MissingExtra, StorageError
from timing import bound, deadline, scaled

pytest_plugins = ["pg"]  # the pg_dsn fixture (a no-op when conftest.py already loads it)

# generous for a shared CI machine (docs/scaling.md gives the measured figure), more on a loaded
# one, and under the 30 s a pool waits for a connection, which the tests tell apart
BOUND_S = 10.0
SRC = Path(__file__).resolve().parent.parent / "src"


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def password_role(pg_dsn: str) -> Iterator[str]:
    """A role that must give its password (``right``): the URL of the server as that role."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    from pg import with_database

    role = f"bm_pw_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        row = admin.execute(
            "SELECT rolsuper, current_setting('hba_file') FROM pg_roles "
            "WHERE rolname = current_user"
        ).fetchone()
        if row is None or not row[0]:
            pytest.skip("the wrong-password test edits pg_hba.conf: it needs a superuser")
        hba = str(row[1])
        read = admin.execute("SELECT pg_read_binary_file(%s)", (hba,)).fetchone()
        assert read is not None
        before = bytes(read[0])
        admin.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD 'right'")

        def write(body: bytes) -> None:  # as the server's account, which owns the file
            row = admin.execute("SELECT lo_from_bytea(0, %s)", (body,)).fetchone()
            assert row is not None
            admin.execute("SELECT lo_export(%s, %s)", (row[0], hba))
            admin.execute("SELECT lo_unlink(%s)", (row[0],))
            admin.execute("SELECT pg_reload_conf()")

        write(f"host all {role} all scram-sha-256\n".encode() + before)
        params = conninfo_to_dict(pg_dsn)
        url = with_database(
            f"host={params.get('host') or 'localhost'} port={params.get('port') or 5432} "
            f"user={role} password=wrong",
            str(params.get("dbname") or "postgres"),
        )
        try:
            until = deadline(10)
            while time.monotonic() < until:  # the postmaster reloads the file on a signal
                try:
                    psycopg.connect(url).close()
                except psycopg.OperationalError as error:
                    if "password" in str(error):
                        break
                time.sleep(0.05)
            yield url
        finally:
            write(before)
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')


def _failing_url(case: str, pg_dsn: str, request: pytest.FixtureRequest) -> tuple[str, str]:
    """The URL of one failure and the cause its message must name."""
    from pg import with_database

    if case == "wrong password":
        url = request.getfixturevalue("password_role")
        return url, "password authentication failed for user"
    if case == "missing database":
        name = f"bm_absent_{uuid.uuid4().hex[:8]}"
        return with_database(pg_dsn, name), f'database "{name}" does not exist'
    return f"postgresql://postgres@127.0.0.1:{_closed_port()}/postgres", "Connection refused"


CASES = ["wrong password", "missing database", "refused port"]


@pytest.mark.parametrize("case", CASES)
def test_a_failed_connection_raises_its_cause_at_once(
    case: str, pg_dsn: str, request: pytest.FixtureRequest
) -> None:
    url, cause = _failing_url(case, pg_dsn, request)
    started = time.monotonic()
    with pytest.raises(StorageError) as raised:
        Memory.open(url)
    elapsed = time.monotonic() - started
    message = str(raised.value)
    assert cause in message
    assert message.startswith("cannot connect to postgresql://")
    assert "\n" not in message and "wrong" not in message  # one line, no password
    assert elapsed < bound(BOUND_S, 25), f"{case}: {elapsed:.1f} s"


@pytest.mark.parametrize("case", CASES)
def test_the_cli_prints_one_line_naming_the_cause(
    case: str, pg_dsn: str, request: pytest.FixtureRequest, capfd: pytest.CaptureFixture[str]
) -> None:
    from branchmem.cli.main import main

    url, cause = _failing_url(case, pg_dsn, request)
    started = time.monotonic()
    status = main(["heads", "--db", url])
    elapsed = time.monotonic() - started
    captured = capfd.readouterr()
    lines = captured.err.splitlines()
    assert status == 1
    assert len(lines) == 1, captured.err  # no pool warnings, no traceback
    assert lines[0].startswith("branchmem: cannot connect to postgresql://")
    assert cause in lines[0]
    assert elapsed < bound(BOUND_S, 25), f"{case}: {elapsed:.1f} s"


def test_a_server_that_never_answers_is_given_up_after_the_connect_timeout() -> None:
    pytest.importorskip("psycopg")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshake; nobody ever replies
        port = int(silent.getsockname()[1])
        started = time.monotonic()
        with pytest.raises(StorageError, match="connection timeout expired"):
            Memory.open(f"postgresql://postgres@127.0.0.1:{port}/postgres")
        elapsed = time.monotonic() - started
    assert elapsed < bound(BOUND_S, 25), f"{elapsed:.1f} s"  # the default connect_timeout: 5 s


BASE_INSTALL = """
import sys
sys.modules["psycopg"] = None  # as on an install without branchmem[postgres]
from branchmem import Memory
from branchmem.errors import MissingExtra
try:
    Memory.open("postgresql://u@127.0.0.1:1/x")
except MissingExtra as error:
    print(type(error).__name__, error.extra, isinstance(error, ImportError))
from branchmem.cli.main import main
raise SystemExit(main(["heads", "--db", "postgresql://u@127.0.0.1:1/x"]))
"""


def test_the_base_install_names_the_postgres_extra() -> None:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", BASE_INSTALL],
        capture_output=True,
        text=True,
        env=environment,
        timeout=scaled(120),
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.split() == ["MissingExtra", "postgres", "True"]
    assert done.stderr.splitlines() == [
        "branchmem: PostgreSQL support needs 'psycopg', which is not installed: "
        'pip install "branchmem[postgres]"'
    ]
    assert issubclass(MissingExtra, ImportError)  # callers catching ImportError still do


def _analyze_counts(url: str, tables: tuple[str, ...]) -> dict[str, int]:
    """Manual ANALYZEs per table (autovacuum's are counted apart, in autoanalyze_count)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT relname, analyze_count FROM pg_stat_user_tables WHERE relname = ANY(%s)",
            (list(tables),),
        ).fetchall()
    return {str(name): int(count) for name, count in rows}


def test_a_writer_of_one_call_per_turn_triggers_analyze(pg_dsn: str) -> None:
    from branchmem.store.postgres import PostgresStore
    from pg import fresh_database

    tables = ("events", "revisions")
    with fresh_database(pg_dsn, "bm_turns") as url:
        memory = Memory("strict", store=PostgresStore(url, analyze_after=40))
        try:
            for turn in range(60):
                if turn == 30:  # below the threshold: nothing analyzed yet
                    assert _analyze_counts(url, tables) == dict.fromkeys(tables, 0)
                memory.add_event(f"e{turn}", f"e{turn - 1}" if turn else None, content=f"t{turn}")
                memory.add_record(
                    f"w{turn}", sources=[f"e{turn}"], content=f"v{turn}", key=f"k{turn % 10}"
                )
        finally:
            memory.close()
        counts = _analyze_counts(url, tables)
    assert all(counts[table] >= 1 for table in tables), counts
