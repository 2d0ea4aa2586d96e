"""Branch-aware long-term memory for LangGraph (``pip install branchmem[langgraph]``).

``BranchCheckpointer`` mirrors a thread's checkpoint tree into a ``Memory``;
``BranchStore`` is a LangGraph ``BaseStore`` whose reads and writes follow that tree, so a
memory written on a branch the thread left (fork, replay, ``update_state``) is not returned.

Without the extra, importing this package raises ``MissingExtra`` (an ``ImportError``) that
names the install command, not a bare ``ModuleNotFoundError`` from deep inside it.
"""

from importlib import import_module

from ...errors import MissingExtra

try:  # the extra's packages, checked before the modules below import from deep inside them
    for _needed in ("langchain_core.runnables", "langgraph.checkpoint.base", "langgraph.store"):
        import_module(_needed)
except ImportError as missing:
    raise MissingExtra("branchmem.integrations.langgraph", "langgraph", missing.name) from missing

from .checkpointer import BranchCheckpointer, UnsupportedSaver
from .store import (
    ITEM_KIND,
    AsyncBranchStore,
    BranchStore,
    CheckpointNotMirrored,
    GatedStore,
    MissingAnchor,
    item_key,
)

__all__ = [
    "ITEM_KIND",
    "AsyncBranchStore",
    "BranchCheckpointer",
    "BranchStore",
    "CheckpointNotMirrored",
    "GatedStore",
    "MissingAnchor",
    "UnsupportedSaver",
    "item_key",
]
