"""A LangGraph item as a branchmem record: its key, its encoded value, and back."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Final

from langgraph.store.base import InvalidNamespaceError, Item, PutOp

from ...errors import InvalidInput
from ...model import Record

ITEM_KIND: Final = "langgraph.item"


@dataclass(slots=True)
class Found:
    """A visible item with the record revision that holds it."""

    item: Item
    record: Record
    words: str | None = None  # the value's text for BM25, once a query asked for it

    @property
    def text(self) -> str:
        if self.words is None:
            self.words = text_of(self.item.value)
        return self.words

    @property
    def record_id(self) -> str:
        return self.record.id

    @property
    def revision(self) -> int:
        return self.record.revision

    @property
    def index(self) -> object:
        """The put's ``index`` argument: None (config fields), False, or paths."""
        return self.record.meta.get("index")


def item_key(namespace: Sequence[str], key: str) -> str:
    """The record key an item's (namespace, key) competes under: one per store slot."""
    return "langgraph:" + json.dumps([*namespace, key], ensure_ascii=False)


def key_prefix(prefix: Sequence[str]) -> str:
    """What every ``item_key`` under the namespace ``prefix`` starts with."""
    if not prefix:
        return "langgraph:["
    return "langgraph:" + json.dumps(list(prefix), ensure_ascii=False)[:-1] + ", "


def check_labels(namespace: tuple[str, ...]) -> None:
    """Refuse the namespace labels ``BaseStore`` refuses (strings, not empty, no period
    or NUL), for the calls that do not go through its wrappers."""
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"namespace {namespace!r}: label {label!r} is a {type(label).__name__}, "
                "not a string"
            )
        if not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"namespace {namespace!r}: label {label!r} is empty or holds a period or NUL"
            )


def check_put(op: PutOp) -> None:
    """Refuse what LangGraph's stores refuse, before anything of the batch is written."""
    where = f"put {op.namespace!r}/{op.key!r}"
    if not op.namespace:  # the rest is checked by BaseStore.put, as LangGraph's stores do
        raise InvalidNamespaceError(f"{where}: namespace cannot be empty")
    if op.value is not None and not isinstance(op.value, dict):
        raise InvalidInput(f"{where}: value must be a dict, got {type(op.value).__name__}")


def _json_default(value: object) -> str:
    """Like SqliteStore and PostgresStore: datetimes as ISO 8601, UUIDs as strings."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(type(value).__name__)


def encode(namespace: tuple[str, ...], key: str, value: Mapping[str, Any]) -> str:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(
            f"put {namespace!r}/{key!r}: value is not JSON-serializable ({exc})"
        ) from None


def item_spec(
    op: PutOp,
    sources: list[str] | None,
    previous: Record | None,
    default_ttl: float | None,
    now: float,
) -> dict[str, Any]:
    """The ``add_records`` item of a put (its value not None): ``previous``, the revision
    it replaces, keeps the item's ``created_at``; ``default_ttl``, the store's, applies
    when the put gives none; an expiry counts from ``now`` (epoch seconds, the store's
    clock)."""
    assert op.value is not None
    stamp = datetime.now(UTC).isoformat()
    created = previous.meta.get("created_at") if previous is not None else None
    meta: dict[str, Any] = {
        "namespace": list(op.namespace),
        "key": op.key,
        "created_at": created if isinstance(created, str) else stamp,
        "updated_at": stamp,
    }
    if op.index is not None:
        meta["index"] = op.index if op.index is False else list(op.index)
    ttl = op.ttl if op.ttl is not None else default_ttl
    if ttl is not None:
        meta["ttl_minutes"] = float(ttl)
        meta["expires_at"] = now + 60.0 * float(ttl)
    return {
        "id": f"lg-item:{uuid.uuid4().hex}",
        "sources": sources,
        "content": encode(op.namespace, op.key, op.value),
        "kind": ITEM_KIND,
        "key": item_key(op.namespace, op.key),
        "meta": meta,
    }


def item_of(record: Record) -> Item | None:
    """The Item a record revision holds; None if its content was erased."""
    meta = record.meta
    try:
        value = json.loads(record.content)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    return Item(
        value=value,
        key=str(meta["key"]),
        namespace=tuple(meta["namespace"]),
        created_at=datetime.fromisoformat(meta["created_at"]),
        updated_at=datetime.fromisoformat(meta["updated_at"]),
    )


def newest_first(found: list[Found]) -> list[Found]:
    """LangGraph's search order when no query ranks: the latest update first."""
    found.sort(key=lambda f: (f.item.updated_at, f.item.namespace, f.item.key), reverse=True)
    return found


def text_of(value: Any) -> str:
    if isinstance(value, Mapping):
        return " ".join(text_of(v) for v in value.values())
    if isinstance(value, list | tuple):
        return " ".join(text_of(v) for v in value)
    return "" if value is None else str(value)
