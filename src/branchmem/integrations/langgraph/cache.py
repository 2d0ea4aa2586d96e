"""What a BranchStore keeps between batches: answers of one state of the store, and
the TTL refreshes it has seen."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from .items import Found

if TYPE_CHECKING:
    from .ranking import Candidates


class ReadCache:
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
        self.items: dict[str, dict[tuple[str, ...], dict[str, Found]]] = {}
        # (anchor, namespace prefix, filter) -> the candidates a search ranks
        self.candidates: dict[tuple[str, tuple[str, ...], str], Candidates] = {}

    def fresh(self, generation: int) -> None:
        """Forget everything if the store has been written since it was filled. Stamps only
        grow: a reader whose stamp is older than the cache's (a write landed since its batch
        began) is served the newer state, which existed during its call, and empties nothing."""
        if generation > self.generation:
            self.generation = generation
            self.heads = {}
            self.items = {}
            self.candidates = {}

    def patch(
        self,
        anchor: str,
        before: int,
        after: int,
        live: dict[tuple[str, ...], dict[str, Found]] | None,
        written: dict[tuple[tuple[str, ...], str], Found | None],
    ) -> None:
        """After a write committed: if the cache still holds the state ``before`` it, label
        it ``after`` and patch in the items it ``written`` at ``anchor`` (None: deleted)
        over ``live``, what it held there; with no ``live`` it only empties the items (the
        threads' heads hold: writes never move one)."""
        if live is None:
            with self.lock:
                if self.generation == before:
                    self.generation, self.items, self.candidates = after, {}, {}
            return
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
        with self.lock:
            if self.generation == before:  # nothing refilled or emptied it meanwhile
                self.generation = after
                if written:
                    self.items = {anchor: patched}  # other anchors may see the items too
                    self.candidates = {}


class Refreshed(dict[tuple[str, int], float]):
    """TTL refreshes by (record id, revision), with a count of the assignments that may
    expire or revive an item: a cached candidate set built before one is rebuilt."""

    def __init__(self) -> None:
        super().__init__()
        self.version = 0

    def __setitem__(self, key: tuple[str, int], value: float) -> None:
        super().__setitem__(key, value)
        self.version += 1

    def learn(self, key: tuple[str, int], value: float) -> None:
        """Take an expiry read from the Memory (another process's refresh, say)."""
        if self.get(key) != value:
            self[key] = value

    def extend(self, key: tuple[str, int], value: float) -> None:
        """Push back the expiry of an item that is live now: no live item expires and no
        expired one revives, so the version stays."""
        super().__setitem__(key, value)
