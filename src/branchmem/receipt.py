"""Receipts of ``forget``: what went, who had been shown it, and a byte check for residue.

A receipt never holds the forgotten text. It holds keyed fingerprints of it: for every
16-byte window of the text that starts where a word or a multi-byte character starts, the
first 8 bytes of BLAKE2b keyed with a random 32-byte key made for this receipt alone. The
key lives only in the receipt (the store keeps the receipt's content hash), so the store's
copy cannot be tested against guesses, and two receipts of one text share no fingerprint.
Whoever holds the full receipt can test guesses of 16-byte windows, as whoever holds the
text could: share ``redacted()`` instead, which keeps everything but the key and
fingerprints and still checks against its content hash. Text shorter than a window gets no
fingerprint at all (a fingerprint of "asthma" would be a dictionary lookup away); the
receipt counts such fields in ``short_fields``.

A scan finds a window wherever the same bytes lie in a file or a row, wherever the
surrounding bytes: the window starts are chosen by the bytes inside the window and the one
just before it, both part of the text.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import secrets
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .errors import InvalidInput

RECEIPT_VERSION: Final = 1
FORGET_KINDS: Final = ("message", "branch", "conversation", "subject")
WINDOW: Final = 16  # bytes of text per fingerprint
FINGERPRINT_BYTES: Final = 8
MAX_PER_TEXT: Final = 64  # fingerprints kept per text field (evenly spread over it)

_SEPARATOR = rb"\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f"
# a window starts at a word start (a separator byte, then a byte that is not one) or at the
# lead byte of a multi-byte UTF-8 character (CJK text has no spaces)
_START = re.compile(rb"(?<=[" + _SEPARATOR + rb"])(?=[^" + _SEPARATOR + rb"])|(?=[\xc2-\xf4])")


@dataclass(frozen=True, slots=True)
class Shown:
    """A delivered context that showed forgotten text: records it contained, or an anchor at
    or below a forgotten message (the context's recent messages may have quoted it)."""

    session: str
    seq: int
    anchor: str | None
    records: tuple[str, ...]
    messages: bool


@dataclass(frozen=True, slots=True)
class ByteCheck:
    """Fingerprint hits per location (file, table, statistics); 0 everywhere is clean.
    ``unchecked`` names what could not be read, and why."""

    backend: str
    locations: dict[str, int]
    unchecked: tuple[str, ...]
    clean: bool
    time: float


@dataclass(frozen=True, slots=True)
class StoreSection:
    """What a forget erased in a store outside branchmem that an integration wraps (Mem0's
    vector store and history database): ids per table, the byte check of its files, and
    what it cannot clean."""

    name: str
    erased: dict[str, tuple[str, ...]]
    counts: dict[str, int]
    check: ByteCheck
    cannot_clean: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Receipt:
    """What ``forget`` erased (or, with ``dry_run``, would erase), per table; the sessions
    that had been shown it; the byte check run after the erase; what the backend cannot
    clean; and ``content_hash``, which the audit log keeps (op ``forget``)."""

    version: int
    namespace: str
    kind: str
    target: str
    dry_run: bool
    time: float
    actor: str | None
    erased: dict[str, tuple[str, ...]]
    counts: dict[str, int]
    shown: tuple[Shown, ...]
    sources_kept: tuple[str, ...]
    check: ByteCheck
    cannot_clean: tuple[str, ...]
    cleanup_pending: str | None
    short_fields: int
    fingerprint_digest: str
    key: str
    fingerprints: tuple[str, ...]
    content_hash: str
    stores: tuple[StoreSection, ...] = ()  # integrations' own stores (hashed when present)

    def to_json(self) -> dict[str, Any]:
        """The receipt as plain JSON values (what ``from_json`` reads back)."""
        plain: dict[str, Any] = _plain(self)
        return plain

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Receipt:
        """Read a receipt back from ``to_json`` (or the HTTP answer), checking its shape."""
        if not isinstance(data, Mapping):
            raise InvalidInput(f"a receipt must be a JSON object, got {type(data).__name__}")
        names = [field.name for field in dataclasses.fields(cls) if field.name != "stores"]
        missing = [name for name in names if name not in data]
        if missing:
            raise InvalidInput(f"receipt: missing field(s) {', '.join(missing)}")
        try:
            check = data["check"]
            receipt = cls(
                version=int(data["version"]),
                namespace=str(data["namespace"]),
                kind=str(data["kind"]),
                target=str(data["target"]),
                dry_run=bool(data["dry_run"]),
                time=float(data["time"]),
                actor=None if data["actor"] is None else str(data["actor"]),
                erased={str(k): tuple(map(str, v)) for k, v in data["erased"].items()},
                counts={str(k): int(v) for k, v in data["counts"].items()},
                shown=tuple(
                    Shown(
                        str(s["session"]),
                        int(s["seq"]),
                        s["anchor"],
                        tuple(map(str, s["records"])),
                        bool(s["messages"]),
                    )
                    for s in data["shown"]
                ),
                sources_kept=tuple(map(str, data["sources_kept"])),
                check=_byte_check(check),
                cannot_clean=tuple(map(str, data["cannot_clean"])),
                cleanup_pending=data["cleanup_pending"],
                short_fields=int(data["short_fields"]),
                fingerprint_digest=str(data["fingerprint_digest"]),
                key=str(data["key"]),
                fingerprints=tuple(map(str, data["fingerprints"])),
                content_hash=str(data["content_hash"]),
                stores=tuple(
                    StoreSection(
                        str(section["name"]),
                        {str(k): tuple(map(str, v)) for k, v in section["erased"].items()},
                        {str(k): int(v) for k, v in section["counts"].items()},
                        _byte_check(section["check"]),
                        tuple(map(str, section["cannot_clean"])),
                    )
                    for section in data.get("stores", ())
                ),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise InvalidInput(f"receipt: malformed field ({error!r})") from error
        if receipt.key:
            key_bytes(receipt.key)
        return receipt

    def redacted(self) -> Receipt:
        """This receipt without its key and fingerprints: safe to hand to an auditor; its
        content hash still checks, but it cannot re-run the byte check."""
        return dataclasses.replace(self, key="", fingerprints=())

    @property
    def hash_matches(self) -> bool:
        """Whether ``content_hash`` is the hash of this receipt's fields (and, unless
        redacted, the key and fingerprints are the ones the hash covers)."""
        if self.key and digest_of(self.key, self.fingerprints) != self.fingerprint_digest:
            return False
        return receipt_hash(self) == self.content_hash


@dataclass(frozen=True, slots=True)
class ReceiptCheck:
    """``verify_receipt``'s answer: the receipt is intact and in the audit, every id it
    erased is still erased, and (unless redacted) a fresh byte check."""

    content_hash: str
    hash_matches: bool
    in_audit: bool
    reappeared: tuple[str, ...]
    check: ByteCheck | None
    ok: bool


@dataclass(frozen=True, slots=True)
class WrappedReceiptCheck:
    """``verify_receipt`` of an integration that wraps a store outside branchmem (Mem0, a
    LangGraph saver): the store's own check (``Memory.verify_receipt``) and a fresh byte
    check of the wrapped store (None when the receipt is redacted: no key); ``ok`` is both."""

    store: ReceiptCheck
    wrapped: ByteCheck | None
    ok: bool


def verify_wrapped(
    store: ReceiptCheck, receipt: Receipt, check: Callable[[str, frozenset[str]], ByteCheck]
) -> WrappedReceiptCheck:
    """The store's check of ``receipt`` with ``check`` (key, fingerprints) run again on the
    wrapped store, unless the receipt is redacted."""
    wrapped = check(receipt.key, frozenset(receipt.fingerprints)) if receipt.key else None
    return WrappedReceiptCheck(store, wrapped, store.ok and (wrapped is None or wrapped.clean))


def _byte_check(check: Mapping[str, Any]) -> ByteCheck:
    return ByteCheck(
        str(check["backend"]),
        {str(k): int(v) for k, v in check["locations"].items()},
        tuple(map(str, check["unchecked"])),
        bool(check["clean"]),
        float(check["time"]),
    )


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def receipt_hash(receipt: Receipt) -> str:
    """SHA-256 of the receipt's canonical JSON, without the key, the fingerprints (their
    digest stands for them) and the hash itself; ``stores`` is left out only when empty,
    so a receipt without integrations hashes as it did before the field existed."""
    body = _plain(receipt)
    for name in ("key", "fingerprints", "content_hash"):
        body.pop(name)
    if not body["stores"]:
        body.pop("stores")
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def digest_of(key: str, fingerprints: Iterable[str]) -> str:
    """What the content hash covers in place of the key and the fingerprints."""
    joined = "\n".join([key, *sorted(fingerprints)])
    return "sha256:" + hashlib.sha256(joined.encode()).hexdigest()


def new_key() -> str:
    return secrets.token_hex(32)


def _fingerprint(key: bytes, window: bytes) -> str:
    return hashlib.blake2b(window, key=key, digest_size=FINGERPRINT_BYTES).hexdigest()


def _windows(data: bytes) -> Iterator[bytes]:
    end = len(data) - WINDOW
    for match in _START.finditer(data):
        start = match.start()
        if start > end:
            return
        yield data[start : start + WINDOW]


def key_bytes(key: str) -> bytes:
    """The fingerprint key a receipt carries as hex; a key no receipt could carry (not hex,
    longer than BLAKE2b's 64 bytes) is refused, naming the field."""
    try:
        secret = bytes.fromhex(key)
    except ValueError:
        raise InvalidInput("receipt: key must be hexadecimal (as forget wrote it)") from None
    if len(secret) > 64:
        raise InvalidInput(f"receipt: key is {len(secret)} bytes, over BLAKE2b's 64")
    return secret


def text_fingerprints(key: str, text: str) -> list[str]:
    """Fingerprints of one text field, as UTF-8 and as JSON writes it escaped (a store may
    keep meta as JSON text); empty when the text is shorter than a window."""
    secret = key_bytes(key)
    found: list[str] = []
    forms = {text.encode("utf-8"), json.dumps(text)[1:-1].encode("ascii")}
    for form in sorted(forms):
        prints = list(dict.fromkeys(_fingerprint(secret, w) for w in _windows(form)))
        if len(prints) > MAX_PER_TEXT:
            step = len(prints) / MAX_PER_TEXT
            prints = [prints[int(i * step)] for i in range(MAX_PER_TEXT)]
        found.extend(prints)
    return found


def count_hits(key: str, fingerprints: frozenset[str], data: bytes) -> int:
    """How many windows of ``data`` carry one of the fingerprints (about a second per
    5 MB of text: every window start is hashed)."""
    if not fingerprints or len(data) < WINDOW:
        return 0
    keyed = hashlib.blake2b(key=key_bytes(key), digest_size=FINGERPRINT_BYTES)
    hits = 0
    for window in _windows(data):
        one = keyed.copy()  # the key's setup once, not per window
        one.update(window)
        hits += one.hexdigest() in fingerprints
    return hits


def sqlite_file_hits(
    path: str | Path, key: str, fingerprints: frozenset[str], label: str
) -> dict[str, int]:
    """Hits per file of a SQLite database outside branchmem (an integration's store) and
    its journal, write-ahead log and shared memory; a file not there holds nothing."""
    found: dict[str, int] = {}
    for suffix in ("", "-journal", "-wal", "-shm"):
        file = Path(f"{path}{suffix}")
        data = file.read_bytes() if file.is_file() else b""
        found[f"{label} {file.name}"] = count_hits(key, fingerprints, data)
    return found


def sqlite_row_hits(
    connection: sqlite3.Connection,
    key: str,
    fingerprints: frozenset[str],
    tables: Iterable[str] | None = None,
) -> int:
    """Hits in every text and bytes value of ``tables`` (default: every table) of an open
    SQLite database: an in-memory one has no file to read. A table that is not there is
    the driver's error."""
    if tables is None:
        query = "SELECT name FROM sqlite_master WHERE type='table'"
        tables = [row[0] for row in connection.execute(query)]
    hits = 0
    for table in tables:
        for row in connection.execute(f'SELECT * FROM "{table}"'):
            hits += sum(value_hits(key, fingerprints, value) for value in row)
    return hits


def value_hits(key: str, fingerprints: frozenset[str], value: object) -> int:
    """Hits in one value a database gave back: text, bytes, or JSON (every string in it,
    keys included); numbers and NULL hold none."""
    if isinstance(value, bytes | bytearray | memoryview):
        return count_hits(key, fingerprints, bytes(value))
    if isinstance(value, str):
        return count_hits(key, fingerprints, value.encode("utf-8"))
    if isinstance(value, dict | list):
        texts = strings_in(value)
        return sum(count_hits(key, fingerprints, text.encode("utf-8")) for text in texts)
    return 0


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
            rows = cursor.execute(f'SELECT * FROM "{table}"').fetchall()
            found[f"{label}{table}"] = sum(
                value_hits(key, fingerprints, value) for row in rows for value in row
            )
            if toast is None:
                continue
            try:
                chunks = cursor.execute(f'SELECT chunk_data FROM pg_toast."{toast}"').fetchall()
            except psycopg.Error:
                unchecked.append(
                    f"TOAST of {table}: this role may not read pg_toast.{toast} (its values "
                    "were read de-toasted with the rows)"
                )
                continue
            found[f"{label}toast {table}"] = sum(
                value_hits(key, fingerprints, chunk) for (chunk,) in chunks
            )
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


def strings_in(value: object) -> Iterator[str]:
    """Every string in a JSON value (keys included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for name, item in value.items():
            yield str(name)
            yield from strings_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings_in(item)
