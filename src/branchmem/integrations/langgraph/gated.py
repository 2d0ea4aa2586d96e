"""A LangGraph long-term ``BaseStore`` whose answers follow the checkpoint tree: reads,
writes and expiry. ``store`` adds the lifecycle methods of LangGraph's sync and async stores."""

from __future__ import annotations

import asyncio
import json
import math
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Self

from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from ...errors import CheckpointNotMirrored as CheckpointNotMirrored  # in errors; kept here
from ...errors import InvalidInput, NotFoundError
from ...errors import MissingAnchor as MissingAnchor  # in errors; kept importable here
from ...memory import Memory
from ...model import Record
from .cache import ReadCache, Refreshed
from .checkpointer import (
    MIRRORED,
    BranchCheckpointer,
    refuse_sync_call_in_async_run,
    step_event,
)
from .filters import matches, namespace_matches
from .items import (
    ITEM_KIND,
    Found,
    check_labels,
    check_put,
    item_key,
    item_of,
    item_spec,
    key_prefix,
    newest_first,
)
from .joining import LoopCalls, ThreadCalls
from .mapping import (
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_DURABILITY,
    anchor_of,
    checkpoint_event_id,
    configurable,
    running_checkpoint,
    step_event_id,
    thread_event_id,
    thread_of,
)
from .ranking import Candidates, VectorIndex, ranked_by_words
from .ttl import (
    EXPIRY_KIND,
    drop_expired,
    expiry_key,
    expiry_prefix,
    expiry_spec,
    latest_expiries,
)

__all__ = ["ITEM_KIND", "CheckpointNotMirrored", "GatedStore", "MissingAnchor", "item_key"]

# inside a batch: a slot for the stamp, read once when first needed (None: not in a batch)
_BATCH_STAMP: ContextVar[list[int] | None] = ContextVar("branchmem_langgraph_stamp", default=None)
# inside a batch's reads: the TTL refreshes they make, written with the batch's puts
_REFRESHES: ContextVar[dict[tuple[str, int], tuple[Record, float]] | None] = ContextVar(
    "branchmem_langgraph_refreshes", default=None
)


class _NotCached:
    """What ``_cached_get`` answers when the cache cannot answer alone."""


_NOT_CACHED: Final = _NotCached()


@dataclass(frozen=True, slots=True)
class _Place:
    """Where a batch reads from (``anchor``) and what its writes are sourced at."""

    anchor: str | None
    source: str | None
    events: Sequence[dict[str, Any]] = ()


