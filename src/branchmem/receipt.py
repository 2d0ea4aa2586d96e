"""Receipts of ``forget``: what went, who had been shown it, and a byte check for residue.

A receipt never holds the forgotten text. It holds keyed fingerprints of it: for every
16-byte window of the text that starts where a word or a multi-byte character starts, the
first 8 bytes of BLAKE2b keyed with a random 32-byte key made for this receipt alone. The
key lives only in the receipt (the store keeps the receipt's content hash), so the store's
copy cannot be tested against guesses, and two receipts of one text share no fingerprint.
Whoever holds the full receipt can test guesses of 16-byte windows, as whoever holds the
text could: share ``redacted()`` instead, which keeps everything but the key and
fingerprints and still checks against its content hash. A field shorter than a window
("asthma") is fingerprinted whole (whoever holds the full receipt can test guesses of it,
as of any window), and found where a row holds it as a whole value (a column, or a string
inside a JSON column); a file scan cannot see it (no bounds to cut it at), which
``Memory.scan_store`` says. ``short_fields`` (version 1) counted such fields, unchecked.

A scan finds a window wherever the same bytes lie in a file or a row, wherever the
surrounding bytes: the window starts are chosen by the bytes inside the window and the one
just before it, both part of the text.

What a receipt's check reads is its own namespace's rows of what went (``ResidueScope``),
through the store's driver: never another tenant's bytes, so a tenant cannot test guesses
against them. A whole-store scan (files, every table) is the operator's
(``Memory.scan_store``), and reads files in a child process (``bytescan.py``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from .errors import InvalidInput

RECEIPT_VERSION: Final = 2  # 2: the hash leaves out cleanup_pending, known after the commit
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
class StoreScan:
    """What a store's whole-store scan read (``Store.scan_bytes``): fingerprint hits per
    place, what it could not read (the scan is then not clean), and notes on what a scan of
    its kind cannot see, which leave nothing unread."""

    locations: dict[str, int]
    unchecked: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ResidueScope:
    """The rows a receipt's check reads, in its namespace alone: the erased events and
    records, the retractions naming them, the audit entries that name them, the trees they
    were placed in (each tree's key index) and the sessions that were shown them. Ids are
    what a receipt lists, so a check made later from the receipt reads the same rows."""

    events: frozenset[str]
    records: frozenset[str]
    trees: frozenset[str]
    sessions: frozenset[str]


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


# what ``Memory.forget_with`` calls after the erase: given the receipt and the erased text,
# clean a store outside branchmem and return its sections (the receipt's hash covers them)
OutsideStore = Callable[[Receipt, tuple[str, ...]], tuple[StoreSection, ...]]


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
    digest stands for them) and the hash itself, and (version 2) without
    ``cleanup_pending``; ``stores`` is left out only when empty, so a receipt without
    integrations hashes as it did before the field existed."""
    body = _plain(receipt)
    for name in ("key", "fingerprints", "content_hash"):
        body.pop(name)
    if receipt.version >= 2:  # the cleanup runs after the commit that keeps the hash
        body.pop("cleanup_pending")
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
    keep meta as JSON text); a text shorter than a window is fingerprinted whole."""
    secret = key_bytes(key)
    found: list[str] = []
    if 0 < len(text.encode("utf-8", "surrogatepass")) < WINDOW:
        return [_fingerprint(secret, text.encode("utf-8", "surrogatepass"))]
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


class HitCounter:
    """``count_hits`` over a stream read in chunks, in memory bounded by the chunk: a window
    that straddles two chunks is counted once, with the byte before it seen, as in one read."""

    def __init__(self, key: str, fingerprints: frozenset[str]) -> None:
        self._keyed = hashlib.blake2b(key=key_bytes(key), digest_size=FINGERPRINT_BYTES)
        self._fingerprints = fingerprints
        self._held = b""  # the bytes after the last window start looked at, and the one before
        self._next = 0  # the first start in ``_held`` not looked at yet
        self.hits = 0

    def feed(self, chunk: bytes) -> None:
        data = self._held + chunk
        end = len(data) - WINDOW  # the last start with a whole window in ``data``
        if end < self._next:
            self._held = data
            return
        if self._fingerprints:
            for match in _START.finditer(data, self._next):
                start = match.start()
                if start > end:
                    break
                one = self._keyed.copy()
                one.update(data[start : start + WINDOW])
                self.hits += one.hexdigest() in self._fingerprints
        self._held, self._next = data[end:], 1


def value_hits(key: str, fingerprints: frozenset[str], value: object) -> int:
    """Hits in one value a database gave back: text, bytes, or JSON (every string in it,
    keys included), by window and, for a short string, whole (a JSON column's strings
    too); numbers and NULL hold none."""
    if isinstance(value, bytes | bytearray | memoryview):
        return count_hits(key, fingerprints, bytes(value))
    if isinstance(value, str):
        hits = count_hits(key, fingerprints, value.encode("utf-8", "surrogatepass"))
        if value[:1] in ("{", "["):  # a JSON column: its short strings, whole
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            return hits + _whole_hits(key, fingerprints, strings_in(parsed))
        return hits + _whole_hits(key, fingerprints, (value,))
    if isinstance(value, dict | list):
        texts = list(strings_in(value))
        windows = sum(
            count_hits(key, fingerprints, text.encode("utf-8", "surrogatepass")) for text in texts
        )
        return windows + _whole_hits(key, fingerprints, texts)
    return 0


def _whole_hits(key: str, fingerprints: frozenset[str], texts: Iterable[str]) -> int:
    if not fingerprints:
        return 0
    secret = key_bytes(key)
    short = (text.encode("utf-8", "surrogatepass") for text in texts)
    return sum(_fingerprint(secret, data) in fingerprints for data in short if len(data) < WINDOW)


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
