"""A forget receipt's byte check, held against an independent scan of the same storage.

The receipt looks for keyed fingerprints through ``branchmem.store.residue``; these tests
look for the plain marker with the scans of ``test_erasure_residue`` (file bytes, every row
of every table, ``pg_stats``), which share no code with it. Both must agree: clean when the
text is gone, not clean while a copy is left.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.cli import main
from branchmem.errors import InvalidInput
from branchmem.receipt import WINDOW, Receipt
from branchmem.store import CleanupPending
from branchmem.testing import chengdu
from test_erasure_residue import MARKER, file_hits, pg_hits


def write_marked(mem: Memory) -> None:
    """A branch below a2 whose messages and records carry MARKER in every caller field."""
    chengdu(mem)
    meta = {"note": f"meta {MARKER} and more words"}
    mem.add_event("s", "a2", role=f"role {MARKER}", content=f"I said {MARKER} here", meta=meta)
    mem.add_event("s2", "s", content=f"and below it {MARKER} again")
    mem.add_record(
        "f-s", sources=["s"], content=f"fact {MARKER} stated", kind=f"kind {MARKER}",
        key=f"key {MARKER} key", scope=f"scope {MARKER} scope", meta=meta,
    )  # fmt: skip
    mem.add_record("sum", sources=["f-s", "f-planning"], content=f"summary {MARKER} of it")


# -- SQLite ------------------------------------------------------------------------------
def test_sqlite_receipt_agrees_with_a_scan_of_the_files(tmp_path: Path) -> None:
    path = tmp_path / "forget.db"
    with Memory.open(path) as mem:
        write_marked(mem)
        dry = mem.forget("branch", "s", dry_run=True)
        assert sum(file_hits(path, MARKER).values()) > 0
        assert not dry.check.clean and sum(dry.check.locations.values()) > 0
        receipt = mem.forget("branch", "s")
        assert receipt.erased["events"] == ("s", "s2")
        assert receipt.erased["records"] == ("f-s", "sum")
        assert file_hits(path, MARKER) == {"forget.db": 0, "forget.db-wal": 0, "forget.db-shm": 0}
        assert receipt.check.clean, receipt.check
        assert set(receipt.check.locations) == {"forget.db", "forget.db-wal", "forget.db-shm"}
        assert mem.verify_receipt(receipt).ok
    with Memory.open(path) as mem:  # later, from the file alone
        assert mem.verify_receipt(Receipt.from_json(receipt.to_json())).ok


def test_a_receipt_says_so_while_a_reader_pins_the_erased_pages(tmp_path: Path) -> None:
    path = tmp_path / "pinned.db"
    with Memory.open(path) as mem:
        write_marked(mem)
        for i in range(20):  # copies of the marked pages in many WAL frames
            mem.add_record(f"other{i}", sources=["u2"], content=f"filler {i}")
        reader = sqlite3.connect(path, isolation_level=None)  # another process's reader
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM revisions").fetchone()
        with pytest.warns(CleanupPending):
            receipt = mem.forget("branch", "s")
        assert "read transaction" in (receipt.cleanup_pending or "")
        assert file_hits(path, MARKER)["pinned.db-wal"] > 0  # the scan sees the copy ...
        assert not receipt.check.clean  # ... and so does the receipt
        assert receipt.check.locations["pinned.db-wal"] > 0
        assert not mem.verify_receipt(receipt).ok
        reader.execute("COMMIT")
        reader.close()
        assert mem.finish_cleanup() is None
        assert sum(file_hits(path, MARKER).values()) == 0
        later = mem.verify_receipt(receipt)
        assert later.ok and later.check is not None and later.check.clean, later


# -- PostgreSQL --------------------------------------------------------------------------
@pytest.fixture
def pg_url(pg_dsn: str) -> Iterator[str]:
    from pg import fresh_database

    with fresh_database(pg_dsn, "bm_forget") as url:
        yield url


def test_postgres_receipt_agrees_with_a_scan_of_rows_and_statistics(pg_url: str) -> None:
    import psycopg

    with Memory.open(pg_url) as mem:
        write_marked(mem)
        for i in range(20):  # enough distinct text for a histogram
            mem.add_event(f"x{i}", "a2", content=f"another line {i}")
        with psycopg.connect(pg_url, autocommit=True) as db:
            db.execute("ANALYZE")  # what autovacuum does while the text is there
        assert "pg_stats events.content" in pg_hits(pg_url, MARKER)
        dry = mem.forget("conversation", "u1", dry_run=True)
        assert dry.check.locations["events"] > 0 and dry.check.locations["pg_stats"] > 0
        receipt = mem.forget("conversation", "u1")
        assert "x3" in receipt.erased["events"]
        assert pg_hits(pg_url, MARKER) == {}
        assert receipt.check.clean, receipt.check
        assert {"events", "revisions", "audit", "pg_stats"} <= set(receipt.check.locations)
        assert any("WAL" in line for line in receipt.cannot_clean)
        assert mem.verify_receipt(receipt).ok


# -- what a receipt keeps ----------------------------------------------------------------
def test_a_receipt_keeps_keyed_fingerprints_never_the_text() -> None:
    mem = Memory()
    write_marked(mem)
    first = mem.forget("branch", "s", dry_run=True)
    second = mem.forget("branch", "s", dry_run=True)
    for receipt in (first, second):
        assert MARKER not in json.dumps(receipt.to_json())
        assert receipt.fingerprints and receipt.key
    assert not set(first.fingerprints) & set(second.fingerprints)  # one key per receipt
    assert first.redacted().fingerprints == () and first.redacted().hash_matches


def test_the_store_keeps_the_receipts_hash_not_its_key_or_fingerprints(tmp_path: Path) -> None:
    path = tmp_path / "kept.db"
    with Memory.open(path) as mem:
        write_marked(mem)
        receipt = mem.forget("branch", "s")
    stored = b"".join(Path(f"{path}{suffix}").read_bytes() for suffix in ("", "-wal")
                      if Path(f"{path}{suffix}").exists())  # fmt: skip
    assert receipt.content_hash.encode() in stored  # the audit keeps the hash
    assert receipt.key.encode() not in stored
    assert not [fp for fp in receipt.fingerprints if fp.encode() in stored]


def test_text_shorter_than_a_window_gets_no_fingerprint() -> None:
    mem = Memory()
    mem.add_event("e", content="asthma")  # a fingerprint of it would be a dictionary lookup
    assert len(b"asthma") < WINDOW
    receipt = mem.forget("message", "e")
    assert receipt.fingerprints == ()
    assert receipt.short_fields == 2  # the content and the role
    assert receipt.check.clean and mem.verify_receipt(receipt).ok


def test_a_chinese_message_is_fingerprinted_and_found(tmp_path: Path) -> None:
    path = tmp_path / "zh.db"
    text = "我下个月要搬到成都去，想了解一下那边的租房情况"
    with Memory.open(path) as mem:
        mem.add_event("z", content=text)
        dry = mem.forget("message", "z", dry_run=True)
        assert dry.fingerprints and sum(dry.check.locations.values()) > 0
        assert mem.forget("message", "z").check.clean
        assert path.read_bytes().count(text[4:10].encode()) == 0


# -- the command line --------------------------------------------------------------------
def test_the_cli_writes_a_receipt_that_verify_receipt_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "cli.db")
    with Memory.open(db) as mem:
        write_marked(mem)
    assert main(["forget", "branch", "s", "--dry-run", "--db", db, "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["dry_run"] and dry["erased"]["events"] == ["s", "s2"]
    assert main(["forget", "branch", "s", "--db", db, "--json"]) == 0
    receipt = tmp_path / "receipt.json"
    receipt.write_text(capsys.readouterr().out, encoding="utf-8")
    assert main(["verify-receipt", str(receipt), "--db", db, "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["ok"] and checked["in_audit"], checked
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["verify-receipt", str(tmp_path / "none.json"), "--db", db]) != 0
    assert "none.json" in capsys.readouterr().err


# -- the service -------------------------------------------------------------------------
def test_the_service_finishes_a_forget_that_a_reader_held_up(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="the service needs the 'server' extra")
    from fastapi.testclient import TestClient

    from branchmem.server import create_app

    path = tmp_path / "served.db"
    mem = Memory.open(path)
    app = create_app(mem, auth=False)
    try:
        with TestClient(app) as http:
            write_marked(mem)
            for i in range(20):
                mem.add_record(f"other{i}", sources=["u2"], content=f"filler {i}")
            reader = sqlite3.connect(path, isolation_level=None)
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM revisions").fetchone()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CleanupPending)
                answer = http.post("/v1/ns/default/forget", json={"kind": "branch", "id": "s"})
            assert answer.status_code == 200, answer.text
            receipt = answer.json()
            assert receipt["cleanup_pending"] and not receipt["check"]["clean"]
            reader.execute("COMMIT")
            reader.close()
            deadline = time.monotonic() + 10
            while sum(file_hits(path, MARKER).values()) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert sum(file_hits(path, MARKER).values()) == 0
            checked = http.post("/v1/ns/default/receipts/verify", json={"receipt": receipt})
            assert checked.status_code == 200, checked.text
            assert checked.json()["ok"], checked.json()
    finally:
        mem.close()


@pytest.mark.parametrize("key", ["zz" * 32, "not hex", "ab" * 65])
def test_a_receipt_with_a_key_forget_could_not_have_written_is_refused(
    tmp_path: Path, key: str
) -> None:
    """A hand-edited key (not hex, or longer than BLAKE2b takes) is an InvalidInput naming
    the field, read back or verified as an object; it was a ValueError, a 500 over HTTP."""
    with Memory.open(tmp_path / "k.db") as mem:
        write_marked(mem)
        receipt = mem.forget("branch", "s")
        with pytest.raises(InvalidInput, match="receipt: key"):
            Receipt.from_json({**receipt.to_json(), "key": key})
        with pytest.raises(InvalidInput, match="receipt: key"):
            mem.verify_receipt(dataclasses.replace(receipt, key=key))
