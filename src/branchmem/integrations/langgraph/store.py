"""A LangGraph long-term ``BaseStore`` whose answers follow the checkpoint tree."""

from __future__ import annotations

import asyncio
import json
import operator
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from ...errors import BranchmemError, InvalidInput, NotFoundError
from ...memory import Memory
from ...model import Record
from .checkpointer import MIRRORED, BranchCheckpointer, step_event
from .mapping import (
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_DURABILITY,
    ROOT_NS,
    checkpoint_event_id,
    configurable,
    running_checkpoint,
    step_event_id,
    thread_event_id,
    thread_of,
)

ITEM_KIND: Final = "langgraph.item"


class MissingAnchor(InvalidInput):
    """A write has no checkpoint to be sourced at, and strict mode refuses legacy records."""

    code = "missing_anchor"


class CheckpointNotMirrored(BranchmemError):
    """The running step's input checkpoint never reached the Memory."""

    code = "checkpoint_not_mirrored"


@dataclass(frozen=True, slots=True)
class _Place:
    """Where a batch reads from (``anchor``) and what its writes are sourced at."""

    anchor: str | None
    source: str | None
    events: list[dict[str, Any]] = field(default_factory=list)


class BranchStore(BaseStore):
    """Answer every read as seen from a checkpoint; source every write at one.

    Inside a node the checkpoint is the running step (see ``mapping``): reads see what the
    step's input checkpoint sees plus the step's own writes; writes belong to the checkpoint
    the step produces. Outside a run, ``at(config)`` names the checkpoint. Items written on
    other threads count as seen from those threads' heads (``cross_thread=True``), so
    long-term memory still crosses threads but never from an abandoned branch.
    """

    def __init__(
        self,
        memory: Memory,
        *,
        namespace: str = "default",
        cross_thread: bool = True,
        mode: str | None = None,
        wait_timeout: float = 30.0,
    ) -> None:
        self.memory = memory
        self.namespace = namespace
        self.cross_thread = cross_thread
        self.mode = mode if mode is not None else str(getattr(memory, "mode", "strict"))
        if self.mode not in ("strict", "compat"):
            raise InvalidInput(f"mode must be 'strict' or 'compat', got {self.mode!r}")
        self.wait_timeout = wait_timeout
        self._anchor_config: RunnableConfig | None = None

    def at(self, config: RunnableConfig) -> BranchStore:
        """A view of this store anchored at ``config``'s checkpoint.

        Without ``checkpoint_id`` the view follows the thread's head (its latest checkpoint,
        what ``get_state`` returns).
        """
        thread_of(config)
        view = BranchStore(
            self.memory,
            namespace=self.namespace,
            cross_thread=self.cross_thread,
            mode=self.mode,
            wait_timeout=self.wait_timeout,
        )
        view._anchor_config = config
        return view

    # -- BaseStore ---------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        place = self._place()
        with MIRRORED:
            if place.events:
                self.memory.add_events(place.events, namespace=self.namespace)
            return [self._run(op, place) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # Off the event loop: a read may wait for a checkpoint the loop is still saving.
        # ``to_thread`` copies the context, so the node's config is still visible there.
        return await asyncio.to_thread(self.batch, list(ops))

    # -- where the batch stands --------------------------------------------------------
    def _place(self) -> _Place:
        if self._anchor_config is not None:
            return self._explicit_place(self._anchor_config)
        try:
            config = get_config()
        except RuntimeError:  # not inside a runnable: no checkpoint to stand on
            return _Place(anchor=None, source=None)
        checkpoint_id = running_checkpoint(config)
        if checkpoint_id is None:
            return _Place(anchor=None, source=None)
        conf = configurable(config)
        if conf.get(CONFIG_KEY_DURABILITY) == "exit":
            raise InvalidInput(
                f"run on thread {thread_of(config)!r} uses durability='exit': its steps' "
                "checkpoints are never saved, so memory cannot follow them"
            )
        checkpointer = conf.get(CONFIG_KEY_CHECKPOINTER)
        if not isinstance(checkpointer, BranchCheckpointer) or not self._shares_memory(
            checkpointer
        ):
            raise InvalidInput(
                "BranchStore needs the graph compiled with "
                "checkpointer=BranchCheckpointer(saver, memory) over the same Memory and "
                f"namespace {self.namespace!r}, got {type(checkpointer).__name__}"
            )
        thread_id = thread_of(config)
        if not checkpointer.wait_mirrored(thread_id, checkpoint_id, self.wait_timeout):
            raise CheckpointNotMirrored(
                f"checkpoint {checkpoint_id!r} of thread {thread_id!r} was not mirrored "
                f"within {self.wait_timeout}s"
            )
        step = step_event_id(thread_id, checkpoint_id)
        return _Place(anchor=step, source=step, events=[step_event(thread_id, checkpoint_id)])

    def _explicit_place(self, config: RunnableConfig) -> _Place:
        conf = configurable(config)
        thread_id = thread_of(config)
        namespace = conf.get("checkpoint_ns", ROOT_NS) or ROOT_NS
        if namespace != ROOT_NS:
            raise InvalidInput(
                f"checkpoint_ns {namespace!r}: anchor at the root graph's checkpoint; a "
                "subgraph's memory belongs to the parent step it runs in"
            )
        checkpoint_id = conf.get("checkpoint_id")
        if not checkpoint_id:
            with MIRRORED:
                head = self.memory.head(thread_event_id(thread_id), namespace=self.namespace)
            return _Place(anchor=head, source=head)
        anchor = checkpoint_event_id(thread_id, str(checkpoint_id))
        with MIRRORED:
            try:
                self.memory.get_event(anchor, namespace=self.namespace)
            except NotFoundError:
                raise NotFoundError(
                    f"checkpoint {checkpoint_id!r} of thread {thread_id!r} is not mirrored; "
                    "save it through BranchCheckpointer or call mirror_thread()"
                ) from None
        return _Place(anchor=anchor, source=anchor)

    def _shares_memory(self, checkpointer: BranchCheckpointer) -> bool:
        return checkpointer.memory is self.memory and checkpointer.namespace == self.namespace

    # -- operations --------------------------------------------------------------------
    def _run(self, op: Op, place: _Place) -> Result:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key, place)
        if isinstance(op, SearchOp):
            return self._search(op, place)
        if isinstance(op, PutOp):
            self._put(op, place)
            return None
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op, place)
        raise InvalidInput(f"unknown store operation {type(op).__name__}")

    def _get(self, namespace: tuple[str, ...], key: str, place: _Place) -> Item | None:
        record = self.memory.current(
            item_key(namespace, key),
            place.anchor,
            cross_tree=self.cross_thread,
            mode=self.mode,
            namespace=self.namespace,
        )
        if record is None or record.kind != ITEM_KIND:
            return None
        return _item(record)

    def _visible_items(self, place: _Place) -> list[Item]:
        records = self.memory.visible(
            place.anchor,
            kind=ITEM_KIND,
            cross_tree=self.cross_thread,
            mode=self.mode,
            namespace=self.namespace,
        )
        items = (_item(record) for record in records)
        return [item for item in items if item is not None]

    def _search(self, op: SearchOp, place: _Place) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        found = [
            item
            for item in self._visible_items(place)
            if item.namespace[: len(prefix)] == prefix and _matches(item.value, op.filter)
        ]
        found.sort(key=lambda item: (item.updated_at, item.namespace, item.key), reverse=True)
        page = found[op.offset : op.offset + op.limit]
        return [
            SearchItem(
                namespace=item.namespace,
                key=item.key,
                value=item.value,
                created_at=item.created_at,
                updated_at=item.updated_at,
            )
            for item in page
        ]

    def _put(self, op: PutOp, place: _Place) -> None:
        sources: list[str] | None
        if place.source is not None:
            sources = [place.source]
        elif self.mode == "compat":
            sources = None  # a legacy record: compat shows it everywhere and counts it
        else:
            raise MissingAnchor(
                f"put {op.namespace!r}/{op.key!r} has no checkpoint to be sourced at; "
                "use store.at(config), or a graph node with a BranchCheckpointer"
            )
        key = item_key(op.namespace, op.key)
        now = datetime.now(UTC).isoformat()
        if op.value is None:
            self.memory.retract(
                f"lg-delete:{uuid.uuid4().hex}",
                sources=sources,
                key=key,
                scope="branch",
                reason="langgraph store delete",
                namespace=self.namespace,
            )
            return
        previous = self._get(op.namespace, op.key, place)
        created_at = previous.created_at.isoformat() if previous is not None else now
        self.memory.add_record(
            f"lg-item:{uuid.uuid4().hex}",
            sources=sources,
            content=json.dumps(op.value, sort_keys=True, ensure_ascii=False),
            kind=ITEM_KIND,
            key=key,
            meta={
                "namespace": list(op.namespace),
                "key": op.key,
                "created_at": created_at,
                "updated_at": now,
            },
            namespace=self.namespace,
        )

    def _list_namespaces(self, op: ListNamespacesOp, place: _Place) -> list[tuple[str, ...]]:
        namespaces: set[tuple[str, ...]] = set()
        for item in self._visible_items(place):
            if all(_namespace_matches(c, item.namespace) for c in op.match_conditions or ()):
                depth = op.max_depth
                namespaces.add(item.namespace[:depth] if depth is not None else item.namespace)
        ordered = sorted(namespaces)
        return ordered[op.offset : op.offset + op.limit]


