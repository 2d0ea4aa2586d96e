"""Make a real ``mem0.Memory`` branch-aware: ``BranchMem0(memory, store=Memory())``.

The wrapper itself does not import ``mem0`` (it drives whatever instance it is given);
``branchmem.integrations.mem0.offline`` does, and builds an offline Mem0 for tests and
branchbench. See docs/mem0.md.
"""

from branchmem.integrations.mem0.asynchronous import AsyncBranchMem0
from branchmem.integrations.mem0.wrapper import (
    DEFAULT_TREE,
    MEM0_KIND,
    SCOPE_CHANGE_KIND,
    AddOutcome,
    AmbiguousHead,
    BranchMem0,
    MemoryNotVisible,
    UnknownMemory,
    record_id_for,
)

__all__ = [
    "DEFAULT_TREE",
    "MEM0_KIND",
    "SCOPE_CHANGE_KIND",
    "AddOutcome",
    "AmbiguousHead",
    "AsyncBranchMem0",
    "BranchMem0",
    "MemoryNotVisible",
    "UnknownMemory",
    "record_id_for",
]
