"""Supersede and retract as gated records (SPEC §5): the data the rules act on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

BRANCH: Final = "branch"
TREE: Final = "tree"
RETRACTION_SCOPES: Final = (BRANCH, TREE)


@dataclass(frozen=True, slots=True)
class RetractionNode:
    """What a retraction record retracts, and where it acts.

    A branch-scope retraction acts only in views where its own record is visible and hides
    what was stated at or above it on the path; a tree-scope retraction acts in every view
    of the namespace and hides what was written (by arrival) before it.
    """

    id: str
    scope: str
    targets: tuple[str, ...]
    key: str | None
    key_scope: str | None
    seq: int

    def covers(self, record_id: str, key: str | None, scope: str | None) -> bool:
        if record_id in self.targets:
            return True
        return self.key is not None and key == self.key and scope == self.key_scope
