"""A LangGraph long-term ``BaseStore`` whose answers follow the checkpoint tree."""

from __future__ import annotations

import asyncio
import json
import math
import operator
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Final

from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

from ...errors import BranchmemError, InvalidInput, NotFoundError
from ...memory import Memory
from ...model import Record
from ...search.lexical import CorpusStats, bm25, corpus_stats, normalize, query_terms, rank
from .checkpointer import ASYNC_RUN, MIRRORED, BranchCheckpointer, step_event
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
# inside a batch: a slot for the stamp, read once when first needed (None: not in a batch)
_BATCH_STAMP: ContextVar[list[int] | None] = ContextVar("branchmem_langgraph_stamp", default=None)


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
    events: Sequence[dict[str, Any]] = ()


_Waiting = tuple[list[Op], "asyncio.Future[list[Result]]"]  # an async call's ops and answer


def _shares(results: list[Result], calls: Iterable[list[Op]]) -> Iterator[list[Result]]:
    """A joined batch's results cut back into each call's (given by its ops), in order."""
    cursor = 0
    for ops in calls:
        yield results[cursor : cursor + len(ops)]
        cursor += len(ops)


class _Joining:
    """A sync call waiting to run in the next batch of an explicit-anchor view: its ops,
    then its answer (or error), or word that it leads the next batch. A call that finds no
    batch running makes none: it runs at once (``BranchStore._joined``)."""

    __slots__ = ("error", "leads", "ops", "result", "woken")

    def __init__(self, ops: list[Op]) -> None:
        self.ops = ops
        self.result: list[Result] = []
        self.error: BaseException | None = None
        self.leads = False
        self.woken = threading.Event()


@dataclass(slots=True)
class _Found:
    """A visible item with the record revision that holds it."""

    item: Item
    record: Record
    words: str | None = None  # the value's text for BM25, once a query asked for it

    @property
    def text(self) -> str:
        if self.words is None:
            self.words = _text_of(self.item.value)
        return self.words

    @property
    def record_id(self) -> str:
        return self.record.id

    @property
    def revision(self) -> int:
        return self.record.revision

    @property
    def index(self) -> object:
        """The put's ``index`` argument: None (config fields), False, or paths."""
        return self.record.meta.get("index")