class GatedStore(BaseStore):
    """Answer every read as seen from a checkpoint; source every write at one.

    Inside a node the checkpoint is the running step (see ``mapping``): reads see what the
    step's input checkpoint sees plus the step's own writes; writes belong to the checkpoint
    the step produces. Outside a run, ``at(config)`` (or ``config=``) names the checkpoint.
    Items written on other threads count as seen from those threads' heads
    (``cross_thread=True``), so long-term memory still crosses threads but never from an
    abandoned branch. ``index`` is LangGraph's ``IndexConfig`` (``dims``, ``embed``,
    ``fields``, ``distance_type``): with it ``search(query=...)`` ranks by similarity (cosine
    unless ``distance_type`` is ``l2`` or ``inner_product``, scored as ``PostgresStore`` does);
    without it by BM25 over the values' text. ``ttl`` is LangGraph's ``TTLConfig``.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        memory: Memory,
        *,
        namespace: str = "default",
        cross_thread: bool = True,
        mode: str | None = None,
        wait_timeout: float = 30.0,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        config: RunnableConfig | None = None,
    ) -> None:
        self.memory = memory
        self.namespace = namespace
        self.cross_thread = cross_thread
        self.mode = mode if mode is not None else str(getattr(memory, "mode", "strict"))
        if self.mode not in ("strict", "compat"):
            raise InvalidInput(f"mode must be 'strict' or 'compat', got {self.mode!r}")
        self.wait_timeout = wait_timeout
        self.index_config = index
        self._index = VectorIndex(index) if index is not None else None
        self.ttl_config = ttl
        # (record id, revision) -> expiry set by a refresh, this process's or one read from
        # the Memory (``ttl``: refreshes are stored, so every process sees them)
        self._refreshed = Refreshed()
        # reads are cached against a stamp every write moves (see ReadCache); a backend with
        # neither a process-local store nor a change stamp is read every time
        self._stamped = not memory.process_local and memory.change_stamp(namespace) is not None
        self._cache = ReadCache() if memory.process_local or self._stamped else None
        if config is not None:
            thread_of(config)
        self._anchor_config = config
        self._anchor: tuple[str, str | None] | None = None  # anchor_of(config), once read
        # calls waiting for the next batch of an explicit-anchor view (``joining``)
        self._thread_calls = ThreadCalls()
        self._loop_calls = LoopCalls()

    @property
    def embeddings(self) -> Embeddings | None:
        """The index's embedder, as LangGraph's stores expose it."""
        return self._index.embeddings if self._index is not None else None

    def at(self, config: RunnableConfig) -> Self:
        """A view of this store anchored at ``config``'s checkpoint.

        Without ``checkpoint_id`` the view follows the thread's head (its latest checkpoint,
        what ``get_state`` returns). The view shares the index and the TTL refreshes.
        """
        thread_of(config)
        view = GatedStore.__new__(type(self))
        view.__dict__.update(self.__dict__)
        view._anchor_config = config
        view._anchor = None
        view._thread_calls, view._loop_calls = ThreadCalls(), LoopCalls()
        return view

    # -- BaseStore ---------------------------------------------------------------------
    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """``BaseStore.get``. On a view with an explicit anchor whose items are cached, and
        with no batch of its own running, it is answered from the cache without making a
        batch: a loop of gets is what an agent reading its memory does. Anything else (a
        fill, a TTL refresh to store) goes through ``batch``."""
        if self._anchor_config is None or self._cache is None or self._thread_calls.leader:
            return super().get(namespace, key, refresh_ttl=refresh_ttl)
        check_labels(namespace)
        refresh = refresh_ttl if refresh_ttl is not None else self._refresh_on_read()
        token = _BATCH_STAMP.set([])  # the stamp is read once, as in a batch
        try:
            found = self._cached_get(tuple(namespace), str(key), refresh)
        finally:
            _BATCH_STAMP.reset(token)
        if not isinstance(found, _NotCached):
            return found
        return super().get(namespace, key, refresh_ttl=refresh_ttl)

    def _cached_get(
        self, namespace: tuple[str, ...], key: str, refresh: bool
    ) -> Item | _NotCached | None:
        """``_get`` where the cache holds the answer; ``_NOT_CACHED`` where it does not."""
        assert self._cache is not None and self._anchor_config is not None
        anchor = self._explicit_place(self._anchor_config).anchor
        if anchor is None:
            return _NOT_CACHED
        cache = self._cache
        generation = self._stamp()
        with cache.lock:
            cache.fresh(generation)
            live = cache.items.get(anchor)
        if live is None:
            return _NOT_CACHED
        found = live.get(namespace, {}).get(key)
        if found is None:
            return None
        held = found.record
        if "ttl_minutes" in held.meta or self._refreshed:  # else it cannot expire
            if self._expired(held):
                return None
            if self._refreshes(held, refresh):
                return _NOT_CACHED  # a refresh is stored: in a batch's transaction
        return found.item

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        # inside a run each call stands where its caller's step does; a call made inside
        # this view's own running batch runs at once (it would otherwise wait for itself)
        if self._anchor_config is None or self._thread_calls.inside():
            return self._batch(ops)
        # A view with an explicit anchor answers every caller alike: sync calls made from
        # other threads while a batch runs wait and run together as the next one, as its
        # async calls do (``joining``). A call that finds no batch running runs at once.
        return self._thread_calls.run(ops, self._batch)

    def _batch(self, ops: list[Op]) -> list[Result]:
        if self._anchor_config is None:  # a view with an explicit anchor never waits
            refuse_sync_call_in_async_run()
        token = _BATCH_STAMP.set([])  # the stamp is read once per batch, when first needed
        try:
            if self._anchor_config is not None and all(isinstance(op, PutOp) for op in ops):
                # writes alone: where they stand is found inside their transaction, whose
                # lock comes with the stamp, instead of in a read snapshot before it
                committed: list[Callable[[], None]] = []
                with MIRRORED:
                    with self.memory.transaction(self.namespace):
                        results = self._run_all(ops, self._place(), committed)
                    for update in committed:  # the cache, once the writes have committed
                        update()
                return results
            place = self._place()
            if place.events and all(isinstance(op, PutOp) for op in ops):
                # writes alone inside a run: the step's event and the items in one
                # transaction (one BEGIN and one COMMIT, and a refused put writes nothing)
                with MIRRORED, self.memory.transaction(self.namespace):
                    self.memory.add_events(place.events, namespace=self.namespace)
                    return self._run_all(ops, place, [])
            with MIRRORED:
                if place.events:
                    self.memory.add_events(place.events, namespace=self.namespace)
                return self._run_all(ops, place)
        finally:
            _BATCH_STAMP.reset(token)

    def _stamp(self) -> int:
        """What the cache is valid for: the in-memory Memory's write generation, or the
        namespace's arrival counter in the database (read once per batch)."""
        if not self._stamped:
            return self.memory.write_generation
        slot = _BATCH_STAMP.get()
        if slot:
            return slot[0]
        stamp = self._store_stamp()
        if slot is not None:
            slot.append(stamp)
        return stamp

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # Off the event loop: a read may wait for a checkpoint the loop is still saving.
        # ``to_thread`` copies the context, so the node's config is still visible there.
        ops = list(ops)
        if self._anchor_config is None:  # where it stands depends on each caller's run
            return await asyncio.to_thread(self.batch, ops)
        # A view with an explicit anchor answers every caller alike: calls made while a
        # batch runs wait and run together as the next one, as LangGraph's batched async
        # stores do (one stamp read and one write transaction for all of them; concurrent
        # calls may be ordered either way, and an error fails every call of its batch).
        return await self._loop_calls.run(ops, self.batch)

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
        if self._anchor is None:
            self._anchor = anchor_of(config)
        thread_id, checkpoint_id = self._anchor
        if not checkpoint_id:
            return _Place(anchor=(head := self._head(thread_id)), source=head)
        anchor = checkpoint_event_id(thread_id, checkpoint_id)
        with MIRRORED:
            try:
                self.memory.get_event(anchor, namespace=self.namespace)
            except NotFoundError:
                raise NotFoundError(
                    f"checkpoint {checkpoint_id!r} of thread {thread_id!r} is not mirrored; "
                    "save it through BranchCheckpointer or call mirror_thread()"
                ) from None
        return _Place(anchor=anchor, source=anchor)

    def _head(self, thread_id: str) -> str | None:
        """The event of the thread's latest mirrored checkpoint (cached per generation)."""
        cache = self._cache
        if cache is not None:
            generation = self._stamp()
            with cache.lock:
                cache.fresh(generation)
                if thread_id in cache.heads:
                    return cache.heads[thread_id]
        with MIRRORED:
            head = self.memory.head(thread_event_id(thread_id), namespace=self.namespace)
        if cache is not None:
            with cache.lock:
                if cache.generation == generation:
                    cache.heads[thread_id] = head
        return head

    def _shares_memory(self, checkpointer: BranchCheckpointer) -> bool:
        return checkpointer.memory is self.memory and checkpointer.namespace == self.namespace

    # -- operations --------------------------------------------------------------------
    def _run_all(
        self, ops: list[Op], place: _Place, committed: list[Callable[[], None]] | None = None
    ) -> list[Result]:
        """Reads see the store as it was before the batch, then the puts apply in order,
        the last put of a (namespace, key) winning, as in LangGraph's own stores.
        ``committed``: the batch's write transaction is open (``_write_all``)."""
        puts = [op for op in ops if isinstance(op, PutOp)]
        for put in puts:
            check_put(put)
        results: list[Result] = []
        refreshes: dict[tuple[str, int], tuple[Record, float]] = {}
        token = _REFRESHES.set(refreshes)
        try:
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(self._get(op, place))
                elif isinstance(op, SearchOp):
                    results.append(self._search(op, place))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(op, place))
                elif isinstance(op, PutOp):
                    results.append(None)
                else:
                    raise InvalidInput(f"unknown store operation {type(op).__name__}")
        finally:
            _REFRESHES.reset(token)
        last: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for put in puts:
            last.pop((put.namespace, put.key), None)
            last[(put.namespace, put.key)] = put
        if last or refreshes:
            self._write_all(list(last.values()), list(refreshes.values()), place, committed)
        return results

    def _record(self, namespace: tuple[str, ...], key: str, place: _Place) -> Record | None:
        """The revision holding the item where ``place`` stands: one current-value lookup."""
        record = self.memory.current(
            item_key(namespace, key),
            place.anchor,
            cross_tree=self.cross_thread,
            mode=self.mode,
            namespace=self.namespace,
        )
        if record is None or record.kind != ITEM_KIND:
            return None
        return record

    def _get(self, op: GetOp, place: _Place) -> Item | None:
        if self._cached(place):
            assert place.anchor is not None
            live = self._live(place.anchor, ()).get(tuple(op.namespace), {})
            found = live.get(op.key)
            if found is None:
                return None
            held = found.record
            if "ttl_minutes" in held.meta or self._refreshed:  # else it cannot expire
                if self._expired(held):
                    return None
                self._refresh(held, op.refresh_ttl)
            return found.item
        record = self._record(op.namespace, op.key, place)
        if record is not None and "ttl_minutes" in record.meta:
            self._learn_expiry(op.namespace, op.key, place.anchor)
        if record is None or self._expired(record):
            return None
        self._refresh(record, op.refresh_ttl)
        return item_of(record)

    # -- TTL ---------------------------------------------------------------------------
    def _expires(self, record: Record) -> float | None:
        refreshed = self._refreshed.get((record.id, record.revision))
        if refreshed is not None:
            return refreshed
        expires = record.meta.get("expires_at")
        return float(expires) if isinstance(expires, int | float) else None

    def _expired(self, record: Record) -> bool:
        expires = self._expires(record)
        return expires is not None and expires <= time.time()

    def _refresh_on_read(self) -> bool:
        """A read's ``refresh_ttl`` when it gives none (LangGraph's default)."""
        return bool((self.ttl_config or {}).get("refresh_on_read", True))

    def _refreshes(self, record: Record, wanted: bool) -> bool:
        """Whether a read asking ``wanted`` extends the record's expiry."""
        return (
            wanted
            and self._refresh_on_read()
            and isinstance(record.meta.get("ttl_minutes"), int | float)
        )

    def _refresh(self, record: Record, wanted: bool) -> None:
        if self._refreshes(record, wanted):
            ttl = record.meta["ttl_minutes"]
            now = time.time()
            expires, before = now + 60.0 * float(ttl), self._expires(record)
            slot = (record.id, record.revision)
            if before is not None and now < before <= expires:
                self._refreshed.extend(slot, expires)
            else:  # it gains an expiry, or an earlier one, or revives: cached sets rebuild
                self._refreshed[slot] = expires
            pending = _REFRESHES.get()
            if pending is not None:  # persisted with the batch's writes (``_write_all``)
                pending[slot] = (record, expires)

    def _learn_expiry(self, namespace: tuple[str, ...], key: str, anchor: str | None) -> None:
        """The item's latest persisted refresh (another process's, say), one lookup."""
        refresh = self.memory.current(
            expiry_key(namespace, key),
            anchor,
            cross_tree=self.cross_thread,
            mode=self.mode,
            namespace=self.namespace,
        )
        for slot, expires in latest_expiries([refresh] if refresh is not None else []).items():
            self._refreshed.learn(slot, expires)

    def _learn_expiries(self, anchor: str | None, prefix: tuple[str, ...]) -> None:
        """Every persisted refresh of the items under ``prefix`` seen from ``anchor``."""
        refreshes = self._current_records(anchor, expiry_prefix(prefix), EXPIRY_KIND)
        for slot, expires in latest_expiries(refreshes).items():
            self._refreshed.learn(slot, expires)

    def _sweep(self) -> int:
        """Drop what this process holds for items that have expired (``ttl.drop_expired``)."""
        return drop_expired(self._refreshed, self._cache, self._index, self._expires, time.time())

    # -- reads over every visible item -------------------------------------------------
    def _visible_items(self, place: _Place, prefix: tuple[str, ...] = ()) -> list[Found]:
        """The live items under the namespace ``prefix`` where ``place`` stands."""
        if place.anchor is None and self.mode == "strict":
            return []
        if not self._cached(place):
            found = self._read_items(place.anchor, prefix)
            return [f for f in found if not self._expired(f.record)]
        assert place.anchor is not None
        live = self._live(place.anchor, prefix)
        return [
            found
            for namespace, items in live.items()
            if namespace[: len(prefix)] == prefix
            for found in items.values()
            if not self._expired(found.record)
        ]

    def _cached(self, place: _Place) -> bool:
        """Whether reads at ``place`` go through the cache: outside a run, where reads
        repeat between writes (a step in a run writes its event first, so every batch of a
        run would start a new generation and the whole read would be wasted)."""
        return self._cache is not None and place.anchor is not None and not place.events

    def _live(
        self, anchor: str, prefix: tuple[str, ...]
    ) -> dict[tuple[str, ...], dict[str, Found]]:
        """Every live item seen from ``anchor``, by namespace and key, from the cache (filled
        with every item, whatever ``prefix`` asked, so that later reads find it there)."""
        return self._labelled_live(anchor)[1]

    def _labelled_live(self, anchor: str) -> tuple[int, dict[tuple[str, ...], dict[str, Found]]]:
        """``_live`` with the stamp of the state it shows. A fill reads the stamp in the same
        snapshot as the items (under the Memory's lock: no write of this process lands in
        between), so the label is exact and this store's next write can patch it."""
        cache = self._cache
        assert cache is not None
        generation = self._stamp()
        with cache.lock:
            cache.fresh(generation)
            live = cache.items.get(anchor)
            label = cache.generation
        if live is not None:
            return label, live
        live = {}
        with self.memory.snapshot(self.namespace):
            label = self._stamp_in_write()
            for found in self._read_items(anchor, ()):
                live.setdefault(found.item.namespace, {})[found.item.key] = found
        with cache.lock:
            cache.fresh(label)
            if cache.generation == label:
                cache.items[anchor] = live
        return label, live

    def _read_items(self, anchor: str | None, prefix: tuple[str, ...]) -> list[Found]:
        """The live items under ``prefix`` read from the Memory, with the refreshes of those
        that may expire. Expired ones are kept: expiry is decided when they are returned."""
        out = []
        for record in self._current_records(anchor, key_prefix(prefix), ITEM_KIND):
            item = item_of(record)
            if item is not None and item.namespace[: len(prefix)] == prefix:
                out.append(Found(item, record))
        if any("ttl_minutes" in found.record.meta for found in out):
            self._learn_expiries(anchor, prefix)
        return out

    def _current_records(self, anchor: str | None, prefix: str, kind: str) -> list[Record]:
        """The current ``kind`` record of every key starting with ``prefix`` where ``anchor``
        stands: through the key index (the cost of the live keys), or the whole view where
        only it can answer."""
        records: list[Record] | None = None
        if anchor is not None:
            records = self.memory.currents(
                anchor,
                prefix=prefix,
                cross_tree=self.cross_thread,
                mode=self.mode,
                namespace=self.namespace,
            )
        if records is None:
            records = self.memory.visible(
                anchor,
                kind=kind,
                cross_tree=self.cross_thread,
                mode=self.mode,
                namespace=self.namespace,
            )
        return [record for record in records if record.kind == kind]

    def _search(self, op: SearchOp, place: _Place) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        candidates = self._candidates(place, prefix, op.filter)
        if candidates is not None:
            found = candidates.found
        else:
            found = newest_first(
                [f for f in self._visible_items(place, prefix) if matches(f.item.value, op.filter)]
            )
        window = slice(op.offset, op.offset + op.limit)
        if not op.query:
            page: list[tuple[float | None, Found]] = [(None, f) for f in found[window]]
        elif self._index is not None:
            page = self._index.rank(op.query, found)[window]
        elif candidates is not None:
            page = candidates.by_words(op.query)[window]
        else:
            page = ranked_by_words(op.query, found)[window]
        if op.refresh_ttl:  # as LangGraph's stores do: the items returned
            for _, found_item in page:
                if "ttl_minutes" in found_item.record.meta:
                    self._refresh(found_item.record, True)
        return [
            SearchItem(
                namespace=f.item.namespace,
                key=f.item.key,
                value=f.item.value,
                created_at=f.item.created_at,
                updated_at=f.item.updated_at,
                score=score,
            )
            for score, f in page
        ]

    def _candidates(
        self, place: _Place, prefix: tuple[str, ...], conditions: Mapping[str, Any] | None
    ) -> Candidates | None:
        """The cached candidates of a search (None where reads are not cached, or the
        filter is not plain JSON and so has no reliable cache key): built once per
        generation from the live items, rebuilt when one may have expired or revived."""
        cache = self._cache
        if cache is None or not self._cached(place):
            return None
        assert place.anchor is not None
        try:
            shape = json.dumps(conditions, sort_keys=True) if conditions else ""
        except (TypeError, ValueError):
            return None
        key = (place.anchor, prefix, shape)
        generation = self._stamp()
        refreshes = self._refreshed.version
        with cache.lock:
            cache.fresh(generation)
            entry = cache.candidates.get(key)
        if entry is not None and entry.refreshes == refreshes and time.time() < entry.horizon:
            return entry
        label, live = self._labelled_live(place.anchor)
        now, horizon = time.time(), math.inf
        found: list[Found] = []
        for namespace, items in live.items():
            if namespace[: len(prefix)] != prefix:
                continue
            for item in items.values():
                expires = self._expires(item.record)
                if expires is not None:
                    if expires <= now:
                        continue
                    horizon = min(horizon, expires)
                if matches(item.item.value, conditions):
                    found.append(item)
        entry = Candidates(newest_first(found), horizon, refreshes)
        with cache.lock:
            if cache.generation == label:
                cache.candidates[key] = entry
        return entry

    def _write_all(
        self,
        puts: list[PutOp],
        refreshes: list[tuple[Record, float]],
        place: _Place,
        committed: list[Callable[[], None]] | None = None,
    ) -> None:
        """Write a batch's items and its reads' TTL refreshes in one transaction (the
        batch's own, already open, when ``committed`` is given: the cache update is then
        left there, to run once it has committed). Where reads are cached, it also reads the
        stamp before the writes and each written item's new revision after them: if the
        cache held the store exactly as it was before, it is patched with those items (at
        this anchor) and labelled with the stamp after, once the transaction has committed,
        instead of being emptied, so an agent that writes and reads in turn does not re-read
        every live item after each write. A refresh changes no item (its expiry is already
        in ``_refreshed``), so it only relabels the cache."""
        writing = self.memory.transaction(self.namespace) if committed is None else nullcontext()
        cache = self._cache
        if cache is None or not self._cached(place):
            with writing:
                self._write_items(puts, refreshes, place, None)
            return
        anchor = place.anchor
        assert anchor is not None
        if puts:  # the items' previous revisions, as a read finds them (filled once)
            self._live(anchor, ())
        written: dict[tuple[tuple[str, ...], str], Found | None] = {}
        with writing:
            before = self._stamp_in_write()
            with cache.lock:
                live = cache.items.get(anchor) if cache.generation == before else None
            news = self._write_items(puts, refreshes, place, live)
            if live is not None:
                for op, new in zip(puts, news, strict=True):
                    written[(tuple(op.namespace), op.key)] = self._found_after(op, new, place)
            after = self._stamp_in_write()
        if not self._stamped:
            after += 1  # the generation this transaction's own end adds
        update = partial(cache.patch, anchor, before, after, live, written)
        if committed is None:
            update()
        else:
            committed.append(update)

    def _found_after(self, op: PutOp, new: Record | None, place: _Place) -> Found | None:
        """The item at ``place`` after ``op``. A put's new revision is sourced at the anchor
        itself and arrived last (writers of a namespace take turns), so it is the current
        one there; after a delete, another thread's value may show (``cross_thread``)."""
        record = new if new is not None else self._record(op.namespace, op.key, place)
        item = item_of(record) if record is not None else None
        return Found(item, record) if item is not None and record is not None else None

    def _stamp_in_write(self) -> int:
        """The stamp inside a write transaction or a read snapshot, where it is exactly that
        of the state read (no other writer moves it there)."""
        if not self._stamped:
            return self.memory.write_generation
        return self._store_stamp()

    def _store_stamp(self) -> int:
        stamp = self.memory.change_stamp(self.namespace)
        assert stamp is not None  # _stamped: the backend keeps a counter
        return stamp

    def _write_items(
        self,
        puts: list[PutOp],
        refreshes: list[tuple[Record, float]],
        place: _Place,
        live: dict[tuple[str, ...], dict[str, Found]] | None,
    ) -> list[Record | None]:
        """The puts and the refreshes as one ``add_records`` call (one nested write for the
        batch, not one per item: each costs the transaction a savepoint), each delete a
        retraction. ``live``, the items at ``place`` as the transaction found them, when the
        cache holds them, answers each put's previous revision without a read. Each put's
        new revision, None for a delete, in order. Refreshes are stored so that every
        process sees the new expiries (``ttl``)."""
        specs: list[dict[str, Any]] = []
        default_ttl = (self.ttl_config or {}).get("default_ttl")
        for op in puts:
            sources = self._sources(op, place)
            if op.value is None:
                self.memory.retract(
                    f"lg-delete:{uuid.uuid4().hex}",
                    sources=sources,
                    key=item_key(op.namespace, op.key),
                    scope="branch",
                    reason="langgraph store delete",
                    namespace=self.namespace,
                )
                continue
            if live is not None:
                known = live.get(tuple(op.namespace), {}).get(op.key)
                previous = known.record if known is not None else None
            else:
                previous = self._record(op.namespace, op.key, place)
            specs.append(item_spec(op, sources, previous, default_ttl, time.time()))
        specs.extend(expiry_spec(record, expires) for record, expires in refreshes)
        news = iter(self.memory.add_records(specs, namespace=self.namespace) if specs else ())
        return [next(news) if op.value is not None else None for op in puts]

    def _sources(self, op: PutOp, place: _Place) -> list[str] | None:
        """What a put or delete is sourced at: the place's checkpoint; none in compat mode
        without one (a legacy record: compat shows it everywhere and counts it)."""
        if place.source is not None:
            return [place.source]
        if self.mode == "compat":
            return None
        raise MissingAnchor(
            f"put {op.namespace!r}/{op.key!r} has no checkpoint to be sourced at; "
            "use store.at(config), or a graph node with a BranchCheckpointer"
        )

    def _list_namespaces(self, op: ListNamespacesOp, place: _Place) -> list[tuple[str, ...]]:
        namespaces: set[tuple[str, ...]] = set()
        for found in self._visible_items(place):
            namespace = found.item.namespace
            if all(namespace_matches(c, namespace) for c in op.match_conditions or ()):
                depth = op.max_depth
                namespaces.add(namespace[:depth] if depth is not None else namespace)
        ordered = sorted(namespaces)
        return ordered[op.offset : op.offset + op.limit]