def item_key(namespace: Sequence[str], key: str) -> str:
    """The record key an item's (namespace, key) competes under: one per store slot."""
    return "langgraph:" + json.dumps([*namespace, key], ensure_ascii=False)


def _item(record: Record) -> Item | None:
    """The Item a record revision holds; None if its content was erased."""
    meta = record.meta
    try:
        value = json.loads(record.content)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    return Item(
        value=value,
        key=str(meta["key"]),
        namespace=tuple(meta["namespace"]),
        created_at=datetime.fromisoformat(meta["created_at"]),
        updated_at=datetime.fromisoformat(meta["updated_at"]),
    )


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    pattern = tuple(condition.path)
    if len(namespace) < len(pattern):
        return False
    if condition.match_type == "prefix":
        candidate = namespace[: len(pattern)]
    elif condition.match_type == "suffix":
        candidate = namespace[len(namespace) - len(pattern) :]
    else:
        raise InvalidInput(f"match_type {condition.match_type!r}: expected prefix or suffix")
    return all(p == "*" or p == n for p, n in zip(pattern, candidate, strict=True))


def _ordered(compare: Callable[[float, float], bool]) -> Callable[[Any, Any], bool]:
    """A numeric comparison that, like PostgreSQL's JSONB, fails on a missing value."""

    def holds(actual: Any, operand: Any) -> bool:
        return actual is not None and compare(float(actual), float(operand))

    return holds


_OPERATORS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": _ordered(operator.gt),
    "$gte": _ordered(operator.ge),
    "$lt": _ordered(operator.lt),
    "$lte": _ordered(operator.le),
}


def _matches(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter language: exact (nested) match or ``$eq``/``$ne``/``$gt``... ."""
    return all(_compare(value.get(k), wanted) for k, wanted in (conditions or {}).items())


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            for name, operand in wanted.items():
                if name not in _OPERATORS:
                    raise InvalidInput(f"filter operator {name!r} is not supported")
                if not _OPERATORS[name](actual, operand):
                    return False
            return True
        return isinstance(actual, Mapping) and all(
            _compare(actual.get(k), v) for k, v in wanted.items()
        )
    return bool(actual == wanted)
