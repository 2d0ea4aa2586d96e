"""What the Mem0 wrapper observes and returns: outcomes, ids, and the tap on Mem0's LLM.

Split from ``wrapper`` so that the class there reads as Mem0's API and nothing else.
"""

from __future__ import annotations

import asyncio
import enum
import hashlib
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

from branchmem.errors import (
    AmbiguousHead as AmbiguousHead,
)  # declared in errors; kept importable here
from branchmem.errors import MemoryNotVisible as MemoryNotVisible
from branchmem.errors import UnknownMemory as UnknownMemory

IDENTITY_KEYS = ("user_id", "agent_id", "run_id")
MEM0_KIND = "mem0_memory"  # the kind of the record mirroring a Mem0 memory
SCOPE_CHANGE_KIND = "mem0_scope_change"  # a 1.x NONE that moved a memory's agent/run


class Unset(enum.Enum):
    UNSET = "unset"


UNSET: Final = Unset.UNSET  # "not given here": fall back to the bound anchor


def record_id_for(memory_id: str) -> str:
    """The branchmem record id mirroring a Mem0 memory (prefixed: one id space per namespace
    holds events and records, and Mem0's UUIDs must not collide with event ids)."""
    return f"mem0:{memory_id}"


def deletion_id(memory_id: str) -> str:
    return f"mem0:{memory_id}:delete"


@dataclass
class AddOutcome:
    """What one ``add`` call wrote to the branchmem store, by Mem0 memory id."""

    anchor: str
    added: list[str] = field(default_factory=list)
    revised: list[str] = field(default_factory=list)
    retracted: list[str] = field(default_factory=list)
    attested: list[str] = field(default_factory=list)
    scope_changes: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON form, put under the ``"branchmem"`` key of Mem0's add result."""
        return {
            "anchor": self.anchor,
            "added": list(self.added),
            "revised": list(self.revised),
            "retracted": list(self.retracted),
            "attested": list(self.attested),
            "scope_changes": list(self.scope_changes),
            "unknown": list(self.unknown),
        }


@dataclass
class Observed:
    """What Mem0's pipeline looked at during one add: the fact texts the LLM extracted and
    the stored memories its neighbour search returned (id -> payload, before any change)."""

    extracted: list[str] = field(default_factory=list)
    neighbours: dict[str, dict[str, Any]] = field(default_factory=dict)


@contextmanager
def tap(target: Any, name: str, observe: Callable[[Any], None]) -> Iterator[None]:
    """Shadow ``target.name`` with a pass-through that hands each return value to
    ``observe``; the instance attribute is removed (or restored) afterwards."""
    had_own = name in vars(target)
    own = vars(target).get(name)
    original = getattr(target, name)

    def passthrough(*args: Any, **kwargs: Any) -> Any:
        value = original(*args, **kwargs)
        observe(value)
        return value

    setattr(target, name, passthrough)
    try:
        yield
    finally:
        if had_own:
            setattr(target, name, own)
        else:
            delattr(target, name)
            if not hasattr(target, name):
                # a Mock keeps its children outside ``__dict__`` and takes a delattr as
                # "this attribute is gone": put the original back instead
                setattr(target, name, original)


def extracted_texts(response: Any) -> list[str]:
    """Fact texts in an extraction answer: 1.x ``{"facts": [...]}``, 2.x ``{"memory":
    [{"text": ...}]}``. 1.x update decisions (items with an ``event``) are not facts."""
    if not isinstance(response, str):
        return []
    text = response.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        parsed = json.loads(text, strict=False)
    except json.JSONDecodeError:
        return []
    if not isinstance(parsed, dict):
        return []
    out: list[str] = []
    for fact in parsed.get("facts") or []:
        if isinstance(fact, str):
            out.append(fact)
        elif isinstance(fact, dict) and isinstance(fact.get("fact") or fact.get("text"), str):
            out.append(str(fact.get("fact") or fact.get("text")))
    for item in parsed.get("memory") or []:
        if isinstance(item, dict) and "event" not in item and isinstance(item.get("text"), str):
            out.append(item["text"])
    return out


# The event loop an AsyncBranchMem0 call came from (to run an AsyncMemory's coroutines).
CALLER_LOOP: ContextVar[asyncio.AbstractEventLoop] = ContextVar("branchmem_mem0_loop")


async def awaited(awaitable: Any) -> Any:
    return await awaitable


def read_identity(
    filters: Mapping[str, Any] | None,
    user_id: str | None,
    agent_id: str | None,
    run_id: str | None,
) -> dict[str, str | None]:
    """The user/agent/run a read is scoped to: top-level (1.0.x) or inside ``filters``."""
    given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    for key in IDENTITY_KEYS:
        value = (filters or {}).get(key)
        if given[key] is None and isinstance(value, str):
            given[key] = value
    return given


def not_found_message(memory_id: str, anchor: str | None) -> str:
    """Mem0's wording for an unknown id, and where the wrapper looked."""
    return f"Memory with id {memory_id} not found (not visible at {anchor!r})"


def is_memory_record(record_id: str) -> bool:
    """``mem0:<memory id>``, not a deletion, retraction or scope-change record."""
    return record_id.startswith("mem0:") and ":" not in record_id.removeprefix("mem0:")


def md5_hex(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0
