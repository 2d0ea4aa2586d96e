"""How a command shows what the API returned: JSON (``--json``, the wire codec's form) or a
line or table chosen by the value's type, so a new method returning a known type needs no
printing code of its own."""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from ..api.codec import encode
from ..model import Blame, Conversation, Delivery, Diff, Event, Explanation, Hit, Record
from ..receipt import Receipt, ReceiptCheck
from ..search.context import Context
from .lines import blame_line, diff_line, receipt_check_line, receipt_line, utc

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

# columns of a table of each type (default: every field)
COLUMNS: dict[type, tuple[str, ...]] = {
    Event: ("id", "parent", "tree", "role", "content"),
    Record: ("id", "revision", "kind", "key", "content", "sources"),
    Conversation: ("title", "tree", "head", "events"),
}


def make_table(*columns: str, title: str | None = None) -> Table:
    """A table whose cells wrap instead of cutting ids short (an id is copied, not read)."""
    made = Table(title=title, title_justify="left")
    for column in columns:
        made.add_column(column, overflow="fold")
    return made


def emit_json(value: Any) -> None:
    out.print_json(json.dumps(encode(value), ensure_ascii=False))


def warn(message: str) -> None:
    err.print(f"branchmem: warning: {message}", markup=False)


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, tuple | list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False) if value else ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def column_cell(item: Any, column: str) -> str:
    """One cell of a table row: times (seconds since the epoch) as ISO 8601 in UTC, a
    delivery's items as ``record@revision``."""
    value = getattr(item, column)
    if column == "time" and isinstance(value, int | float) and not isinstance(value, bool):
        return utc(value)
    if isinstance(item, Delivery) and column == "items":
        return ", ".join(f"{record}@{revision}" for record, revision in value)
    return cell(value)


def table(items: Sequence[Any], item_type: Any, title: str) -> None:
    """Rows of dataclasses; plain values one per line."""
    if not (dataclasses.is_dataclass(item_type) and isinstance(item_type, type)):
        for item in items:
            out.print(cell(item), markup=False)
        return
    columns = COLUMNS.get(item_type) or tuple(f.name for f in dataclasses.fields(item_type))
    shown = make_table(*columns, title=title)
    for item in items:
        if item_type is Record and item.sources is None:
            row = [column_cell(item, c) if c != "sources" else "(legacy)" for c in columns]
        else:
            row = [column_cell(item, c) for c in columns]
        shown.add_row(*row)
    out.print(shown)


def explanation_line(why: Explanation) -> str:
    state = "visible" if why.visible else "hidden"
    line = f"{why.record_id} at {why.anchor}: {state} ({why.reason})"
    if why.source:
        line += f"; source {why.source}"
    if why.fork:
        line += f", paths part at {why.fork}"
    return line


def show(value: Any, hint: Any, title: str) -> None:
    """Print ``value`` (of the API type ``hint``) for a person."""
    origin = typing.get_origin(hint)
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if value is None:
        done = hint is type(None) or hint is None
        out.print(f"{title}: done" if done else "(none)", markup=False)
    elif isinstance(value, Event):
        out.print(f"event {value.id} (tree {value.tree}, parent {value.parent})", markup=False)
    elif isinstance(value, Record):
        out.print(f"record {value.id} revision {value.revision}: {value.content}", markup=False)
    elif isinstance(value, Explanation):
        out.print(explanation_line(value), markup=False)
    elif isinstance(value, Receipt):
        out.print(receipt_line(value), markup=False)
    elif isinstance(value, ReceiptCheck):
        out.print(receipt_check_line(value), markup=False)
    elif isinstance(value, Diff):
        out.print(diff_line(value), markup=False)
    elif isinstance(value, Blame):
        out.print(blame_line(value), markup=False)
    elif isinstance(value, Context):
        out.print(value.text, markup=False)
        given = "" if value.delivery is None else f", delivery {value.delivery}"
        err.print(f"{value.tokens} tokens, {len(value.items)} records{given}", markup=False)
    elif origin in (list, set, frozenset) and args and args[0] is Hit:
        rows = make_table("score", "id", "content", "why", title=title)
        for hit in value:
            rows.add_row(f"{hit.score:.3f}", hit.record.id, hit.record.content, hit.why)
        out.print(rows)
    elif origin in (list, set, frozenset) and args and typing.get_origin(args[0]) is None:
        items = sorted(value) if isinstance(value, set | frozenset) else value
        table(items, args[0], title)
    elif origin is dict and args == [str, str]:
        rows = make_table("tree", "head", title=title)
        for key, item in sorted(value.items()):
            rows.add_row(key, item)
        out.print(rows)
    elif isinstance(value, str | int | float):
        out.print(str(value), markup=False)
    else:  # reports, histories: structured, so JSON is the readable form
        emit_json(value)
