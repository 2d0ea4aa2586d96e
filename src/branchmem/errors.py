"""One exception tree for the whole library, and the registry of its problem codes.

Every backend converts its driver errors into these in one place, so callers never see a
``sqlite3`` or ``psycopg`` exception. Each class declares, once, a stable ``code`` (the HTTP
API's and the CLI's reason code) and the HTTP ``status`` the service answers it with; a
subclass that declares neither inherits both. ``PROBLEMS`` maps every code declared in this
module to its class: the service's problem statuses (``server/problems.py``) and the
client's decoding (``branchmem.Client``) are both read from it, so they cannot disagree.

A class declaring a code that another, unrelated class already holds fails at import time;
a class may restate an ancestor's code (``ImportTooLarge`` is the ``too_large`` problem).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import MappingProxyType
from typing import ClassVar, Final, Protocol

# code -> the class that first declared it, in declaration order (see ``__init_subclass__``)
_DECLARED: dict[str, type[BranchmemError]] = {}


class BranchmemError(Exception):
    """Base of every error branchmem raises on purpose."""

    code: ClassVar[str] = "error"
    status: ClassVar[int] = 400

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "code" not in cls.__dict__:
            return  # inherits its base's code: the same problem
        held = _DECLARED.get(cls.code)
        if held is None:
            _DECLARED[cls.code] = cls
        elif not issubclass(cls, held):
            raise TypeError(
                f"{cls.__module__}.{cls.__qualname__} declares code {cls.code!r}, "
                f"already held by {held.__module__}.{held.__qualname__}"
            )

    @classmethod
    def from_problem(cls, detail: str) -> BranchmemError:
        """The error a client re-raises for a problem under this class's code: the message is
        the problem's ``detail``; a subclass with a richer constructor fills its fields."""
        error = cls.__new__(cls)
        Exception.__init__(error, detail)
        return error


_DECLARED[BranchmemError.code] = BranchmemError


class InvalidInput(BranchmemError, ValueError):
    """An argument is malformed: wrong type, empty id, unknown option."""

    code = "invalid_input"
    status = 422


class Malformed(InvalidInput):
    """The request is not readable at all: its body is not JSON, its path not ASCII."""

    code = "malformed"
    status = 400


class NotFoundError(BranchmemError, KeyError):
    """A named event or record does not exist in the namespace."""

    code = "not_found"
    status = 404

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ConflictError(BranchmemError):
    """A write contradicts what the store already holds (same id, different content)."""

    code = "conflict"
    status = 409


class CycleError(BranchmemError):
    """A parent link or a record source would close a cycle."""

    code = "cycle"
    status = 409


class ErasedError(BranchmemError):
    """The target was erased; only its tombstone remains."""

    code = "erased"
    status = 410


class StorageError(BranchmemError):
    """The backend failed (I/O, locking, schema version)."""

    code = "storage"
    status = 503


class SchemaVersionError(StorageError):
    """The store was written by a newer branchmem, or needs `branchmem migrate`."""

    code = "schema_version"


class EmbedderUnavailable(BranchmemError):
    """The embedder's model or package is not installed."""

    code = "embedder_unavailable"
    status = 501


class MissingExtra(BranchmemError, ImportError):
    """An optional part of branchmem needs a package that is not installed.

    The message names the exact install command, e.g. ``pip install "branchmem[client]"``.
    """

    code = "missing_extra"
    status = 501

    def __init__(self, feature: str, extra: str, missing: str | None = None) -> None:
        needs = f"{feature} needs {missing!r}, which is not installed" if missing else feature
        super().__init__(f'{needs}: pip install "branchmem[{extra}]"')
        self.extra = extra

    @classmethod
    def from_problem(cls, detail: str) -> BranchmemError:
        error = cls.__new__(cls)
        Exception.__init__(error, detail)
        named = re.search(r"branchmem\[(\w+)\]", detail)
        error.extra = named.group(1) if named else ""
        return error


# -- the service's own refusals (what only branchmem.Client raises) ----------------------
class ServiceError(BranchmemError):
    """The service refused or failed a request for a reason of its own."""

    code = "internal"
    status = 500


class Unauthorized(ServiceError):
    """No API key, or one the service does not know."""

    code = "unauthorized"
    status = 401


class Forbidden(ServiceError):
    """The API key is not bound to the namespace asked for."""

    code = "forbidden"
    status = 403


class MethodNotAllowed(ServiceError):
    """The path exists but does not take this HTTP method."""

    code = "method_not_allowed"
    status = 405


class UnsupportedMediaType(ServiceError):
    """The request body is not ``application/json``."""

    code = "unsupported_media_type"
    status = 415


class NotImplementedByService(ServiceError):
    """The service runs a branchmem without this operation (an older worker)."""

    code = "not_implemented"
    status = 501


class Unavailable(ServiceError):
    """No worker could be reached (every URL was tried)."""

    code = "unavailable"
    status = 503


class TooLarge(InvalidInput):
    """The request is over the service's size limits."""

    code = "too_large"
    status = 413


# -- importers ---------------------------------------------------------------------------
class ImportTally(Protocol):
    """What an import wrote before it stopped (``branchmem.importers.ImportSummary``)."""

    @property
    def imported(self) -> int: ...

    @property
    def events_added(self) -> int: ...

    @property
    def failed(self) -> int: ...


