"""branchmem: long-term memory that follows the branch the conversation is on.

A derived memory is visible only when every one of its source events lies on the ancestor
path of the current anchor.
"""

from typing import TYPE_CHECKING

from .errors import (
    BranchmemError,
    ConflictError,
    CycleError,
    ErasedError,
    InvalidInput,
    NotFoundError,
)
from .memory import Memory
from .model import (
    Blame,
    BlamedLine,
    BlamedMessage,
    Citation,
    Conversation,
    Delivery,
    Diff,
    DiffEntry,
    Event,
    Explanation,
    Hit,
    KeyChange,
    Record,
    RepairItem,
    RepairResult,
    RepairView,
    StaleDelivery,
)
from .search.context import Context

if TYPE_CHECKING:  # imported on first use at run time (``__getattr__``); typed here
    from .async_client import AsyncClient
    from .async_memory import AsyncMemory

__all__ = [
    "AsyncClient",
    "AsyncMemory",
    "Blame",
    "BlamedLine",
    "BlamedMessage",
    "BranchmemError",
    "Citation",
    "Client",
    "ConflictError",
    "Context",
    "Conversation",
    "CycleError",
    "Delivery",
    "Diff",
    "DiffEntry",
    "ErasedError",
    "Event",
    "Explanation",
    "Hit",
    "InvalidInput",
    "KeyChange",
    "Memory",
    "NotFoundError",
    "Record",
    "RepairItem",
    "RepairResult",
    "RepairView",
    "StaleDelivery",
]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("branchmem")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


__version__ = _version()


def __getattr__(name: str) -> object:
    """``branchmem.Client`` and ``AsyncClient`` need httpx (the ``client`` extra), and
    ``AsyncMemory`` brings in asyncio: each is imported on first use."""
    if name == "Client":
        from .client import Client

        return Client
    if name == "AsyncClient":
        from .async_client import AsyncClient

        return AsyncClient
    if name == "AsyncMemory":
        from .async_memory import AsyncMemory

        return AsyncMemory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