class _Cache:
    """Answers of one state of the store, named by a stamp every write moves: each thread's
    head and the live items seen from each anchor, by namespace. Over branchmem's in-memory
    store (no other process writes it) the stamp is ``Memory.write_generation``; over SQLite
    and PostgreSQL it is the namespace's arrival counter, which every write of any process
    draws from (one read per batch). A new stamp empties the cache, except after this
    store's own puts and deletes, which patch the items they changed (see ``_write_all``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.generation = -1
        self.heads: dict[str, str | None] = {}
        self.items: dict[str, dict[tuple[str, ...], dict[str, _Found]]] = {}
        # (anchor, namespace prefix, filter) -> the candidates a search ranks
        self.candidates: dict[tuple[str, tuple[str, ...], str], _Candidates] = {}

    def fresh(self, generation: int) -> None:
        """Forget everything if the store has been written since it was filled. Stamps only
        grow: a reader whose stamp is older than the cache's (a write landed since its batch
        began) is served the newer state, which existed during its call, and empties nothing."""
        if generation > self.generation:
            self.generation = generation
            self.heads = {}
            self.items = {}
            self.candidates = {}


class _Refreshed(dict[tuple[str, int], float]):
    """TTL refreshes by (record id, revision), with a count of the assignments that may
    expire or revive an item: a cached candidate set built before one is rebuilt."""

    def __init__(self) -> None:
        super().__init__()
        self.version = 0

    def __setitem__(self, key: tuple[str, int], value: float) -> None:
        super().__setitem__(key, value)
        self.version += 1

    def extend(self, key: tuple[str, int], value: float) -> None:
        """Push back the expiry of an item that is live now: no live item expires and no
        expired one revives, so the version stays."""
        super().__setitem__(key, value)


QUERY_MEMO: Final = 256  # ranked answers kept per candidate set (distinct queries)


class _Candidates:
    """What a search ranks at one anchor under one namespace prefix and filter, for one
    stamp of the cache: the live items in LangGraph's order (newest first), and, built on
    the first query, the lexical statistics BM25 needs, so a query costs its terms rather
    than re-reading and re-normalising every value. Ranked answers are memoised per query.
    Valid until the earliest expiry among the items (``horizon``) or a TTL assignment that
    may expire or revive one (``refreshes``)."""

    __slots__ = ("by_query", "found", "horizon", "postings", "refreshes", "stats", "texts")

    def __init__(self, found: list[_Found], horizon: float, refreshes: int) -> None:
        self.found = found
        self.horizon = horizon
        self.refreshes = refreshes
        self.texts: list[str] | None = None  # normalised values
        self.stats: CorpusStats | None = None
        self.postings: dict[str, dict[int, int]] = {}  # term -> {candidate: tf}
        self.by_query: dict[str, list[tuple[float | None, _Found]]] = {}

    def by_words(self, query: str) -> list[tuple[float | None, _Found]]:
        """``_by_words(query, self.found)``, bit for bit, from the cached statistics."""
        ranked = self.by_query.get(query)
        if ranked is None:
            ranked = self._rank(query)
            if len(self.by_query) >= QUERY_MEMO:
                self.by_query.clear()
            self.by_query[query] = ranked
        return ranked

    def _rank(self, query: str) -> list[tuple[float | None, _Found]]:
        terms = query_terms(query)
        if not terms:
            return [(None, f) for f in self.found]
        texts, stats = self.texts, self.stats
        if texts is None or stats is None:
            texts = self.texts = [normalize(f.text) for f in self.found]
            stats = self.stats = corpus_stats(texts)
        frequencies: dict[int, dict[str, int]] = {}
        document_frequencies: dict[str, int] = {}
        for term in terms:
            postings = self.postings.get(term)
            if postings is None:
                postings = {}
                for i, text in enumerate(texts):
                    count = text.count(term)
                    if count:
                        postings[i] = count
                self.postings[term] = postings
            document_frequencies[term] = len(postings)
            for i, count in postings.items():
                frequencies.setdefault(i, {})[term] = count
        hits = sorted(
            (
                (-bm25(found, len(texts[i]), document_frequencies, stats), str(i), i)
                for i, found in frequencies.items()
            )
        )
        ranked: list[tuple[float | None, _Found]] = [(-neg, self.found[i]) for neg, _, i in hits]
        ranked.extend((None, f) for i, f in enumerate(self.found) if i not in frequencies)
        return ranked


class _Index:
    """LangGraph's ``IndexConfig`` made usable: the embedder and the tokenized fields.

    Vectors are kept per (record id, revision): a revision's text never changes, so a
    vector computed once holds on every branch that sees that revision. They live in this
    process; a store reopened on a durable Memory embeds again on first search.
    """

    def __init__(self, config: IndexConfig) -> None:
        if "dims" not in config or "embed" not in config:
            raise InvalidInput("index config needs 'dims' and 'embed'")
        self.config = config
        self.dims = int(config["dims"])
        self.embeddings: Embeddings = ensure_embeddings(config["embed"])
        # SqliteStore's index config names them ``text_fields``
        options: Mapping[str, Any] = config
        fields: list[str] = options.get("fields") or options.get("text_fields") or ["$"]
        self.fields = [_path(p) for p in fields]
        distance = str(options.get("distance_type", "cosine"))
        if distance not in _SIMILARITY:
            raise InvalidInput(
                f"index distance_type {distance!r}: expected one of {sorted(_SIMILARITY)}"
            )
        self.similarity = _SIMILARITY[distance]
        self.vectors: dict[tuple[str, int], list[list[float]]] = {}
        self.lock = threading.Lock()

    def texts(self, value: Mapping[str, Any], index: object) -> list[str]:
        if index is False:
            return []
        paths = self.fields if index is None else [_path(p) for p in index]  # type: ignore[attr-defined]
        texts: list[str] = []
        for _, tokens in paths:
            texts.extend(get_text_at_path(value, tokens))
        return texts

    def vectors_of(self, found: Sequence[_Found]) -> dict[tuple[str, int], list[list[float]]]:
        """Vectors of every found item, embedding (in one call) those not seen before."""
        with self.lock:
            missing = [f for f in found if (f.record_id, f.revision) not in self.vectors]
        batch = [(f, self.texts(f.item.value, f.index)) for f in missing]
        flat = [text for _, texts in batch for text in texts]
        embedded = self.embeddings.embed_documents(flat) if flat else []
        cursor = 0
        with self.lock:
            for found_item, texts in batch:
                vectors = [list(v) for v in embedded[cursor : cursor + len(texts)]]
                cursor += len(texts)
                self.vectors[(found_item.record_id, found_item.revision)] = vectors
            return {
                (f.record_id, f.revision): self.vectors[(f.record_id, f.revision)] for f in found
            }


def _path(path: str) -> tuple[str, str | list[str]]:
    """A field path as ``get_text_at_path`` takes it ("$" is the whole value)."""
    return path, path if path == "$" else tokenize_path(path)


class BranchStore(BaseStore):
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
        self._index = _Index(index) if index is not None else None
        self.ttl_config = ttl
        # (record id, revision) -> expiry refreshed by a read; in this process only
        self._refreshed = _Refreshed()
        # reads are cached against a stamp every write moves (see _Cache); a backend with
        # neither a process-local store nor a change stamp is read every time
        self._stamped = not memory.process_local and memory.change_stamp(namespace) is not None
        self._cache = _Cache() if memory.process_local or self._stamped else None
        if config is not None:
            thread_of(config)
        self._anchor_config = config
        self._anchor: tuple[str, str | None] | None = None  # _anchor_of(config), once read
        # async calls waiting for the next batch, and the task running them, per event loop
        self._waiting: dict[asyncio.AbstractEventLoop, list[_Waiting]] = {}
        self._flushing: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
        self._start_joining()

    def _start_joining(self) -> None:
        """Sync calls waiting for the next batch, and the thread running one (if any)."""
        self._joining_lock = threading.Lock()
        self._joining: list[_Joining] = []
        self._leader: int | None = None

    @property
    def embeddings(self) -> Embeddings | None:
        """The index's embedder, as LangGraph's stores expose it."""
        return self._index.embeddings if self._index is not None else None

    def at(self, config: RunnableConfig) -> BranchStore:
        """A view of this store anchored at ``config``'s checkpoint.

        Without ``checkpoint_id`` the view follows the thread's head (its latest checkpoint,
        what ``get_state`` returns). The view shares the index and the TTL refreshes.
        """
        thread_of(config)
        view = BranchStore.__new__(type(self))
        view.__dict__.update(self.__dict__)
        view._anchor_config = config
        view._anchor = None
        view._waiting, view._flushing = {}, {}
        view._start_joining()
        return view

    # -- BaseStore ---------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        # inside a run each call stands where its caller's step does; a call made inside
        # this view's own running batch runs at once (it would otherwise wait for itself)
        if self._anchor_config is None or self._leader == threading.get_ident():
            return self._batch(ops)
        return self._joined(ops)

    def _joined(self, ops: list[Op]) -> list[Result]:
        """A view with an explicit anchor answers every caller alike: sync calls made from
        other threads while a batch runs wait and run together as the next one, as its async
        calls do (one stamp read and one write transaction for all of them; concurrent calls
        may be ordered either way, and an error fails every call of its batch). The first
        caller leads; when its batch is done, the longest-waiting caller leads the next."""
        with self._joining_lock:
            alone = self._leader is None  # then nothing waits either (``_hand_on``)
            if alone:
                self._leader = threading.get_ident()
            else:
                mine = _Joining(ops)
                self._joining.append(mine)
        if alone:  # the usual case: no batch runs, so this call is the batch
            try:
                return self._batch(ops)
            finally:
                self._hand_on()
        mine.woken.wait()
        if mine.leads:
            self._lead()
        if mine.error is not None:
            raise mine.error
        return mine.result

    def _hand_on(self) -> None:
        """After a batch: the longest-waiting call leads the next one, or nobody leads."""
        with self._joining_lock:
            self._leader = None
            if self._joining:
                following = self._joining[0]
                following.leads = True
                self._leader = -1  # taken: the next leader sets its own id
                following.woken.set()

    def _lead(self) -> None:
        """Run every waiting call as one batch (the lead was handed to one of them), then
        hand the lead on."""
        with self._joining_lock:
            taken, self._joining = self._joining, []
            self._leader = threading.get_ident()
        try:
            results = self._batch([op for call in taken for op in call.ops])
            for call, share in zip(taken, _shares(results, [c.ops for c in taken]), strict=True):
                call.result = share
        except BaseException as error:  # every call of the batch gets it, the leader's too
            for call in taken:
                call.error = error
        finally:
            self._hand_on()
            for call in taken:
                call.leads = False
                call.woken.set()

    def _batch(self, ops: list[Op]) -> list[Result]:
        self._refuse_on_event_loop()
        token = _BATCH_STAMP.set([])  # the stamp is read once per batch, when first needed
        try:
            place = self._place()
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
        loop = asyncio.get_running_loop()
        done: asyncio.Future[list[Result]] = loop.create_future()
        self._waiting.setdefault(loop, []).append((ops, done))
        if loop not in self._flushing:
            self._flushing[loop] = loop.create_task(self._flush(loop))
        return await done

    async def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        """Run the calls waiting on ``loop`` as one batch each round, until none wait."""
        try:
            await asyncio.sleep(0)  # the calls made in this tick join the first batch
            while waiting := self._waiting.pop(loop, []):
                taken = [(ops, done) for ops, done in waiting if not done.done()]
                merged = [op for ops, _ in taken for op in ops]
                try:
                    results = await asyncio.to_thread(self.batch, merged)
                except Exception as exc:
                    for _, done in taken:
                        if not done.done():
                            done.set_exception(exc)
                    continue
                shares = _shares(results, [ops for ops, _ in taken])
                for (_, done), share in zip(taken, shares, strict=True):
                    if not done.done():
                        done.set_result(share)
        finally:
            del self._flushing[loop]

    def _refuse_on_event_loop(self) -> None:
        """A sync call on the event loop inside an async run would block the loop while it
        waits for the step's checkpoint, which that same loop is saving: refuse at once, as
        LangGraph's async stores do. Outside a run nothing waits, and a sync run started on
        a thread with a running loop (a notebook) saves in worker threads: both allowed."""
        if self._anchor_config is not None:
            return
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
            self._anchor = _anchor_of(config)
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
    def _run_all(self, ops: list[Op], place: _Place) -> list[Result]:
        """Reads see the store as it was before the batch, then the puts apply in order,
        the last put of a (namespace, key) winning, as in LangGraph's own stores."""
        puts = [op for op in ops if isinstance(op, PutOp)]
        for put in puts:
            _check_put(put)
        results: list[Result] = []
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
        last: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for put in puts:
            last.pop((put.namespace, put.key), None)
            last[(put.namespace, put.key)] = put
        if last:
            self._write_all(list(last.values()), place)
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
        if record is None or self._expired(record):
            return None
        self._refresh(record, op.refresh_ttl)
        return _item(record)

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

    def _refresh(self, record: Record, wanted: bool) -> None:
        if not wanted:
            return
        ttl = record.meta.get("ttl_minutes")
        refresh = (self.ttl_config or {}).get("refresh_on_read", True)
        if refresh and isinstance(ttl, int | float):
            now = time.time()
            expires, before = now + 60.0 * float(ttl), self._expires(record)
            slot = (record.id, record.revision)
            if before is not None and now < before <= expires:
                self._refreshed.extend(slot, expires)
            else:  # it gains an expiry, or an earlier one, or revives: cached sets rebuild
                self._refreshed[slot] = expires

    # -- reads over every visible item -------------------------------------------------
    def _visible_items(self, place: _Place, prefix: tuple[str, ...] = ()) -> list[_Found]:
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
    ) -> dict[tuple[str, ...], dict[str, _Found]]:
        """Every live item seen from ``anchor``, by namespace and key, from the cache (filled
        with every item, whatever ``prefix`` asked, so that later reads find it there)."""
        return self._labelled_live(anchor)[1]

    def _labelled_live(self, anchor: str) -> tuple[int, dict[tuple[str, ...], dict[str, _Found]]]:
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

    def _read_items(self, anchor: str | None, prefix: tuple[str, ...]) -> list[_Found]:
        """The live items under ``prefix`` read from the Memory: through the key index (the
        cost of the live keys), or the whole view where only it can answer. Expired ones
        are kept: expiry is decided when they are returned."""
        records: list[Record] | None = None
        if anchor is not None:
            records = self.memory._currents(
                anchor,
                prefix=_key_prefix(prefix),
                cross_tree=self.cross_thread,
                mode=self.mode,
                namespace=self.namespace,
            )
        if records is None:
            records = self.memory.visible(
                anchor,
                kind=ITEM_KIND,
                cross_tree=self.cross_thread,
                mode=self.mode,
                namespace=self.namespace,
            )
        out = []
        for record in records:
            if record.kind != ITEM_KIND:
                continue
            item = _item(record)
            if item is not None and item.namespace[: len(prefix)] == prefix:
                out.append(_Found(item, record))
        return out

    def _search(self, op: SearchOp, place: _Place) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        candidates = self._candidates(place, prefix, op.filter)
        if candidates is not None:
            found = candidates.found
        else:
            found = _newest_first(
                [f for f in self._visible_items(place, prefix) if _matches(f.item.value, op.filter)]
            )
        window = slice(op.offset, op.offset + op.limit)
        if not op.query:
            page: list[tuple[float | None, _Found]] = [(None, f) for f in found[window]]
        elif self._index is not None:
            page = self._by_vector(op.query, found)[window]
        elif candidates is not None:
            page = candidates.by_words(op.query)[window]
        else:
            page = _by_words(op.query, found)[window]
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
    ) -> _Candidates | None:
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
        found: list[_Found] = []
        for namespace, items in live.items():
            if namespace[: len(prefix)] != prefix:
                continue
            for item in items.values():
                expires = self._expires(item.record)
                if expires is not None:
                    if expires <= now:
                        continue
                    horizon = min(horizon, expires)
                if _matches(item.item.value, conditions):
                    found.append(item)
        entry = _Candidates(_newest_first(found), horizon, refreshes)
        with cache.lock:
            if cache.generation == label:
                cache.candidates[key] = entry
        return entry

    def _by_vector(self, query: str, found: list[_Found]) -> list[tuple[float | None, _Found]]:
        """The query's similarity (``distance_type``: cosine, -l2 distance or inner product,
        as PostgresStore scores them) to each item's field vectors, the best field counting
        (LangGraph's max pooling); items with nothing embedded follow, unscored."""
        assert self._index is not None
        query_vector = self._index.embeddings.embed_query(query)
        vectors = self._index.vectors_of(found)
        scored: list[tuple[float, _Found]] = []
        unscored: list[tuple[float | None, _Found]] = []
        for f in found:
            own = vectors[(f.record_id, f.revision)]
            if own:
                scored.append((max(self._index.similarity(query_vector, v) for v in own), f))
            else:
                unscored.append((None, f))
        scored.sort(key=lambda pair: pair[0], reverse=True)
        return [*scored, *unscored]

    def _write_all(self, puts: list[PutOp], place: _Place) -> None:
        """Write a batch's items in one transaction. Where reads are cached, it also reads
        the stamp before the writes and each written item's new revision after them: if the
        cache held the store exactly as it was before, it is patched with those items (at
        this anchor) and labelled with the stamp after, once the transaction has committed,
        instead of being emptied, so an agent that writes and reads in turn does not re-read
        every live item after each write."""
        cache = self._cache
        if cache is None or not self._cached(place):
            for op in puts:
                self._write_item(op, place, None)
            return
        anchor = place.anchor
        assert anchor is not None
        written: dict[tuple[tuple[str, ...], str], _Found | None] = {}
        with self.memory.transaction(self.namespace):
            before = self._stamp_in_write()
            with cache.lock:
                live = cache.items.get(anchor) if cache.generation == before else None
            for op in puts:
                slots = live.get(tuple(op.namespace), {}) if live is not None else {}
                known = slots.get(op.key)
                self._write_item(op, place, known.record if known is not None else None)
            if live is None:
                return
            for op in puts:
                record = self._record(op.namespace, op.key, place)
                item = _item(record) if record is not None else None
                found = _Found(item, record) if item is not None and record is not None else None
                written[(tuple(op.namespace), op.key)] = found
            after = self._stamp_in_write()
        if not self._stamped:
            after += 1  # the generation this transaction's own end adds
        patched = dict(live)
        for (namespace, key), found in written.items():
            slots = dict(patched.get(namespace, {}))
            if found is not None:
                slots[key] = found
            else:
                slots.pop(key, None)
            if slots:
                patched[namespace] = slots
            else:
                patched.pop(namespace, None)
        with cache.lock:
            if cache.generation == before:  # nothing refilled or emptied it meanwhile
                cache.generation = after
                cache.items = {anchor: patched}  # other anchors may see the items too
                cache.candidates = {}

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

    def _write_item(self, op: PutOp, place: _Place, previous: Record | None) -> None:
        """The put or delete itself; ``previous``, when known, spares a read."""
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
        now = datetime.now(UTC).isoformat()
        if previous is None:
            previous = self._record(op.namespace, op.key, place)
        created = previous.meta.get("created_at") if previous is not None else None
        meta: dict[str, Any] = {
            "namespace": list(op.namespace),
            "key": op.key,
            "created_at": created if isinstance(created, str) else now,
            "updated_at": now,
        }
        if op.index is not None:
            meta["index"] = op.index if op.index is False else list(op.index)
        ttl = op.ttl if op.ttl is not None else (self.ttl_config or {}).get("default_ttl")
        if ttl is not None:
            meta["ttl_minutes"] = float(ttl)
            meta["expires_at"] = time.time() + 60.0 * float(ttl)
        self.memory.add_record(
            f"lg-item:{uuid.uuid4().hex}",
            sources=sources,
            content=_encode(op.namespace, op.key, op.value),
            kind=ITEM_KIND,
            key=key,
            meta=meta,
            namespace=self.namespace,
        )

    def _list_namespaces(self, op: ListNamespacesOp, place: _Place) -> list[tuple[str, ...]]:
        namespaces: set[tuple[str, ...]] = set()
        for found in self._visible_items(place):
            namespace = found.item.namespace
            if all(_namespace_matches(c, namespace) for c in op.match_conditions or ()):
                depth = op.max_depth
                namespaces.add(namespace[:depth] if depth is not None else namespace)
        ordered = sorted(namespaces)
        return ordered[op.offset : op.offset + op.limit]


