"""Rows <-> engine values for the SQL backends (JSON for the structured columns).

Two columns of a revision are written short, because they are most of its bytes (schema 7,
``COMPACT_STORAGE``): ``refs`` as one code per source (``refs_text``) and ``gate`` as its
frontiers alone when nothing else is set (``gate_json``). The long forms written before are
still read, and ``refs_text`` falls back to the long form for a reference the codes cannot say.
"""

from __future__ import annotations

import json
import re
import struct
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from .._core.provenance import (
    EVENT,
    RECORD,
    UNKNOWN,
    Gate,
    RevisionNode,
    SourceRef,
    TreeFrontier,
    new_revision,
    parse_pin,
)
from .._core.retraction import RetractionNode
from .._core.topology import EventNode, new_event_node
from ..audit import AuditEntry
from ..errors import StorageError

EVENT_COLUMNS = (
    "id, parent, tree, explicit_tree, role, content, meta, ts, seq, attached, depth, jump, tokens"
)
REVISION_COLUMNS = (
    "record_id, revision, kind, content, sources, refs, key_name, key_scope, meta, seq, gate"
)


def dumps(value: Any) -> str:
    if not value and isinstance(value, dict):
        return "{}"  # most events carry no meta: skip the encoder
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def meta_text(meta: dict[str, Any]) -> str:
    """No meta (the usual case) as the empty text."""
    return dumps(meta) if meta else ""


def meta_value(text: str) -> dict[str, Any]:
    return dict(json.loads(text)) if text else {}


def event_row(node: EventNode) -> tuple[Any, ...]:
    # an attached event's jump pointer is its parent about half the time: then NULL (a
    # detached event has none, and an attached root points at itself)
    jump = None if node.attached and node.jump == node.parent else node.jump
    return (
        node.id, node.parent, node.tree, node.explicit_tree, node.role, node.content,
        meta_text(node.meta), node.ts, node.seq, int(node.attached), node.depth, jump,
        node.tokens,
    )  # fmt: skip


Row = tuple[Any, ...]
Value = TypeVar("Value")


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    maxsize: int
    currsize: int
    bytes: int


class DecodedRows(Generic[Value]):
    """Decoded values by row, least recently used first out, bounded by count and by bytes.

    Decoding is a pure function of the row, and the values are immutable, so equal rows can
    share one decoded value: a view re-reads the same revisions on every call. The bytes are
    an estimate (the row's text, kept twice: once in the key, once decoded, plus a fixed cost
    per entry), so a few long rows (summaries citing many sources) cannot hold hundreds of MB
    the way 100,000 entries of any size did.
    """

    ENTRY = 600  # the tuple, the node and its small objects, measured on chat-like rows

    def __init__(self, decode: Callable[[Row], Value], maxsize: int, max_bytes: int) -> None:
        self._decode = decode
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        self._rows: OrderedDict[Row, tuple[Value, int]] = OrderedDict()
        self._bytes = self.hits = self.misses = 0
        self.__name__ = decode.__name__

    def __call__(self, row: Row) -> Value:
        found = self._rows.get(row)
        if found is not None:
            self._rows.move_to_end(row)
            self.hits += 1
            return found[0]
        self.misses += 1
        value = self._decode(row)
        size = self.ENTRY + 2 * sum([len(item) for item in row if type(item) is str])
        self._rows[row] = (value, size)
        self._bytes += size
        while len(self._rows) > self.maxsize or self._bytes > self.max_bytes:
            _, (_, dropped) = self._rows.popitem(last=False)
            self._bytes -= dropped
        return value

    def cache_clear(self) -> None:
        self._rows.clear()
        self._bytes = self.hits = self.misses = 0

    def cache_info(self) -> CacheInfo:
        return CacheInfo(self.hits, self.misses, self.maxsize, len(self._rows), self._bytes)


def _event_node(row: Row) -> EventNode:
    attached = bool(row[9])
    return new_event_node(
        row[0], row[1], row[2], row[3], row[4], row[5], meta_value(row[6]), row[7],
        int(row[8]), attached, row[10], row[1] if row[11] is None and attached else row[11],
        row[12],
    )  # fmt: skip


event_node = DecodedRows(_event_node, maxsize=50_000, max_bytes=32 << 20)


