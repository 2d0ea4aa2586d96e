"""How long a test may wait for something: a safety net that grows with the machine's load.

A test waits for an event (a ready line, a health check, a thread that ends), never for a
while; the timeout only stops a test that would otherwise hang. A fixed 10 s is not enough
on a machine held at load 8 on 2 cores (CI has taken 38 min for an 8 min suite), so every
wait here is at least ``FLOOR`` seconds and is multiplied by the load per core, read when
the wait begins (the one-minute average lags a load that has just begun: hence the floor).

``scaled(s)``: the timeout for an event that takes about ``s`` on an idle machine;
``deadline(s)``: the same as a ``time.monotonic()`` instant; ``wait_until(ready, s, what)``:
poll ``ready`` until it is true, or fail naming ``what``; ``bound(s, below)``: a limit a test
asserts a duration stays under (``s`` times the load per core, kept under ``below``, the
duration it must tell apart: a timeout the code under test must not wait for).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

FLOOR = 60.0  # seconds: no safety net is shorter than this
POLL = 0.02  # seconds between two looks at a condition


def load_factor() -> float:
    """The one-minute load average per core, at least 1 (1 where there is no load average)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 1.0
    return max(1.0, load / (os.cpu_count() or 1))


def scaled(seconds: float = FLOOR) -> float:
    """A timeout for what takes about ``seconds`` on an idle machine: at least ``FLOOR``,
    times the load per core."""
    return max(float(seconds), FLOOR) * load_factor()


def bound(seconds: float, below: float) -> float:
    """An asserted upper limit on a duration: ``seconds`` times the load per core, but
    always under ``below``, so a loaded machine cannot make the assertion pass for the
    wrong reason."""
    assert seconds < below
    return min(seconds * load_factor(), below)


def deadline(seconds: float = FLOOR) -> float:
    """``time.monotonic()`` plus ``scaled(seconds)``."""
    return time.monotonic() + scaled(seconds)


def wait_until(ready: Callable[[], object], seconds: float = FLOOR, what: str = "") -> None:
    """Call ``ready`` every ``POLL`` seconds until it returns something true; an
    ``AssertionError`` naming ``what`` when ``scaled(seconds)`` passes first."""
    budget = scaled(seconds)
    limit = time.monotonic() + budget
    while not ready():
        if time.monotonic() > limit:
            raise AssertionError(f"timed out after {budget:.0f} s waiting for {what}")
        time.sleep(POLL)


class Clock:
    """A store's wall clock (``time.time`` in ``integrations/langgraph/gated.py``), moved by
    the test alone: a 60 ms TTL does not run out between two calls on a loaded machine."""

    def __init__(self) -> None:
        self.now = time.time()

    def time(self) -> float:
        return self.now


def wait_until_serving(server: Any, url: str, seconds: float = 30) -> None:
    """Wait until ``branchmem serve`` (``server``, a ``subprocess.Popen``) answers
    ``url``/healthz; an ``AssertionError`` when it exits first or ``scaled(seconds)`` passes."""
    import httpx

    limit = deadline(seconds)
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=scaled(10)).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert server.poll() is None and time.monotonic() < limit, "serve did not start"
        time.sleep(0.1)
