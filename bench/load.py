"""Load: two ``branchmem serve`` workers on one PostgreSQL, many concurrent clients.

    python bench/load.py                      # 50 clients, 60 s, embedded PostgreSQL
    python bench/load.py --dsn postgresql://user@host/db --clients 50 --seconds 60
    python bench/load.py --seconds 20 --kill-after 8   # SIGKILL one worker mid-load

Each client owns one conversation (its own tree; ten namespaces shared by five clients
each) and loops: add an event below its last one, every second turn add a record built on
it, then read (``visible`` at its tip, or ``search``). Every client knows both workers and
prefers one (half each); a request that cannot reach a worker goes to the other. A write
counts as acknowledged only when a worker answered it. At the end every acknowledged event
and record is read back from each live worker; anything missing is "lost".

Printed: requests, errors, lost writes, throughput, p50/p99 per operation and overall;
written to bench/results/load.json (``--out``) with the machine, date and load average.
``run()`` is what ``tests/test_server_load.py`` calls with a short duration.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from branchmem import Memory
from branchmem.client import Client
from branchmem.server.keys import KeyRing
from pgserver import database, server

NAMESPACES = 10


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Worker:
    """One ``branchmem serve`` process."""

    dsn: str
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        handle, name = tempfile.mkstemp(prefix="branchmem-worker-", suffix=".log")
        self.log = Path(name)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "branchmem.cli", "serve", "--db", self.dsn,
             "--port", str(self.port), "--log-level", "warning"],
            stdout=handle, stderr=subprocess.STDOUT,
        )  # fmt: skip
        os.close(handle)

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"worker on {self.port} exited:\n{self.log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"worker on {self.port} did not start:\n{self.log_tail()}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.log is not None:
            self.log.unlink(missing_ok=True)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self) -> str:
        if self.log is None or not self.log.exists():
            return "(no log)"
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])


@dataclass
class LoadResult:
    """What a run measured. Latencies in seconds, per operation."""

    seconds: float
    clients: int
    latencies: dict[str, list[float]]
    errors: list[str]
    acknowledged: int
    lost: list[str]
    failovers: int
    killed: bool

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.latencies.values())

    def percentile(self, q: float, op: str | None = None) -> float:
        values = sorted(
            self.latencies.get(op, []) if op else [x for v in self.latencies.values() for x in v]
        )
        if not values:
            return float("nan")
        return values[min(len(values) - 1, int(q * len(values)))]

    def summary(self) -> str:
        lines = [
            f"{self.clients} clients, {self.seconds:.0f} s, 2 workers"
            + (", one killed mid-load" if self.killed else ""),
            f"requests: {self.requests:,} ({self.requests / self.seconds:,.0f}/s), "
            f"errors: {len(self.errors)}, acknowledged writes: {self.acknowledged:,}, "
            f"lost: {len(self.lost)}, failovers: {self.failovers}",
            f"{'operation':<12} {'count':>8} {'p50 ms':>8} {'p99 ms':>8}",
        ]
        for op in sorted(self.latencies):
            lines.append(
                f"{op:<12} {len(self.latencies[op]):>8,} "
                f"{1000 * self.percentile(0.5, op):>8.1f} {1000 * self.percentile(0.99, op):>8.1f}"
            )
        lines.append(
            f"{'all':<12} {self.requests:>8,} {1000 * self.percentile(0.5):>8.1f} "
            f"{1000 * self.percentile(0.99):>8.1f}"
        )
        lines.extend(f"  error: {e}" for e in self.errors[:10])
        lines.extend(f"  lost: {item}" for item in self.lost[:10])
        return "\n".join(lines)

    def figures(self) -> dict[str, Any]:
        """What ``summary`` prints, as JSON (bench/results/load.json)."""
        operations = {
            op: {
                "count": len(values),
                "p50_ms": 1000 * self.percentile(0.5, op),
                "p99_ms": 1000 * self.percentile(0.99, op),
            }
            for op, values in sorted(self.latencies.items())
        }
        return {
            "clients": self.clients,
            "workers": 2,
            "seconds": self.seconds,
            "requests": self.requests,
            "requests_per_s": self.requests / self.seconds,
            "errors": len(self.errors),
            "acknowledged": self.acknowledged,
            "lost": len(self.lost),
            "failovers": self.failovers,
            "killed": self.killed,
            "operations": operations,
            "all": {
                "p50_ms": 1000 * self.percentile(0.5),
                "p99_ms": 1000 * self.percentile(0.99),
            },
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}",
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load": os.getloadavg(),
        }


class LoadClient(threading.Thread):
    """One conversation: write, build on it, read; until told to stop."""

    def __init__(self, index: int, urls: list[str], api_key: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.index = index
        self.namespace = f"load{index % NAMESPACES}"
        preferred = urls if index % 2 == 0 else list(reversed(urls))
        self.client = Client(preferred, api_key, timeout=30.0, retries=3)
        self.stop_event = stop
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.events: list[str] = []
        self.records: list[str] = []

    def timed(self, op: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            result = call(*args, **kwargs)
        except Exception as error:  # every failure is counted, none may pass silently
            self.errors.append(f"client {self.index} {op}: {type(error).__name__}: {error}")
            return None
        self.latencies[op].append(time.perf_counter() - started)
        return result

    def run(self) -> None:
        ns = self.namespace
        client = self.client
        turn = 0
        while not self.stop_event.is_set():
            event_id = f"c{self.index}-e{turn}"
            parent = self.events[-1] if self.events else None
            content = f"message {turn} of client {self.index}"
            added = self.timed(
                "add_event", client.add_event, event_id, parent, content=content, namespace=ns
            )
            if added is not None:
                self.events.append(event_id)
            if added is not None and turn % 2 == 0:
                record_id = f"c{self.index}-r{turn}"
                made = self.timed(
                    "add_record", client.add_record, record_id, sources=[event_id],
                    content=f"fact {turn} of {self.index}", namespace=ns,
                )  # fmt: skip
                if made is not None:
                    self.records.append(record_id)
            if self.events:
                tip = self.events[-1]
                if turn % 3 == 2:
                    self.timed("search", client.search, "fact", tip, namespace=ns)
                else:
                    self.timed("visible", client.visible, tip, namespace=ns)
            turn += 1

    def missing_on(self, url: str, api_key: str) -> list[str]:
        """Acknowledged writes this client cannot read back from ``url``."""
        if not self.events:
            return []
        with Client(url, api_key, retries=1) as reader:
            tip = self.events[-1]
            on_path = {e.id for e in reader.path(tip, namespace=self.namespace)}
            shown = {r.id for r in reader.visible(tip, namespace=self.namespace)}
        lost = [e for e in self.events if e not in on_path]
        lost += [r for r in self.records if r not in shown]
        return [f"{url} {self.namespace}/{item}" for item in lost]


@contextlib.contextmanager
def workers(dsn: str, count: int = 2) -> Iterator[list[Worker]]:
    started = [Worker(dsn) for _ in range(count)]
    try:
        for worker in started:
            worker.start()
        for worker in started:
            worker.wait_ready()
        yield started
    finally:
        for worker in started:
            worker.stop()


def run(
    dsn: str, *, clients: int = 50, seconds: float = 60.0, kill_after: float | None = None
) -> LoadResult:
    """Migrate ``dsn``, start two workers, load them, verify every acknowledged write."""
    with Memory.open(dsn, migrate=True) as memory:
        api_key, _ = KeyRing(memory).create("load", ["load*"])
    with workers(dsn) as (first, second):
        urls = [first.url, second.url]
        stop = threading.Event()
        loaders = [LoadClient(i, urls, api_key, stop) for i in range(clients)]
        started = time.perf_counter()
        for loader in loaders:
            loader.start()
        if kill_after is not None:
            time.sleep(kill_after)
            first.kill()  # SIGKILL: no graceful shutdown, requests in flight are cut
            time.sleep(max(0.0, seconds - kill_after))
        else:
            time.sleep(seconds)
        stop.set()
        for loader in loaders:
            loader.join(timeout=60)
        elapsed = time.perf_counter() - started
        live = [w.url for w in (first, second) if w.alive]
        lost = [
            item for loader in loaders for url in live for item in loader.missing_on(url, api_key)
        ]
        latencies: dict[str, list[float]] = defaultdict(list)
        for loader in loaders:
            for op, values in loader.latencies.items():
                latencies[op].extend(values)
            loader.client.close()
        return LoadResult(
            seconds=elapsed,
            clients=clients,
            latencies=dict(latencies),
            errors=[e for loader in loaders for e in loader.errors],
            acknowledged=sum(len(loader.events) + len(loader.records) for loader in loaders),
            lost=lost,
            failovers=sum(loader.client.failovers for loader in loaders),
            killed=kill_after is not None,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dsn", help="postgresql:// URL of an empty database (default: embedded)")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--kill-after", type=float, help="SIGKILL one worker after this long")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "load.json"))
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        dsn = args.dsn or stack.enter_context(
            database(stack.enter_context(server(None)), "branchmem_load")
        )
        result = run(dsn, clients=args.clients, seconds=args.seconds, kill_after=args.kill_after)
    print(result.summary())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result.figures(), indent=2))
    return 0 if not result.errors and not result.lost else 1


if __name__ == "__main__":
    raise SystemExit(main())