def _anchor_of(config: RunnableConfig) -> tuple[str, str | None]:
    """The thread and checkpoint (None: the head) an explicit config names."""
    conf = configurable(config)
    thread_id = thread_of(config)
    namespace = conf.get("checkpoint_ns", ROOT_NS) or ROOT_NS
    if namespace != ROOT_NS:
        raise InvalidInput(
            f"checkpoint_ns {namespace!r}: anchor at the root graph's checkpoint; a "
            "subgraph's memory belongs to the parent step it runs in"
        )
    checkpoint_id = conf.get("checkpoint_id")
    return thread_id, str(checkpoint_id) if checkpoint_id else None


def item_key(namespace: Sequence[str], key: str) -> str:
    """The record key an item's (namespace, key) competes under: one per store slot."""
    return "langgraph:" + json.dumps([*namespace, key], ensure_ascii=False)


def _key_prefix(prefix: Sequence[str]) -> str:
    """What every ``item_key`` under the namespace ``prefix`` starts with."""
    if not prefix:
        return "langgraph:["
    return "langgraph:" + json.dumps(list(prefix), ensure_ascii=False)[:-1] + ", "


def _check_put(op: PutOp) -> None:
    """Refuse what LangGraph's stores refuse, before anything of the batch is written."""
    where = f"put {op.namespace!r}/{op.key!r}"
    if not op.namespace:  # the rest is checked by BaseStore.put, as LangGraph's stores do
        raise InvalidNamespaceError(f"{where}: namespace cannot be empty")
    if op.value is not None and not isinstance(op.value, dict):
        raise InvalidInput(f"{where}: value must be a dict, got {type(op.value).__name__}")


