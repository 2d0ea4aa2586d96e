"""One exception tree for the whole library.

Every backend converts its driver errors into these in one place, so callers never see a
``sqlite3`` or ``psycopg`` exception. Each class carries a stable ``code`` that the HTTP API
and CLI reuse as their reason code.
"""

from __future__ import annotations


class BranchmemError(Exception):
    """Base of every error branchmem raises on purpose."""

    code = "error"


class InvalidInput(BranchmemError, ValueError):
    """An argument is malformed: wrong type, empty id, unknown option."""

    code = "invalid_input"


class NotFoundError(BranchmemError, KeyError):
    """A named event or record does not exist in the namespace."""

    code = "not_found"

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ConflictError(BranchmemError):
    """A write contradicts what the store already holds (same id, different content)."""

    code = "conflict"


class CycleError(BranchmemError):
    """A parent link or a record source would close a cycle."""

    code = "cycle"


class ErasedError(BranchmemError):
    """The target was erased; only its tombstone remains."""

    code = "erased"


class StorageError(BranchmemError):
    """The backend failed (I/O, locking, schema version)."""

    code = "storage"


class SchemaVersionError(StorageError):
    """The store was written by a newer branchmem, or needs `branchmem migrate`."""

    code = "schema_version"


# -- what only the service (branchmem.Client) raises -------------------------------------
class ServiceError(BranchmemError):
    """The service refused or failed a request for a reason of its own."""

    code = "internal"


class Unauthorized(ServiceError):
    """No API key, or one the service does not know."""

    code = "unauthorized"


class Forbidden(ServiceError):
    """The API key is not bound to the namespace asked for."""

    code = "forbidden"


class TooLarge(InvalidInput):
    """The request is over the service's size limits."""

    code = "too_large"


class Unavailable(ServiceError):
    """No worker could be reached (every URL was tried)."""

    code = "unavailable"


class MissingExtra(BranchmemError, ImportError):
    """An optional part of branchmem needs a package that is not installed.

    The message names the exact install command, e.g. ``pip install "branchmem[client]"``.
    """

    code = "missing_extra"

    def __init__(self, feature: str, extra: str, missing: str | None = None) -> None:
        needs = f"{feature} needs {missing!r}, which is not installed" if missing else feature
        super().__init__(f'{needs}: pip install "branchmem[{extra}]"')
        self.extra = extra


def require(module: str, feature: str, extra: str) -> None:
    """Import ``module`` or raise ``MissingExtra`` naming the extra that brings it."""
    from importlib import import_module

    try:
        import_module(module)
    except ImportError as error:
        raise MissingExtra(feature, extra, error.name or module) from error
