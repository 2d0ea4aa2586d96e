"""One line a person reads for the answers whose JSON is a structure: a forget receipt, its
verification, a diff and a blame. ``--json`` prints the whole value; these say what it
means. Fields are read by name, so a value carrying more fields than these read prints the
same line."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

SHOWN_IDS = 5  # ids named in a line before "and N more"
SHORT = 48  # characters of a text quoted in a line


def utc(seconds: float) -> str:
    """A time stamp as ISO 8601 in UTC, to the second: ``2026-12-03T10:15:32Z``."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def plural(count: int, noun: str) -> str:
    if count == 1:
        return f"1 {noun}"
    ending = "es" if noun.endswith(("s", "x")) else "s"
    return f"{count} {noun}{ending}"


def some(ids: Iterable[Any], limit: int = SHOWN_IDS) -> str:
    """Ids joined by commas, the first ``limit`` of them and how many more."""
    found = [str(item) for item in ids]
    named = ", ".join(found[:limit])
    return named + (f" and {len(found) - limit} more" if len(found) > limit else "")


def quoted(text: str | None) -> str:
    if text is None:
        return "(erased)"
    line = " ".join(text.split())
    return '"' + (line if len(line) <= SHORT else line[: SHORT - 1] + "…") + '"'


# -- forget and its receipt ------------------------------------------------------------
def byte_check(check: Any) -> str:
    """``check clean`` or where fingerprints of the text were found, and what was not read."""
    if check is None:
        return "no byte check (the receipt is redacted: it has no key)"
    locations: Mapping[str, Any] = getattr(check, "locations", None) or {}
    unchecked: Sequence[str] = getattr(check, "unchecked", None) or ()
    hits = {where: count for where, count in locations.items() if count}
    if getattr(check, "clean", False):
        said = "check clean"
    elif hits:
        said = "check NOT clean: text found in " + some(f"{w} ({n})" for w, n in hits.items())
    else:
        said = "check NOT clean"
    if unchecked:
        said += f" ({plural(len(unchecked), 'place')} not read: {some(unchecked, 2)})"
    return said


def receipt_line(receipt: Any) -> str:
    """``forgot message u2: 1 event, 1 record erased; ...; receipt sha256:...``."""
    counts: Mapping[str, int] = getattr(receipt, "counts", None) or {}
    what = ", ".join(
        plural(count, table.removesuffix("s")) for table, count in counts.items() if count
    )
    what = what or "nothing"
    target = f"{receipt.kind} {receipt.target}"
    if receipt.dry_run:
        parts = [f"would forget {target}: {what} (dry run: nothing erased)"]
    else:
        parts = [f"forgot {target}: {what} erased"]
    shown = getattr(receipt, "shown", None) or ()
    if shown:
        sessions = list(dict.fromkeys(item.session for item in shown))
        verb = "had been shown to" if not receipt.dry_run else "was shown to"
        parts.append(f"{verb} {plural(len(sessions), 'session')} ({some(sessions)})")
    if not receipt.dry_run:
        parts.append(byte_check(receipt.check))
    kept: Sequence[str] = getattr(receipt, "sources_kept", None) or ()
    if kept:  # "clean" is about what went: what it cited and kept may say it too
        parts.append(f"kept {plural(len(kept), 'cited source')} ({some(kept)}): not checked")
    pending = getattr(receipt, "cleanup_pending", None)
    if pending:
        parts.append(f"cleanup pending: {pending}")
    for store in getattr(receipt, "stores", None) or ():
        parts.append(f"{store.name}: {byte_check(store.check)}")
    parts.append(f"receipt {receipt.content_hash}")
    return "; ".join(parts)


def receipt_check_line(found: Any) -> str:
    """``receipt sha256:... verified: ...`` or ``... NOT verified: <why>``."""
    check = getattr(found, "check", None)
    reappeared: Sequence[str] = getattr(found, "reappeared", None) or ()
    if found.ok:
        said = ["in audit", "nothing reappeared", byte_check(check)]
        return f"receipt {found.content_hash} verified: " + ", ".join(said)
    why = []
    if not getattr(found, "hash_matches", True):
        why.append("its hash does not match its fields (the receipt was changed)")
    if not getattr(found, "in_audit", True):
        why.append("no forget with this hash in the audit log")
    if reappeared:
        why.append(f"{plural(len(reappeared), 'id')} no longer erased ({some(reappeared)})")
    if check is not None and not getattr(check, "clean", True):
        why.append(byte_check(check))
    return f"receipt {found.content_hash} NOT verified: " + ("; ".join(why) or "check failed")


# -- diff and blame --------------------------------------------------------------------
def _entry(entry: Any, other: str) -> str:
    """A record only one side shows, with the other side's reason: ``city-1 (off_path at
    u2b)``, ``f1 (revised: revision 2 at u2b)``."""
    if entry.reason == "revised" and entry.other_revision is not None:
        return f"{entry.record.id} (revised: revision {entry.other_revision} at {other})"
    return f"{entry.record.id} ({entry.reason} at {other})"


def _value(record: Any) -> str:
    return "(none)" if record is None else str(record.id)


def diff_line(found: Any) -> str:
    """``u2 -> u2b: only at u2: city-1 (off_path at u2b); ...; 1 key differs: city
    (city-1 -> city-2)``."""
    a, b = found.anchor_a, found.anchor_b
    if not (found.only_a or found.only_b or found.keys):
        return f"{a} -> {b}: no difference (both anchors show the same records)"
    parts = []
    for anchor, other, entries in ((a, b, found.only_a), (b, a, found.only_b)):
        if entries:
            parts.append(f"only at {anchor}: {some(_entry(entry, other) for entry in entries)}")
    if found.keys:
        changes = (
            f"{change.key}{'' if change.scope is None else ' in scope ' + change.scope} "
            f"({_value(change.a)} -> {_value(change.b)})"
            for change in found.keys
        )
        verb = "differs" if len(found.keys) == 1 else "differ"
        parts.append(f"{plural(len(found.keys), 'key')} {verb}: {some(changes)}")
    return f"{a} -> {b}: " + "; ".join(parts)


def _blamed(line: Any) -> str:
    said = f"[{line.line}] {line.record_id}@{line.revision} {quoted(line.text)}"
    status = getattr(line, "status", None)
    if status and status != "erased":
        said += f" ({status})"
    if line.sources is None:
        return said + " from no sources (legacy)"
    messages = []
    for message in line.messages:
        named = message.id + (" (erased)" if message.text is None else "")
        if not message.on_path:
            named += " (off the branch)"
        messages.append(named)
    return said + " from " + (some(messages) or "no message")


def blame_line(blame: Any) -> str:
    """``session chat-7 delivery 5 at u2b (tree u1, 4 messages on the path), <time>: [1] ...``."""
    where = "no anchor" if blame.anchor is None else f"at {blame.anchor}"
    branch = f"tree {blame.tree}, " if blame.tree else ""
    head = (
        f"session {blame.session} delivery {blame.delivery} {where} "
        f"({branch}{plural(len(blame.path), 'message')} on the path), {utc(blame.time)}"
    )
    if not blame.lines:
        return head + ": no memory line"
    return head + ": " + "; ".join(_blamed(line) for line in blame.lines)
