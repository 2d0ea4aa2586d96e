"""Where a service keeps its API keys: a small interface beside ``Store``, not part of it.

The engine never reads keys; only the HTTP service does (``branchmem.server.keys``). A key is
namespace-free (it names the namespaces it may use), so these methods take no namespace.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ApiKeyRow", "ApiKeys", "KeyStore"]


@dataclass(frozen=True, slots=True)
class ApiKeyRow:
    """A stored key: the hash of its secret, never the secret."""

    key_id: str
    secret_hash: str
    tenant: str
    namespaces: tuple[str, ...]
    created: float


class KeyStore(ABC):
    """API keys, with an insert that is atomic with the caller's check of the existing keys."""

    @abstractmethod
    def add_api_key(self, row: ApiKeyRow, admit: Callable[[list[ApiKeyRow]], None]) -> None:
        """Insert ``row`` if ``admit(every stored key)`` returns; ``admit`` raises to refuse.

        The check and the insert are one step against every other process creating a key
        (two tenants racing for ``race/*`` cannot both win). A duplicate ``key_id`` is a
        ``ConflictError``.
        """

    @abstractmethod
    def get_api_key(self, key_id: str) -> ApiKeyRow | None: ...

    @abstractmethod
    def list_api_keys(self) -> list[ApiKeyRow]:
        """Every key, oldest first."""

    @abstractmethod
    def delete_api_key(self, key_id: str) -> bool:
        """Remove a key; False when there was none."""


class ApiKeys:
    """The store's API keys for the service, one caller at a time (the Memory's lock): the
    only way the server reaches them (``Memory.api_keys``), so it never holds a store."""

    def __init__(self, keys: KeyStore, lock: threading.RLock) -> None:
        self._keys = keys
        self._lock = lock

    def add(self, row: ApiKeyRow, admit: Callable[[list[ApiKeyRow]], None]) -> None:
        """Insert ``row`` if ``admit(every stored key)`` returns (one step; see KeyStore)."""
        with self._lock:
            self._keys.add_api_key(row, admit)

    def get(self, key_id: str) -> ApiKeyRow | None:
        with self._lock:
            return self._keys.get_api_key(key_id)

    def list(self) -> list[ApiKeyRow]:
        """Every key, oldest first."""
        with self._lock:
            return self._keys.list_api_keys()

    def delete(self, key_id: str) -> bool:
        """Remove a key; False when there was none."""
        with self._lock:
            return self._keys.delete_api_key(key_id)