def gate_json(gate: Gate, sources: Sequence[str] | None = None) -> str:
    """A gate with frontiers only (the usual case) as ``[[tree, event, depth(, conflict)]]``,
    the event as its place in ``sources`` when it is one of them (a fact's one source is
    its frontier); any other gate as the object written before schema 7."""
    places = {source: index for index, source in enumerate(sources or ())}
    if not (gate.detached or gate.unknown or gate.legacy):
        text = _frontiers_text(gate.frontiers, places)
        if text is not None:
            return text
    frontiers: list[list[Any]] = [
        [f.tree, places.get(f.event, f.event), f.depth]
        + ([] if f.conflict is None else [f.conflict])
        for f in gate.frontiers
    ]
    if gate.detached or gate.unknown or gate.legacy:
        return dumps(
            {
                "f": frontiers,
                "d": sorted(gate.detached),
                "u": sorted(gate.unknown),
                "l": gate.legacy,
            }
        )
    return dumps(frontiers)


# what ``json.dumps(..., ensure_ascii=False)`` escapes: text without it is written as it is
_ESCAPED = re.compile(r'[\x00-\x1f\\"]')


def _frontiers_text(frontiers: Sequence[TreeFrontier], places: dict[str, int]) -> str | None:
    """``dumps`` of a gate's frontiers list, built directly (every revision written encodes
    one); None when a name needs escaping, which ``dumps`` then does."""
    items: list[str] = []
    names: list[str] = []
    for f in frontiers:
        place = places.get(f.event)
        names.append(f.tree)
        if place is None:
            names.append(f.event)
            event = f'"{f.event}"'
        else:
            event = str(place)
        if f.conflict is None:
            items.append(f'["{f.tree}",{event},{f.depth}]')
        else:
            names.append(f.conflict)
            items.append(f'["{f.tree}",{event},{f.depth},"{f.conflict}"]')
    if _ESCAPED.search("".join(names)) is not None:
        return None
    return "[" + ",".join(items) + "]"


def sources_text(sources: Sequence[str]) -> str:
    """``dumps(list(sources))``, joined directly when no id needs escaping (the usual case)."""
    joined = '","'.join(sources)
    if not sources or _ESCAPED.search(joined) is not None:
        return dumps(list(sources))
    return f'["{joined}"]'


# the usual stored gate: one frontier, no conflict, its event a source's place or an id
_ONE_FRONTIER = re.compile(r'\[\["([^"\\]*)",(?:([0-9]+)|"([^"\\]*)"),([0-9]+)\]\]\Z')
_NO_NAMES: frozenset[str] = frozenset()


def gate_value(text: str, sources: Sequence[str] | None = None) -> Gate:
    one = _ONE_FRONTIER.match(text)
    if one is not None:  # decoded without the JSON parser: this runs per revision read
        tree, place, event, depth = one.groups()
        frontier = _frontier(sources, tree, event if place is None else int(place), int(depth))
        return Gate((frontier,), _NO_NAMES, _NO_NAMES, False)
    data = json.loads(text)
    if isinstance(data, list):
        return Gate(frontiers=tuple(_frontier(sources, *item) for item in data))
    return Gate(
        frontiers=tuple(_frontier(sources, *item) for item in data["f"]),
        detached=frozenset(data["d"]),
        unknown=frozenset(data["u"]),
        legacy=bool(data["l"]),
    )


def _frontier(
    sources: Sequence[str] | None,
    tree: str,
    event: str | int,
    depth: int,
    conflict: str | None = None,
) -> TreeFrontier:
    if isinstance(event, int):
        if sources is None or not 0 <= event < len(sources):
            raise StorageError(f"a stored gate names source {event} of {sources!r}")
        event = sources[event]
    return TreeFrontier(tree, event, int(depth), conflict)


# One code per source, in the order of ``sources``: e (an event), u (unknown), r<n> (record
# revision n, unpinned), p / q (a pin "id@n" resolved to a record / not yet). The empty text
# says every source is an event. Each code stands for the reference the resolver builds from
# that source's text, so nothing but the code needs storing.
_REF_CODES = re.compile(r"[eupq]|r[0-9]+")