def _json_default(value: object) -> str:
    """Like SqliteStore and PostgresStore: datetimes as ISO 8601, UUIDs as strings."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(type(value).__name__)


def _encode(namespace: tuple[str, ...], key: str, value: Mapping[str, Any]) -> str:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(
            f"put {namespace!r}/{key!r}: value is not JSON-serializable ({exc})"
        ) from None


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


def _newest_first(found: list[_Found]) -> list[_Found]:
    """LangGraph's search order when no query ranks: the latest update first."""
    found.sort(key=lambda f: (f.item.updated_at, f.item.namespace, f.item.key), reverse=True)
    return found


def _by_words(query: str, found: list[_Found]) -> list[tuple[float | None, _Found]]:
    """BM25 (branchmem's lexical ranking) over the candidates' values; the candidates that
    share no word with the query follow, unscored, so no item is dropped by a query."""
    documents = {str(i): f.text for i, f in enumerate(found)}
    hits = rank(query, documents, max(1, len(documents)))
    matched = {hit.doc_id for hit in hits}
    ranked: list[tuple[float | None, _Found]] = [
        (hit.score, found[int(hit.doc_id)]) for hit in hits
    ]
    ranked.extend((None, f) for i, f in enumerate(found) if str(i) not in matched)
    return ranked


