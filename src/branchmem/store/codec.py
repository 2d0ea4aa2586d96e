"""Rows <-> engine values for the SQL backends (JSON for the structured columns)."""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..audit import AuditEntry
from ..provenance import Gate, RevisionNode, SourceRef, TreeFrontier
from ..retraction import RetractionNode
from ..topology import EventNode

EVENT_COLUMNS = (
    "id, parent, tree, explicit_tree, role, content, meta, ts, seq, attached, depth, jump"
)
REVISION_COLUMNS = (
    "record_id, revision, kind, content, sources, refs, key_name, key_scope, meta, seq, gate"
)


def dumps(value: Any) -> str:
    if not value and isinstance(value, dict):
        return "{}"  # most events carry no meta: skip the encoder
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def event_row(node: EventNode) -> tuple[Any, ...]:
    return (
        node.id, node.parent, node.tree, node.explicit_tree, node.role, node.content,
        dumps(node.meta), node.ts, node.seq, int(node.attached), node.depth, node.jump,
    )  # fmt: skip


# Decoding is a pure function of the row, and the values are immutable, so equal rows can
# share one decoded value: a view re-reads the same revisions on every call.
@lru_cache(maxsize=100_000)
def event_node(row: tuple[Any, ...]) -> EventNode:
    return EventNode(
        id=row[0], parent=row[1], tree=row[2], explicit_tree=row[3], role=row[4],
        content=row[5], meta=json.loads(row[6]), ts=row[7], seq=int(row[8]),
        attached=bool(row[9]), depth=row[10], jump=row[11],
    )  # fmt: skip


def gate_json(gate: Gate) -> str:
    return dumps(
        {
            "f": [[f.tree, f.event, f.depth, f.conflict] for f in gate.frontiers],
            "d": sorted(gate.detached),
            "u": sorted(gate.unknown),
            "l": gate.legacy,
        }
    )


def gate_value(text: str) -> Gate:
    data = json.loads(text)
    return Gate(
        frontiers=tuple(TreeFrontier(t, e, int(d), c) for t, e, d, c in data["f"]),
        detached=frozenset(data["d"]),
        unknown=frozenset(data["u"]),
        legacy=bool(data["l"]),
    )


def revision_row(node: RevisionNode) -> tuple[Any, ...]:
    refs = (
        None
        if node.refs is None
        else dumps([[r.text, r.kind, r.target, r.revision, r.explicit_pin] for r in node.refs])
    )
    gate = node.gate
    return (
        node.record_id, node.revision, node.kind, node.content,
        None if node.sources is None else dumps(list(node.sources)), refs, node.key,
        node.scope, dumps(node.meta), node.seq, gate_json(gate), int(gate.legacy),
        int(bool(gate.unknown)), int(bool(gate.detached)), int(gate.consistent),
    )  # fmt: skip


@lru_cache(maxsize=100_000)
def revision_node(row: tuple[Any, ...]) -> RevisionNode:
    refs = (
        None
        if row[5] is None
        else tuple(SourceRef(t, k, g, r, bool(p)) for t, k, g, r, p in json.loads(row[5]))
    )
    return RevisionNode(
        record_id=row[0], revision=int(row[1]), kind=row[2], content=row[3],
        sources=None if row[4] is None else tuple(json.loads(row[4])), refs=refs,
        key=row[6], scope=row[7], meta=json.loads(row[8]), seq=int(row[9]),
        gate=gate_value(row[10]),
    )  # fmt: skip


def retraction_node(row: tuple[Any, ...]) -> RetractionNode:
    return RetractionNode(
        id=row[0], scope=row[1], targets=tuple(json.loads(row[2])), key=row[3],
        key_scope=row[4], seq=int(row[5]),
    )  # fmt: skip


def audit_entry(namespace: str, row: tuple[Any, ...]) -> AuditEntry:
    return AuditEntry(
        seq=int(row[0]), time=float(row[1]), namespace=namespace, op=row[2],
        ids=tuple(json.loads(row[3])), actor=row[4], reason=row[5], revision=row[6],
    )  # fmt: skip


def loads(text: str) -> Any:
    return json.loads(text)


def pack_vector(vector: Sequence[float]) -> bytes:
    """Little-endian float64: stored vectors give the same cosines as the embedder's output."""
    return struct.pack(f"<{len(vector)}d", *vector)


def unpack_vector(blob: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(blob) // 8}d", blob))


def forget() -> None:
    """Drop decoded rows: after an erasure no erased text may stay in this process's caches."""
    event_node.cache_clear()
    revision_node.cache_clear()
