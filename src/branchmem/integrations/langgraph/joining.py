"""Calls to one explicit-anchor view that arrive while a batch runs wait and run together
as the next batch, as LangGraph's batched async stores do: one stamp read and one write
transaction for all of them. Concurrent calls may be ordered either way, and an error fails
every call of its batch."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Iterator

from langgraph.store.base import Op, Result

_Waiting = tuple[list[Op], "asyncio.Future[list[Result]]"]  # an async call's ops and answer
Batch = Callable[[list[Op]], list[Result]]


def _shares(results: list[Result], calls: Iterable[list[Op]]) -> Iterator[list[Result]]:
    """A joined batch's results cut back into each call's (given by its ops), in order."""
    cursor = 0
    for ops in calls:
        yield results[cursor : cursor + len(ops)]
        cursor += len(ops)


class _Joining:
    """A sync call waiting to run in the next batch of an explicit-anchor view: its ops,
    then its answer (or error), or word that it leads the next batch. A call that finds no
    batch running makes none: it runs at once (``ThreadCalls.run``)."""

    __slots__ = ("error", "leads", "ops", "result", "woken")

    def __init__(self, ops: list[Op]) -> None:
        self.ops = ops
        self.result: list[Result] = []
        self.error: BaseException | None = None
        self.leads = False
        self.woken = threading.Event()


class ThreadCalls:
    """Sync calls waiting for the next batch, and the thread running one (if any)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.waiting: list[_Joining] = []
        self.leader: int | None = None

    def inside(self) -> bool:
        """Whether the calling thread is running a batch (a call made from inside it, by an
        embedder reading the store say, must run at once: it would wait for itself)."""
        return self.leader == threading.get_ident()

    def run(self, ops: list[Op], batch: Batch) -> list[Result]:
        """Sync calls made from other threads while a batch runs wait and run together as
        the next one, as async calls do. The first caller leads; when its batch is done, the
        longest-waiting caller leads the next."""
        with self.lock:
            alone = self.leader is None  # then nothing waits either (``_hand_on``)
            if alone:
                self.leader = threading.get_ident()
            else:
                mine = _Joining(ops)
                self.waiting.append(mine)
        if alone:  # the usual case: no batch runs, so this call is the batch
            try:
                return batch(ops)
            finally:
                self._hand_on()
        mine.woken.wait()
        if mine.leads:
            self._lead(batch)
        if mine.error is not None:
            raise mine.error
        return mine.result

    def _hand_on(self) -> None:
        """After a batch: the longest-waiting call leads the next one, or nobody leads."""
        with self.lock:
            self.leader = None
            if self.waiting:
                following = self.waiting[0]
                following.leads = True
                self.leader = -1  # taken: the next leader sets its own id
                following.woken.set()

    def _lead(self, batch: Batch) -> None:
        """Run every waiting call as one batch (the lead was handed to one of them), then
        hand the lead on."""
        with self.lock:
            taken, self.waiting = self.waiting, []
            self.leader = threading.get_ident()
        try:
            results = batch([op for call in taken for op in call.ops])
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


class LoopCalls:
    """Async calls waiting for the next batch, and the task running them, per event loop."""

    def __init__(self) -> None:
        self.waiting: dict[asyncio.AbstractEventLoop, list[_Waiting]] = {}
        self.flushing: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}

    async def run(self, ops: list[Op], batch: Batch) -> list[Result]:
        """Join the calls made on this loop in this tick (or while a batch runs)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[list[Result]] = loop.create_future()
        self.waiting.setdefault(loop, []).append((ops, done))
        if loop not in self.flushing:
            self.flushing[loop] = loop.create_task(self._flush(loop, batch))
        return await done

    async def _flush(self, loop: asyncio.AbstractEventLoop, batch: Batch) -> None:
        """Run the calls waiting on ``loop`` as one batch each round, until none wait."""
        try:
            await asyncio.sleep(0)  # the calls made in this tick join the first batch
            while waiting := self.waiting.pop(loop, []):
                taken = [(ops, done) for ops, done in waiting if not done.done()]
                merged = [op for ops, _ in taken for op in ops]
                try:
                    results = await asyncio.to_thread(batch, merged)
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
            del self.flushing[loop]