def _text_of(value: Any) -> str:
    if isinstance(value, Mapping):
        return " ".join(_text_of(v) for v in value.values())
    if isinstance(value, list | tuple):
        return " ".join(_text_of(v) for v in value)
    return "" if value is None else str(value)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _inner_product(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=False))


def _negative_l2(a: Sequence[float], b: Sequence[float]) -> float:
    """Minus the Euclidean distance: higher is closer, as PostgresStore's l2 score."""
    return -math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=False)))


_SIMILARITY: Final[dict[str, Callable[[Sequence[float], Sequence[float]], float]]] = {
    "cosine": _cosine,
    "l2": _negative_l2,
    "inner_product": _inner_product,
}


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


def _ordered(compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """An ordering comparison that, like PostgreSQL's JSONB, fails on a missing value."""

    def holds(actual: Any, operand: Any) -> bool:
        if actual is None or isinstance(actual, bool) != isinstance(operand, bool):
            return False
        if isinstance(actual, int | float) and isinstance(operand, int | float):
            return compare(actual, operand)
        if isinstance(actual, str) and isinstance(operand, str):
            return compare(actual, operand)
        return False

    return holds


_OPERATORS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": _ordered(operator.gt),
    "$gte": _ordered(operator.ge),
    "$lt": _ordered(operator.lt),
    "$lte": _ordered(operator.le),
}


def _at_path(value: Mapping[str, Any], key: str) -> Any:
    """``value[key]``, or for a dotted key absent as such, the nested field it names."""
    if key in value or "." not in key:
        return value.get(key)
    current: Any = value
    for part in key.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def _matches(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter language: exact (nested) match or ``$eq``/``$ne``/``$gt``...,
    keys may be dotted paths into nested values."""
    return all(_compare(_at_path(value, k), wanted) for k, wanted in (conditions or {}).items())


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
