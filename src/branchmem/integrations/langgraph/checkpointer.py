"""A checkpoint saver wrapper that mirrors the thread's checkpoint tree into a Memory."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Collection, Iterator, Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime
from typing import Any, Final

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.config import get_config

from ...errors import NotFoundError
from ...errors import (
    UnsupportedSaver as UnsupportedSaver,
)  # declared in errors; kept importable here
from ...memory import Memory
from ...receipt import Receipt, WrappedReceiptCheck
from .forget import forget_in_saver, refuse_on_saver_loop, verify_in_saver
from .mapping import (
    CHECKPOINT_ROLE,
    ROOT_NS,
    STEP_ROLE,
    THREAD_ROLE,
    checkpoint_event_id,
    configurable,
    running_checkpoint,
    step_event_id,
    thread_event_id,
    thread_of,
)

# LangGraph savers that overwrite a thread's checkpoint instead of keeping the tree.
LATEST_ONLY_SAVERS: Final = frozenset({"ShallowPostgresSaver", "AsyncShallowPostgresSaver"})

# Every call into a Memory made by this integration holds this lock: LangGraph saves
# checkpoints from worker threads while nodes read and write the store on others. The
# condition wakes readers that wait for a checkpoint to be mirrored (see ``wait_mirrored``).
MIRRORED: Final = threading.Condition(threading.RLock())
# Whether the run in this context is async (its checkpoints saved on its event loop): set
# when a run reads its thread. A sync run may be started on a thread whose event loop is
# running (a notebook); its checkpoints are saved by worker threads, so a store call there
# may wait for one without blocking anything the save needs. Unknown counts as async.
ASYNC_RUN: Final[ContextVar[bool]] = ContextVar("branchmem_langgraph_async_run", default=True)


def refuse_sync_call_in_async_run() -> None:
    """A sync store call on the event loop inside an async run would block the loop while
    it waits for the step's checkpoint, which that same loop is saving: refuse at once, as
    LangGraph's async stores do. Outside a run nothing waits, and a sync run started on a
    thread with a running loop (a notebook) saves in worker threads: both allowed."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    try:
        config = get_config()
    except RuntimeError:
        return
    if running_checkpoint(config) is not None and ASYNC_RUN.get():
        raise asyncio.InvalidStateError(
            "synchronous BranchStore calls are not allowed on the event loop inside a "
            "run: use the async methods (aget, aput, asearch, ...) in async nodes"
        )


# Saver methods the wrapper has only when the wrapped saver's class does, since LangGraph
# (and its conformance suite) detects a capability by override: the optional ones, and the
# sync or async half a saver may lack (PostgresSaver has no async methods, SqliteSaver no
# aput_writes or adelete_thread): the wrapper then keeps BaseCheckpointSaver's default.
OPTIONAL_METHODS: Final = (
    ("get_tuple", "aget_tuple"),
    ("list", "alist"),
    ("put", "aput"),
    ("put_writes", "aput_writes"),
    ("delete_thread", "adelete_thread"),
    ("delete_for_runs", "adelete_for_runs"),
    ("copy_thread", "acopy_thread"),
    ("prune", "aprune"),
    ("get_delta_channel_history", "aget_delta_channel_history"),
)
_FACES: dict[tuple[type, frozenset[str]], type] = {}


def _lacking(saver_type: type) -> frozenset[str]:
    """The optional methods ``saver_type`` leaves to BaseCheckpointSaver's default."""
    return frozenset(
        name
        for pair in OPTIONAL_METHODS
        for name in pair
        if getattr(saver_type, name, None) is getattr(BaseCheckpointSaver, name, None)
    )


