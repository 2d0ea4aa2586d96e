"""Corrections (SPEC §5 retract, §6): they reach every copy, and what was built on the
corrected item goes stale.

A retraction is itself a gated record: it acts only where it is visible (branch scope) or
everywhere (tree scope). Withdraw and restore flip a status that every view reads; erase
removes text for good, from the target and every record built on it.
"""

from __future__ import annotations

from .._core.provenance import RevisionNode
from .._core.retraction import BRANCH, RetractionNode
from .._core.validation import check_text
from ..errors import ErasedError, InvalidInput
from ..model import ERASED, RETRACTED, RETRACTION_KIND, WITHDRAWN
from ..search.lexical import normalize, query_terms
from ..search.tokens import count_tokens
from .dependents import dependents, home, mark_stale
from .namespace import Namespace
from .records import add_record


def forget_text() -> None:
    """Empty the process's caches keyed by text, so an erased text is not kept in memory.
    (The store's decoded-row caches are emptied by the store itself.)"""
    normalize.cache_clear()
    query_terms.cache_clear()
    count_tokens.cache_clear()


def retract(
    ns: Namespace,
    retraction_id: str,
    sources: object,
    targets: tuple[str, ...],
    key: str | None,
    key_scope: str | None,
    scope: str,
    reason: str,
) -> RevisionNode:
    """Write a retraction record and queue what was built on what it hides."""
    for target in targets:
        if ns.latest(target).kind == RETRACTION_KIND:
            raise InvalidInput(
                f"retraction {retraction_id!r} targets retraction {target!r}: withdraw it instead"
            )
    detail = {
        "scope": scope,
        "targets": list(targets),
        "key": key,
        "key_scope": key_scope,
        "reason": reason,
    }
    described = reason or "retracted " + (", ".join(targets) if targets else f"key {key!r}")
    node = add_record(
        ns, retraction_id, sources, described, RETRACTION_KIND, None, None,
        {"retraction": detail}, (),
    )  # fmt: skip
    store = ns.store
    store.put_retraction(
        ns.name, RetractionNode(retraction_id, scope, targets, key, key_scope, node.seq)
    )
    ns.audit("retract", (retraction_id, *targets), reason=reason)
    hit = set(targets)
    if key is not None:
        hit.update(store.records_with_key(ns.name, key))
    hit.discard(retraction_id)
    cited = {t for t, _ in store.citing_any(ns.name, hit)} if hit else set()
    acts_from = home(node) if scope == BRANCH else None
    for target in sorted(cited):
        mark_stale(ns, target, RETRACTED, cause_anchor=acts_from)
    return node


def withdraw(ns: Namespace, item_id: str, reason: str) -> None:
    """Take an event or record out of every view; its dependents go stale. Reversible."""
    if ns.status_of(item_id) == ERASED:
        raise ErasedError(f"{item_id!r} was erased and cannot be withdrawn")
    ns.store.set_status(ns.name, item_id, WITHDRAWN)
    ns.audit("withdraw", (item_id,), reason=reason)
    mark_stale(ns, item_id, WITHDRAWN)


def restore(ns: Namespace, item_id: str) -> None:
    """Undo ``withdraw``; a no-op for an item that is not withdrawn."""
    status = ns.status_of(item_id)
    if status == ERASED:
        raise ErasedError(f"{item_id!r} was erased and cannot be restored")
    if status == WITHDRAWN:
        ns.store.set_status(ns.name, item_id, None)
        ns.store.remove_repairs(ns.name, cause=item_id)
        ns.audit("restore", (item_id,))


def erase(ns: Namespace, item_id: str, reason: str) -> set[str]:
    """Remove the text of ``item_id`` and of every record built on it; ids stay as a
    tombstone. Returns the ids erased now (erasing again is a no-op). The store's files are
    scrubbed by the caller, after the transaction has committed.

    ``reason`` is checked like every reason but not kept: the erase's audit entry names the
    erased ids, and a reason ("forget my asthma diagnosis") may repeat what it erases; a hash
    of it would be a fingerprint of a short text that anyone can test guesses against."""
    check_text(reason, f"erase {item_id!r}: reason")
    if ns.status_of(item_id) == ERASED:
        return set()
    erased = {item_id} | dependents(ns, item_id)
    store = ns.store
    gone = store.statuses(ns.name, erased)
    erased = {item for item in erased if gone.get(item) != ERASED}
    events = {item for item in erased if store.get_event(ns.name, item) is not None}
    store.erase_content(ns.name, events, erased - events)
    for item in sorted(erased):
        store.set_status(ns.name, item, ERASED)
    ns.audit("erase", sorted(erased))  # no reason: see above
    return erased


def dependents_of(ns: Namespace, item_id: str) -> set[str]:
    """Every record built on the event or record ``item_id``, which must exist."""
    ns.status_of(item_id)
    return dependents(ns, item_id)