def refs_text(sources: Sequence[str] | None, refs: Sequence[SourceRef] | None) -> str | None:
    if refs is None:
        return None
    if (
        sources is not None
        and len(sources) == len(refs)
        and all(
            ref.kind == EVENT
            and ref.text == text
            and ref.target == text
            and ref.revision is None
            and not ref.explicit_pin
            for text, ref in zip(sources, refs, strict=True)
        )
    ):
        return ""  # every source an event, each code "e" (the usual case), said at once
    codes = (
        [_ref_code(text, ref) for text, ref in zip(sources, refs, strict=True)]
        if sources is not None and len(sources) == len(refs)
        else [None]
    )
    if None in codes:  # not what the resolver builds: the long form
        return dumps([[r.text, r.kind, r.target, r.revision, r.explicit_pin] for r in refs])
    return "" if all(code == "e" for code in codes) else "".join(codes)  # type: ignore[arg-type]


def _ref_code(text: str, ref: SourceRef) -> str | None:
    if ref.text != text:
        return None
    if ref.explicit_pin:
        if parse_pin(text) != (ref.target, ref.revision):
            return None
        return {RECORD: "p", UNKNOWN: "q"}.get(ref.kind)
    if ref.target != text:
        return None
    if ref.kind == RECORD and ref.revision is not None:
        return f"r{ref.revision}"
    if ref.revision is None:
        return {EVENT: "e", UNKNOWN: "u"}.get(ref.kind)
    return None


def refs_value(sources: Sequence[str] | None, text: str | None) -> tuple[SourceRef, ...] | None:
    if text is None:
        return None
    if text.startswith("["):
        return tuple(SourceRef(t, k, g, r, bool(p)) for t, k, g, r, p in json.loads(text))
    if sources is None:
        raise StorageError(f"stored references {text!r} without sources")
    if not text:
        if len(sources) == 1:
            return (SourceRef(sources[0], EVENT, sources[0]),)
        return tuple([SourceRef(source, EVENT, source) for source in sources])
    codes = _REF_CODES.findall(text)
    if "".join(codes) != text or len(codes) != len(sources):
        raise StorageError(f"stored references {text!r} do not fit sources {list(sources)!r}")
    return tuple(_ref(source, code) for source, code in zip(sources, codes, strict=True))


def _ref(text: str, code: str) -> SourceRef:
    if code == "e":
        return SourceRef(text, EVENT, text)
    if code == "u":
        return SourceRef(text, UNKNOWN, text)
    if code[0] == "r":
        return SourceRef(text, RECORD, text, int(code[1:]))
    pin = parse_pin(text)
    if pin is None:
        raise StorageError(f"a stored pinned reference to {text!r} names no revision")
    return SourceRef(text, RECORD if code == "p" else UNKNOWN, pin[0], pin[1], True)


def revision_row(node: RevisionNode) -> tuple[Any, ...]:
    gate = node.gate
    return (
        node.record_id, node.revision, node.kind, node.content,
        None if node.sources is None else sources_text(node.sources),
        refs_text(node.sources, node.refs), node.key, node.scope, meta_text(node.meta),
        node.seq, gate_json(gate, node.sources), int(gate.legacy), int(bool(gate.unknown)),
        int(bool(gate.detached)), int(gate.consistent),
    )  # fmt: skip


def sources_value(text: str | None) -> tuple[str, ...] | None:
    """A revision's ``sources`` as written by ``dumps``: a JSON list of ids."""
    if text is None:
        return None
    if "\\" not in text and text.startswith('["') and text.endswith('"]'):
        # without a backslash no id holds a quote (``dumps`` escapes quotes, backslashes
        # and control characters, nothing else), so the ids are what lies between '","'
        return tuple(text[2:-2].split('","'))
    return tuple(json.loads(text))


def _revision_node(row: Row) -> RevisionNode:
    sources = sources_value(row[4])
    return new_revision(
        row[0], int(row[1]), row[2], row[3], sources, refs_value(sources, row[5]), row[6],
        row[7], meta_value(row[8]), int(row[9]), gate_value(row[10], sources),
    )  # fmt: skip


revision_node = DecodedRows(_revision_node, maxsize=200_000, max_bytes=64 << 20)


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
