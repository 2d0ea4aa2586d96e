"""The API's one definition: the ``MemoryAPI`` protocol, its operation table, the codec."""

from .protocol import MemoryAPI

__all__ = ["MemoryAPI"]
