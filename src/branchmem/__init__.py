"""branchmem: long-term memory that follows the branch the conversation is on.

A derived memory is visible only when every one of its source events lies on the ancestor
path of the current anchor.
"""

from .errors import (
    BranchmemError,
    ConflictError,
    CycleError,
    ErasedError,
    InvalidInput,
    NotFoundError,
)
from .memory import Memory
from .model import Event, Explanation, Record

__all__ = [
    "BranchmemError",
    "ConflictError",
    "CycleError",
    "ErasedError",
    "Event",
    "Explanation",
    "InvalidInput",
    "Memory",
    "NotFoundError",
    "Record",
]
__version__ = "0.1.0"
