"""Branch-aware long-term memory for LangGraph (``pip install branchmem[langgraph]``).

``BranchCheckpointer`` mirrors a thread's checkpoint tree into a ``Memory``;
``BranchStore`` is a LangGraph ``BaseStore`` whose reads and writes follow that tree, so a
memory written on a branch the thread left (fork, replay, ``update_state``) is not returned.
"""

from .checkpointer import BranchCheckpointer, UnsupportedSaver
from .store import ITEM_KIND, BranchStore, CheckpointNotMirrored, MissingAnchor, item_key

__all__ = [
    "ITEM_KIND",
    "BranchCheckpointer",
    "BranchStore",
    "CheckpointNotMirrored",
    "MissingAnchor",
    "UnsupportedSaver",
    "item_key",
]
