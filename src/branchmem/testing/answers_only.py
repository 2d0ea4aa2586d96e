"""A backend that implements only the narrow contract, over another store.

What ``Store`` leaves abstract (the writers, ``answer``, the two scans, the lifecycle and the
side tables) is forwarded to an inner store; every per-item read is ``Store``'s wrapper over
``answer``. The conformance suites hold it to what the shipped backends answer, which shows
``answer`` is the one reader a backend must provide; ``bench/answer_cost.py`` times what
reading through the wrappers costs beside the inner store's own per-item reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..store.base import Store
from ..store.inmemory import InMemoryStore

# what Store leaves abstract: everything this backend implements
NARROW_CONTRACT = tuple(sorted(Store.__abstractmethods__))


def forwarding(name: str) -> Callable[..., Any]:
    """A method that calls ``inner``'s of the same name (a subclass forwards more with it)."""

    def forward(self: AnswersOnlyStore, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.inner, name)(*args, **kwargs)

    forward.__name__ = name
    return forward


class AnswersOnlyStore(Store):
    """Each abstract method forwarded to ``inner`` (a new in-memory store by default);
    nothing else defined."""

    def __init__(self, inner: Store | None = None) -> None:
        self.inner = InMemoryStore() if inner is None else inner

    locals().update({name: forwarding(name) for name in NARROW_CONTRACT})
