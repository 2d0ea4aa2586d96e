"""What the engine's tables share in SQL: statement texts more than one of them sends."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .._core.provenance import RevisionNode
from . import codec


def by_id(nodes: Iterable[RevisionNode]) -> list[RevisionNode]:
    """Revisions by (record id, revision), sorted in Python: a database collation may order
    text differently."""
    return sorted(nodes, key=lambda n: (n.record_id, n.revision))


# statement texts more than one table sends (ungated: revisions and answers; key
# candidates: keyed and answers; retraction columns: relations, keyed and answers)
UNGATED = (
    f"SELECT {', '.join('r.' + c for c in codec.REVISION_COLUMNS.split(', '))} "
    "FROM ungated x JOIN revisions r ON r.namespace = x.namespace "
    "AND r.record_id = x.record_id AND r.revision = x.revision WHERE x.namespace = ?"
)

KEY_CANDIDATES = (
    f"SELECT {', '.join('r.' + c for c in codec.REVISION_COLUMNS.split(', '))}, k.depth "
    "FROM key_frontiers k JOIN revisions r ON r.namespace = k.namespace "
    "AND r.record_id = k.record_id AND r.revision = k.revision "
    "WHERE k.namespace = ? AND k.key_name = ? "
)

RETRACTION_COLUMNS = "id, scope, targets, key_name, key_scope, seq"


def supersedes_pairs(
    asked: str, namespace: str, ids: Sequence[str], marks: str
) -> tuple[str, tuple[Any, ...]]:
    """The statement for one chunk of ``ids`` of the ``supersedes`` column ``asked``
    (``old_id``: what supersedes them; ``new_id``: what they supersede): (asked, other)
    pairs in seq order (relations, answers)."""
    other = "new_id" if asked == "old_id" else "old_id"
    return (
        f"SELECT {asked}, {other} FROM supersedes WHERE namespace = ? "
        f"AND {asked} IN ({marks}) ORDER BY seq",
        (namespace, *ids),
    )