class ImportFormatError(InvalidInput):
    """An export does not follow its format; names the conversation and the JSON path.

    ``conversation`` is the conversation's id or title when known (else its position),
    ``path`` a JSON path such as ``$[3].mapping["ab12"].parent``.
    """

    code = "import_format"

    def __init__(self, message: str, *, conversation: str | None = None, path: str = "$") -> None:
        self.conversation = conversation
        self.path = path
        self.reason = message
        where = f"conversation {conversation}, " if conversation else ""
        super().__init__(f"{where}at {path}: {message}")

    @classmethod
    def from_problem(cls, detail: str) -> BranchmemError:
        error = cls.__new__(cls)
        Exception.__init__(error, detail)  # the detail already names where it broke
        error.conversation, error.path, error.reason = None, "$", detail
        return error


class ImportTooLarge(ImportFormatError, TooLarge):
    """An export is over one of the ``ImportLimits``: refused before memory grows.

    ``limit`` names the ``ImportLimits`` field and ``allowed`` its value, so a caller that
    trusts the file can raise exactly that one. The service answers it with 413.
    """

    code = "too_large"
    status = 413

    def __init__(
        self,
        message: str,
        *,
        limit: str,
        allowed: int,
        conversation: str | None = None,
        path: str = "$",
    ) -> None:
        self.limit = limit
        self.allowed = allowed
        self.summary: ImportTally | None = None
        super().__init__(message, conversation=conversation, path=path)

    def stopped_after(self, summary: ImportTally) -> ImportTooLarge:
        """This refusal, saying what the import wrote before it; ``summary`` attached."""
        error = ImportTooLarge(
            f"{self.reason}; the import stopped there, after {summary.imported} "
            f"conversations imported ({summary.events_added} events) and {summary.failed} "
            "failed",
            limit=self.limit,
            allowed=self.allowed,
            conversation=self.conversation,
            path=self.path,
        )
        error.summary = summary
        return error


# -- the integrations' own problems (their modules re-export them) -----------------------
class MemoryNotVisible(NotFoundError, ValueError):
    """The Mem0 memory does not exist, or is not visible where the call stands. A
    ``ValueError`` too, as mem0 raises for an unknown memory id."""

    code = "memory_not_visible"
    status = 404


class UnknownMemory(NotFoundError, ValueError):
    """``history`` of a memory the Mem0 wrapper never wrote: no rows to tell, and an empty
    list would read as "never changed". A ``ValueError`` too, as Mem0 raises for unknown
    ids."""

    code = "memory_unknown"
    status = 404


class AmbiguousHead(InvalidInput):
    """A Mem0 call gave no anchor and the conversation it follows has no head to stand at:
    no head was set and the tree has several leaves (a fork). Strict mode refuses rather
    than guess which branch the conversation is on; ``tree`` and ``candidates`` (the
    leaves, oldest first) say where to choose."""

    code = "ambiguous_head"
    status = 422

    def __init__(self, tree: str, candidates: Sequence[str]) -> None:
        self.tree = tree
        self.candidates = tuple(candidates)
        super().__init__(
            f"conversation {tree!r} has no head and {len(self.candidates)} leaves "
            f"{list(self.candidates)}: pass anchor=, bind one with at(anchor), or "
            f"store.set_head(<one of them>)"
        )

    @classmethod
    def from_problem(cls, detail: str) -> BranchmemError:
        error = cls.__new__(cls)
        Exception.__init__(error, detail)  # the detail names the tree and its leaves
        error.tree, error.candidates = "", ()
        return error


class UnsupportedSaver(InvalidInput):
    """The LangGraph saver cannot give a checkpoint tree (it keeps only the latest
    checkpoint)."""

    code = "unsupported_saver"
    status = 422


class MissingAnchor(InvalidInput):
    """A LangGraph store write has no checkpoint to be sourced at, and strict mode refuses
    legacy records."""

    code = "missing_anchor"
    status = 422


class CheckpointNotMirrored(BranchmemError):
    """The running LangGraph step's input checkpoint never reached the Memory."""

    code = "checkpoint_not_mirrored"
    status = 409


# -- warnings ----------------------------------------------------------------------------
class CleanupPending(UserWarning):
    """An erase committed (its text is gone from every table) but erased bytes may remain in
    the store's files until ``Memory.finish_cleanup()`` succeeds, e.g. while another process
    holds a read transaction on SQLite's write-ahead log."""


# every problem code of the library -> its class; built from the classes above, read-only
PROBLEMS: Final = MappingProxyType(dict(_DECLARED))


def problem_class(code: str) -> type[BranchmemError]:
    """The class a client raises for a problem ``code``; an unknown code (a newer service)
    is a ``ServiceError``."""
    return PROBLEMS.get(code, ServiceError)


def require(module: str, feature: str, extra: str) -> None:
    """Import ``module`` or raise ``MissingExtra`` naming the extra that brings it."""
    from importlib import import_module

    try:
        import_module(module)
    except ImportError as error:
        raise MissingExtra(feature, extra, error.name or module) from error
