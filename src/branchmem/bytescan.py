"""The byte scans of a receipt's fingerprints that branchmem's store and the integrations
share: files read by a child process, and the rows of a SQLite or PostgreSQL database
through a connection the caller opened (its driver imported only where it is used).

Files are read by a child process, never by this one.

Closing any descriptor of a file drops every POSIX lock the process holds on that file,
SQLite's own included (sqlite.org/howtocorrupt.html, 2.2): a process that read its live
database, ``-wal`` or ``-shm`` with ordinary file I/O and closed it let the next process to
open the database delete the write-ahead log under it, and acknowledged writes were lost.
So no process that may hold a database open reads its files: a child that holds no lock
does, in chunks (memory bounded by the chunk, whatever the file's size), and answers counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from .errors import StorageError
from .receipt import HitCounter, value_hits

CHUNK: Final = 1 << 20
# a safety net only: the child reads ~5 MB a second, so a file under a few GB is done first
TIMEOUT_S: Final = 3600.0
SQLITE_HEADER: Final = b"SQLite format 3\x00"


class FileScan:
    """What the child read: hits per file (None: not there), the SQLite databases among
    the files found under the roots, and what it could not read (file: why)."""

    def __init__(self, hits: dict[str, int | None], sqlite: list[str], errors: dict[str, str]):
        self.hits, self.sqlite, self.errors = hits, sqlite, errors


def scan_files(
    key: str, fingerprints: Iterable[str], paths: Iterable[str] = (), roots: Iterable[str] = ()
) -> FileScan:
    """Count the fingerprints in ``paths`` and in every file under ``roots``, in a child
    process; a child that fails, or runs past ``TIMEOUT_S``, is a ``StorageError`` naming
    what it said."""
    request = {
        "key": key,
        "fingerprints": sorted(fingerprints),
        "paths": [str(path) for path in paths],
        "roots": [str(root) for root in roots],
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", "from branchmem.bytescan import main; main()"],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise StorageError(f"the file scan ran past {TIMEOUT_S:.0f} s and was stopped") from None
    if done.returncode != 0:
        raise StorageError(f"the file scan failed ({done.returncode}): {done.stderr.strip()}")
    answer = json.loads(done.stdout)
    return FileScan(answer["hits"], answer["sqlite"], answer["errors"])


def _scan(request: dict[str, object]) -> dict[str, object]:
    key = str(request["key"])
    fingerprints = frozenset(map(str, request["fingerprints"]))  # type: ignore[call-overload]
    hits: dict[str, int | None] = {}
    sqlite: list[str] = []
    errors: dict[str, str] = {}
    files = [Path(str(path)) for path in request["paths"]]  # type: ignore[attr-defined]
    for root in request["roots"]:  # type: ignore[attr-defined]
        files.extend(sorted(path for path in Path(str(root)).rglob("*") if path.is_file()))
    for file in files:
        counter = HitCounter(key, fingerprints)
        try:
            with file.open("rb") as stream:
                first = stream.read(CHUNK)
                if first.startswith(SQLITE_HEADER):
                    sqlite.append(str(file))
                while first:
                    counter.feed(first)
                    first = stream.read(CHUNK)
        except FileNotFoundError:
            hits[str(file)] = None
            continue
        except OSError as error:
            errors[str(file)] = error.strerror or str(error)
            continue
        hits[str(file)] = counter.hits
    return {"hits": hits, "sqlite": sqlite, "errors": errors}


def main() -> None:
    """The child: a request on standard input, the counts on standard output."""
    json.dump(_scan(json.load(sys.stdin)), sys.stdout)


def sqlite_file_hits(
    path: str, key: str, fingerprints: frozenset[str], unchecked: list[str], label: str = ""
) -> dict[str, int]:
    """Hits per file of a SQLite database and its journal, write-ahead log and shared
    memory, read by a child process; a file not there holds nothing."""
    names = [f"{path}{suffix}" for suffix in ("", "-journal", "-wal", "-shm")]
    scanned = scan_files(key, fingerprints, names)
    found: dict[str, int] = {}
    for name in names:
        shown = f"{label}{name.rsplit('/', 1)[-1]}"
        if name in scanned.errors:
            unchecked.append(f"{shown}: {scanned.errors[name]}")
        elif scanned.hits.get(name) is not None or not name.endswith("-journal"):
            found[shown] = scanned.hits.get(name) or 0
    return found


def sqlite_row_hits(
    connection: Any,
    key: str,
    fingerprints: frozenset[str],
    tables: Iterable[str] | None = None,
) -> int:
    """Hits in every value of ``tables`` (default: every table) of an open SQLite
    database, through its own connection (an in-memory one has no file to read); a table
    that is not there is the driver's error."""
    if tables is None:
        query = "SELECT name FROM sqlite_master WHERE type='table'"
        tables = [row[0] for row in connection.execute(query)]
    hits = 0
    for table in tables:
        for row in connection.execute(f'SELECT * FROM "{table}"'):
            hits += sum(value_hits(key, fingerprints, value) for value in row)
    return hits


