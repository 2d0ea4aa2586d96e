"""``Memory``'s forget calls, each of several steps around its transactions: ``forget``
(what a message, branch, conversation or subject takes with it, erased, with a receipt of
keyed fingerprints, then the files' cleanup and an integration's own store), and the
receipt's two byte checks, the tenant's ``verify_receipt`` and the operator's
``scan_store``. ``Memory`` keeps the signatures and hands the calls here.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._core.validation import check_id
from .._engine import corrections
from .._engine import forget as forgetting
from ..errors import InvalidInput
from ..model import ERASED
from ..receipt import (
    FORGET_KINDS,
    ByteCheck,
    OutsideStore,
    Receipt,
    ReceiptCheck,
    key_bytes,
    new_key,
    receipt_hash,
)
from ..store.base import CleanupPending
from ..store.residue import CLEANUP_DUE, check_rows
from ..store.residue import scan_store as scan_bytes

if TYPE_CHECKING:
    from . import Memory


def forget(
    memory: Memory,
    kind: str,
    id: str,
    dry_run: bool,
    namespace: str,
    outside: OutsideStore | None,
) -> Receipt:
    """``Memory.forget`` and ``forget_with``: plan and erase in one transaction (read
    only for a dry run) with the receipt and its row check; after the commit the files'
    cleanup, then ``outside``'s store, whose sections the receipt's hash then covers."""
    if kind not in FORGET_KINDS:
        raise InvalidInput(f"forget kind must be one of {FORGET_KINDS}, got {kind!r}")
    check_id(id, f"forget {kind}: id")
    if not isinstance(dry_run, bool):
        raise InvalidInput(f"dry_run must be true or false, got {dry_run!r}")
    ns = memory._namespace(namespace)
    key = new_key()
    pending = None
    texts: tuple[str, ...] = ()
    with memory._read(ns) if dry_run else memory._write(ns):
        planned = forgetting.plan(ns, kind, id)
        if planned.empty:  # a forget run again (its receipt is kept) or a miss
            again = forgetting.kept(ns, kind, id)
            if again is None:
                raise forgetting.nothing_left(ns, kind, id, planned)
            return again
        texts = tuple(planned.texts) if outside is not None else ()
        fingerprints, short = forgetting.fingerprints(planned, key)
        if not dry_run:
            forgetting.apply(ns, planned)
        check = check_rows(
            memory._store, ns.name, forgetting.plan_scope(ns, planned), key,
            frozenset(fingerprints),
        )  # fmt: skip
        receipt = forgetting.receipt(
            ns, kind, id, planned, dry_run, key, fingerprints, short, check, None,
            memory._store.cannot_clean(),
        )  # fmt: skip
        if not dry_run:  # the receipt commits with the erase
            forgetting.mark(ns, id, planned, receipt)
    if not dry_run:
        with memory._lock:  # after the commit, as erase() does
            pending = memory._store.finish_cleanup()
        if pending is not None:
            warnings.warn(CleanupPending(pending), stacklevel=3)
        corrections.forget_text()
        receipt = replace(receipt, cleanup_pending=pending)  # outside the hash (version 2)
    if outside is not None:  # an integration's own store, cleaned and checked here
        stores = outside(receipt, texts)
        del texts
        receipt = replace(receipt, stores=stores)
        receipt = replace(receipt, content_hash=receipt_hash(receipt))
        if not dry_run:
            with memory._write(ns):
                forgetting.mark(ns, id, planned, receipt)
    return receipt


def verify_receipt(
    memory: Memory, receipt: Receipt | Mapping[str, Any], namespace: str
) -> ReceiptCheck:
    """``Memory.verify_receipt``: only a receipt this namespace's forget made (its hash
    in the audit log) is checked, against this namespace's rows."""
    found = receipt if isinstance(receipt, Receipt) else Receipt.from_json(receipt)
    ns = memory._namespace(namespace)
    if found.namespace != ns.name:
        raise InvalidInput(
            f"receipt {found.content_hash!r} is for namespace {found.namespace!r}, not {ns.name!r}"
        )
    if found.key:
        key_bytes(found.key)  # a key no forget could have written is refused, named
    matches = found.hash_matches
    with memory._read(ns):
        in_audit = matches and any(
            entry.reason == found.content_hash
            for entry in memory._store.audit(ns.name, id=found.target, op="forget")
        )
        # only a receipt this namespace's forget made is checked: its ids and
        # fingerprints are the forget's, never a caller's choice
        if not in_audit:
            return ReceiptCheck(found.content_hash, matches, False, (), None, False)
        ids = [*found.erased.get("events", ()), *found.erased.get("records", ())]
        statuses = memory._store.statuses(ns.name, ids)
        reappeared = tuple(item for item in ids if statuses.get(item) != ERASED)
        check = None
        if found.key:
            scope = forgetting.receipt_scope(ns, found)
            check = check_rows(
                memory._store, ns.name, scope, found.key, frozenset(found.fingerprints)
            )
        due = memory._store.cleanup_due(ns.name)
    if due and check is not None:  # the WAL may still hold the erased pages
        check = replace(check, clean=False, unchecked=(*check.unchecked, CLEANUP_DUE))
    ok = not reappeared and not due and (check is None or check.clean)
    return ReceiptCheck(found.content_hash, matches, in_audit, reappeared, check, ok)


def scan_store(memory: Memory, receipt: Receipt | Mapping[str, Any]) -> ByteCheck:
    """``Memory.scan_store``: the full, unaltered receipt's fingerprints looked for in
    every place the store keeps data."""
    found = receipt if isinstance(receipt, Receipt) else Receipt.from_json(receipt)
    if not found.key:
        raise InvalidInput("scan_store needs the full receipt: this one is redacted (no key)")
    if not found.hash_matches:
        raise InvalidInput(
            f"receipt {found.content_hash!r}: its fields do not match its content hash"
        )
    return scan_bytes(memory._store, found.key, frozenset(found.fingerprints), memory._lock)