class BranchCheckpointer(BaseCheckpointSaver[Any]):
    """Delegate to ``saver`` and mirror each root-namespace checkpoint as a Memory event.

    The saver stays the source of truth for graph state; the Memory gets the tree shape
    (see ``mapping``) and the thread head, which moves to every checkpoint saved, as
    ``get_state`` without a checkpoint id does. An instance is of a subclass that keeps
    BaseCheckpointSaver's default for every optional method the saver lacks, so it
    advertises exactly the saver's capabilities.
    """

    def __new__(cls, saver: BaseCheckpointSaver[Any], *args: Any, **kwargs: Any) -> Any:
        lacking = _lacking(type(saver))
        if not lacking:
            return super().__new__(cls)
        face = _FACES.get((cls, lacking))
        if face is None:
            defaults = {name: getattr(BaseCheckpointSaver, name) for name in lacking}
            face = type(cls.__name__, (cls,), {**defaults, "__module__": cls.__module__})
            _FACES[(cls, lacking)] = face
        return super().__new__(face)

    def __init__(
        self,
        saver: BaseCheckpointSaver[Any],
        memory: Memory,
        *,
        namespace: str = "default",
    ) -> None:
        latest_only = {cls.__name__ for cls in type(saver).__mro__} & LATEST_ONLY_SAVERS
        if latest_only or isinstance(saver, BranchCheckpointer):
            reason = "keeps only the latest checkpoint" if latest_only else "is already wrapped"
            raise UnsupportedSaver(
                f"saver {type(saver).__name__} {reason}; BranchCheckpointer needs a saver "
                "that keeps every checkpoint (InMemorySaver, SqliteSaver, PostgresSaver)"
            )
        super().__init__(serde=saver.serde)
        self.saver = saver
        self.memory = memory
        self.namespace = namespace

    def __enter__(self) -> BranchCheckpointer:
        """Enters the saver when it is a context manager; the Memory stays its owner's."""
        if hasattr(type(self.saver), "__enter__"):
            self.saver.__enter__()  # type: ignore[attr-defined]
        return self

    def __exit__(self, *exc: Any) -> bool | None:
        if hasattr(type(self.saver), "__exit__"):
            return bool(self.saver.__exit__(*exc))  # type: ignore[attr-defined]
        return None

    async def __aenter__(self) -> BranchCheckpointer:
        if hasattr(type(self.saver), "__aenter__"):
            await self.saver.__aenter__()  # type: ignore[attr-defined]
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        if hasattr(type(self.saver), "__aexit__"):
            return bool(await self.saver.__aexit__(*exc))  # type: ignore[attr-defined]
        return None

    # -- mirroring ---------------------------------------------------------------------
    def is_mirrored(self, thread_id: str, checkpoint_id: str) -> bool:
        """Whether the checkpoint's event is in the Memory."""
        with MIRRORED:
            try:
                self.memory.get_event(
                    checkpoint_event_id(thread_id, checkpoint_id), namespace=self.namespace
                )
            except NotFoundError:
                return False
            return True

    def wait_mirrored(self, thread_id: str, checkpoint_id: str, timeout: float) -> bool:
        """Block until the checkpoint is mirrored; False on timeout.

        With the default ``durability="async"`` LangGraph runs a step's nodes while the
        step's input checkpoint is still being saved in the background.
        """
        with MIRRORED:
            return MIRRORED.wait_for(
                lambda: self.is_mirrored(thread_id, checkpoint_id), timeout=timeout
            )

    def mirror_thread(self, thread_id: str) -> int:
        """Mirror every stored checkpoint of a thread, oldest first; returns how many.

        For threads saved before the wrapper was in place, and after ``copy_thread``.
        """
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        return self._mirror_saved(thread_id, list(self.saver.list(config)))

    async def amirror_thread(self, thread_id: str) -> int:
        """``mirror_thread`` for async savers; the Memory writes run off the event loop."""
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        saved = [t async for t in self.saver.alist(config)]
        return await asyncio.to_thread(self._mirror_saved, thread_id, saved)

    def _mirror_saved(self, thread_id: str, saved: list[CheckpointTuple]) -> int:
        saved = sorted(saved, key=lambda t: t.checkpoint["id"])
        for saved_tuple in saved:
            if configurable(saved_tuple.config).get("checkpoint_ns", ROOT_NS) != ROOT_NS:
                continue
            parent_config = saved_tuple.parent_config or {
                "configurable": {"thread_id": thread_id, "checkpoint_ns": ""}
            }
            copied = _copy_among(parent_config, saved_tuple.checkpoint, saved_tuple.metadata, saved)
            self._mirror(parent_config, saved_tuple.checkpoint, saved_tuple.metadata, copied)
        return len(saved)

    def _copied_checkpoint(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> CheckpointTuple | None:
        """The sibling an ``update_state(as_node="__copy__")`` fork copied, if it is one."""
        query = _copy_query(config, checkpoint, metadata)
        if query is None:
            return None
        list_config, step = query
        for candidate in self.saver.list(list_config, filter={"step": step}):
            if _is_copy_of(candidate, config, checkpoint):
                return candidate
        return None

    async def _acopied_checkpoint(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> CheckpointTuple | None:
        query = _copy_query(config, checkpoint, metadata)
        if query is None:
            return None
        list_config, step = query
        async for candidate in self.saver.alist(list_config, filter={"step": step}):
            if _is_copy_of(candidate, config, checkpoint):
                return candidate
        return None

    def _mirror(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        copied: CheckpointTuple | None,
    ) -> None:
        conf = configurable(config)
        if conf.get("checkpoint_ns", ROOT_NS) != ROOT_NS:
            return  # a subgraph's checkpoints belong to one step of its parent (see docs)
        thread_id = thread_of(config)
        tree = thread_event_id(thread_id)
        parent_id: str | None = conf.get("checkpoint_id") or None
        events: list[dict[str, Any]] = []
        if copied is not None:
            parent_event = self._parent_event_of(thread_id, copied, events)
        else:
            parent_event = _parent_event(thread_id, parent_id, metadata.get("source"), events)
        events.append(
            {
                "id": checkpoint_event_id(thread_id, checkpoint["id"]),
                "parent": parent_event,
                "tree": tree,
                "role": CHECKPOINT_ROLE,
                "meta": {
                    "thread_id": thread_id,
                    "checkpoint_id": checkpoint["id"],
                    "source": metadata.get("source"),
                    "step": metadata.get("step"),
                },
                "ts": _timestamp(checkpoint.get("ts")),
            }
        )
        with MIRRORED:
            self.memory.add_events(events, namespace=self.namespace)
            self.memory.set_head(events[-1]["id"], namespace=self.namespace)
            MIRRORED.notify_all()

    def _parent_event_of(
        self, thread_id: str, copied: CheckpointTuple, events: list[dict[str, Any]]
    ) -> str:
        """A copy sits where the checkpoint it copies sits: it holds the same state."""
        copied_event = checkpoint_event_id(thread_id, copied.checkpoint["id"])
        with MIRRORED:
            try:
                parent = self.memory.get_event(copied_event, namespace=self.namespace).parent
            except NotFoundError:
                parent = None
        if parent is not None:
            return parent
        copied_parent = configurable(copied.parent_config).get("checkpoint_id") or None
        return _parent_event(thread_id, copied_parent, copied.metadata.get("source"), events)

    # -- the saver interface: delegate, mirroring puts -------------------------------
    @property
    def config_specs(self) -> list[Any]:
        return list(self.saver.config_specs)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        ASYNC_RUN.set(False)  # a sync run starts here (its loop reads the thread first)
        return self.saver.get_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        return self.saver.list(config, filter=filter, before=before, limit=limit)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        next_config = self.saver.put(config, checkpoint, metadata, new_versions)
        self._mirror(
            config, checkpoint, metadata, self._copied_checkpoint(config, checkpoint, metadata)
        )
        return next_config

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.saver.put_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        """Delete the saved state; the Memory keeps the thread's events and records."""
        self.saver.delete_thread(thread_id)

    def forget(self, kind: str, id: str, *, dry_run: bool = False) -> Receipt:
        """``Memory.forget`` on the Memory, carried into the saver: every thread the forget
        erased whole (its conversation ``lg:<thread>``, or a branch from its root) loses its
        checkpoints and writes (``delete_thread``), and the saver's storage is checked for
        the receipt's fingerprints. The receipt's ``stores`` has a ``"langgraph"`` section
        (the threads deleted, the byte check, what it cannot clean: a thread erased in part
        keeps its checkpoints), covered by the content hash and the audit entry. ``dry_run``
        changes nothing in either. Over an async saver, call ``aforget`` on its event loop:
        this refuses to run there, before anything is erased."""
        refuse_on_saver_loop(self.saver, "forget")
        with MIRRORED:
            return self.memory.forget_with(
                kind,
                id,
                also=lambda receipt, texts: (forget_in_saver(self, receipt),),
                dry_run=dry_run,
                namespace=self.namespace,
            )

    async def aforget(self, kind: str, id: str, *, dry_run: bool = False) -> Receipt:
        """``forget`` off the event loop (the Memory's writes are synchronous)."""
        return await asyncio.to_thread(self.forget, kind, id, dry_run=dry_run)

    def verify_receipt(self, receipt: Receipt | Mapping[str, Any]) -> WrappedReceiptCheck:
        """``Memory.verify_receipt`` on the Memory, and the saver's storage checked again for
        the receipt's fingerprints (as ``forget`` checked it); ``ok`` is both."""
        refuse_on_saver_loop(self.saver, "verify_receipt")
        found = receipt if isinstance(receipt, Receipt) else Receipt.from_json(receipt)
        with MIRRORED:
            return verify_in_saver(self, found)

    async def averify_receipt(self, receipt: Receipt | Mapping[str, Any]) -> WrappedReceiptCheck:
        """``verify_receipt`` off the event loop."""
        return await asyncio.to_thread(self.verify_receipt, receipt)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.saver.delete_for_runs(run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.saver.copy_thread(source_thread_id, target_thread_id)
        self.mirror_thread(target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.saver.prune(thread_ids, strategy=strategy)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        ASYNC_RUN.set(True)  # an async run starts here: its nodes' tasks copy the context
        return await self.saver.aget_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        async for saved in self.saver.alist(config, filter=filter, before=before, limit=limit):
            yield saved

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        next_config = await self.saver.aput(config, checkpoint, metadata, new_versions)
        copied = await self._acopied_checkpoint(config, checkpoint, metadata)
        # the Memory write takes a lock store readers hold in worker threads: not on the loop
        await asyncio.to_thread(self._mirror, config, checkpoint, metadata, copied)
        return next_config

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self.saver.aput_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await self.saver.adelete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self.saver.adelete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self.saver.acopy_thread(source_thread_id, target_thread_id)
        await self.amirror_thread(target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self.saver.aprune(thread_ids, strategy=strategy)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        return self.saver.get_delta_channel_history(config=config, channels=channels)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        return await self.saver.aget_delta_channel_history(config=config, channels=channels)

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.saver.get_next_version(current, channel)

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> BranchCheckpointer:
        saver = self.saver.with_allowlist(extra_allowlist)
        if saver is self.saver:
            return self
        return BranchCheckpointer(saver, self.memory, namespace=self.namespace)


def _parent_event(
    thread_id: str, parent_id: str | None, source: object, events: list[dict[str, Any]]
) -> str:
    """The event a new checkpoint hangs below; appends any event that must exist first.

    Only a ``loop`` checkpoint is the product of a step, so only it hangs below the step
    event of its parent; ``input``, ``update`` and replay ``fork`` checkpoints branch off
    the parent checkpoint itself.
    """
    tree = thread_event_id(thread_id)
    if parent_id is None:
        events.append(
            {
                "id": tree,
                "parent": None,
                "tree": tree,
                "role": THREAD_ROLE,
                "meta": {"thread_id": thread_id},
            }
        )
        return tree
    if source == "loop":
        events.append(step_event(thread_id, parent_id))
        return step_event_id(thread_id, parent_id)
    return checkpoint_event_id(thread_id, parent_id)


def step_event(thread_id: str, checkpoint_id: str) -> dict[str, Any]:
    """The step event run from a checkpoint, as ``Memory.add_events`` takes it."""
    return {
        "id": step_event_id(thread_id, checkpoint_id),
        "parent": checkpoint_event_id(thread_id, checkpoint_id),
        "tree": thread_event_id(thread_id),
        "role": STEP_ROLE,
        "meta": {"thread_id": thread_id, "checkpoint_id": checkpoint_id},
    }


def _copy_query(
    config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
) -> tuple[RunnableConfig, int] | None:
    """Where to look for the original of a ``fork`` checkpoint, or None if it is no fork.

    ``update_state(..., as_node="__copy__")`` saves a copy of checkpoint S under S's parent
    with step S.step + 1 and S's channel versions; a replay fork is saved under the
    checkpoint it replays, whose children all have a higher step.
    """
    conf = configurable(config)
    if metadata.get("source") != "fork" or conf.get("checkpoint_ns", ROOT_NS) != ROOT_NS:
        return None
    step = metadata.get("step")
    if not isinstance(step, int):
        return None
    list_config: RunnableConfig = {
        "configurable": {"thread_id": thread_of(config), "checkpoint_ns": ROOT_NS}
    }
    return list_config, step - 1


def _copy_among(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    saved: Sequence[CheckpointTuple],
) -> CheckpointTuple | None:
    """``_copied_checkpoint`` over checkpoints already listed (no second saver call)."""
    query = _copy_query(config, checkpoint, metadata)
    if query is None:
        return None
    _, step = query
    for candidate in saved:
        if candidate.metadata.get("step") == step and _is_copy_of(candidate, config, checkpoint):
            return candidate
    return None


def _is_copy_of(candidate: CheckpointTuple, config: RunnableConfig, checkpoint: Checkpoint) -> bool:
    parent_id = configurable(config).get("checkpoint_id") or None
    candidate_parent = configurable(candidate.parent_config).get("checkpoint_id") or None
    return (
        candidate.checkpoint["id"] != checkpoint["id"]
        and candidate_parent == parent_id
        and candidate.checkpoint["channel_versions"] == checkpoint["channel_versions"]
    )


def _timestamp(iso: object) -> float | None:
    if not isinstance(iso, str):
        return None
    try:
        return datetime.fromisoformat(iso).timestamp()
    except ValueError:
        return None