def postgres_row_hits(
    db: Any,
    key: str,
    fingerprints: frozenset[str],
    tables: Iterable[str] | None = None,
    label: str = "",
) -> tuple[dict[str, int], list[str]]:
    """Hits per table of a PostgreSQL database as SQL reads it: the rows of ``tables``
    (default: every table of the current schema), their TOAST chunks and the planner's
    statistics of them (samples of the rows at the last ANALYZE); and what this role may
    not read. ``db``: a psycopg connection in autocommit. Pages are not read: free space a
    VACUUM left is the server's (a receipt's ``cannot_clean`` says so)."""
    import psycopg
    from psycopg.rows import tuple_row

    with db.cursor(row_factory=tuple_row) as cursor:  # whatever rows the connection makes
        wanted = None if tables is None else sorted(tables)
        found: dict[str, int] = {}
        unchecked: list[str] = []
        listed = cursor.execute(
            "SELECT c.relname, t.relname FROM pg_catalog.pg_class c "
            "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
            "LEFT JOIN pg_catalog.pg_class t ON t.oid = c.reltoastrelid "
            "WHERE n.nspname = current_schema() AND c.relkind = 'r' "
            "AND (%s::text[] IS NULL OR c.relname = ANY(%s::text[])) ORDER BY c.relname",
            (wanted, wanted),
        ).fetchall()
        for table, toast in listed:
            rows = cursor.stream(f'SELECT * FROM "{table}"')  # a row at a time
            found[f"{label}{table}"] = sum(
                value_hits(key, fingerprints, value) for row in rows for value in row
            )
            if toast is None:
                continue
            try:
                toasted = sum(
                    value_hits(key, fingerprints, chunk)
                    for (chunk,) in cursor.stream(f'SELECT chunk_data FROM pg_toast."{toast}"')
                )
            except psycopg.Error:
                unchecked.append(
                    f"TOAST of {table}: this role may not read pg_toast.{toast} (its values "
                    "were read de-toasted with the rows)"
                )
                continue
            found[f"{label}toast {table}"] = toasted
        stats = cursor.execute(
            "SELECT tablename, attname, most_common_vals::text, histogram_bounds::text "
            "FROM pg_catalog.pg_stats WHERE schemaname = current_schema() "
            "AND (%s::text[] IS NULL OR tablename = ANY(%s::text[])) ORDER BY tablename, attname",
            (wanted, wanted),
        ).fetchall()
        found[f"{label}pg_stats"] = sum(
            value_hits(key, fingerprints, common or "")
            + value_hits(key, fingerprints, bounds or "")
            for _table, _column, common, bounds in stats
        )
        return found, unchecked


def clear_postgres_stats_of_empty(db: Any, tables: Iterable[str]) -> None:
    """Clear the planner's statistics of those of ``tables`` that hold no row.

    ANALYZE of a table with no rows left keeps the statistics it had, so the sample values
    of rows an erase emptied the table of would stay: PostgreSQL 18's
    ``pg_clear_attribute_stats`` (which the table's owner may call) clears them; before 18
    only a superuser could, so they stay until the table has rows again and is analyzed.
    A refusal leaves them, and a receipt's check shows them."""
    import psycopg
    from psycopg.rows import tuple_row

    if db.info.server_version < 180000:  # known from the connection: no statement
        return
    with db.cursor(row_factory=tuple_row) as cursor:
        try:
            stats = cursor.execute(
                "SELECT DISTINCT tablename::text, attname::text FROM pg_catalog.pg_stats "
                "WHERE schemaname = current_schema() AND tablename = ANY(%s)",
                (list(tables),),
            ).fetchall()
            # is each table empty: once per table; the names are the caller's, as pg_stats
            # gave them back
            empty = {
                table
                for table in sorted({str(table) for table, _ in stats})
                if cursor.execute(f'SELECT NOT EXISTS (SELECT 1 FROM "{table}")').fetchone()[0]
            }
            for table, column in stats:
                if table in empty:
                    cursor.execute(
                        "SELECT pg_catalog.pg_clear_attribute_stats("
                        "current_schema(), %s, %s, false)",
                        (table, column),
                    )
        except psycopg.Error:
            return  # refused (not the owner): they stay, and a receipt's check shows them
