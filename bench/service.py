"""What the service costs over embedded calls: one client, one SQLite store, depth ~200.

    python bench/service.py [--records 30000] [--rounds 3000] [--warmup 200] [--runs 1]

Builds one SQLite file of chat-like conversations (``chatlike.py``), starts ``branchmem
serve`` on it (a subprocess on loopback, with an API key, as deployed) and opens the same
file embedded in this process. Anchors are main-line events at depth 200. After one untimed
pass over every anchor on both sides and ``--warmup`` untimed rounds, interleaved rounds
(the order within a round alternates) time ``Memory.visible(anchor)`` against
``Client.visible(anchor)`` and ``Memory.search`` against ``Client.search``, check that both
answered the same, and print p50/p99 of each and the ratio service / embedded (goal: p99
ratio <= 1.5 for both), and the CPU each call used (client and server processes for the
service), which unlike latency does not grow with what else the machine runs, and the HTTP
stack the server runs (httptools and uvloop when installed, else h11 and asyncio).

``--hop`` times a third side in the same rounds (the order within a round then rotates over
the three): the same call made by a second process on the same file, asked and answered over
a bare loopback socket (a line with the operation, a line with the number of records back;
no HTTP, no JSON). What it costs over embedded is what any out-of-process service pays on
this machine (a wake-up each way, caches the other process has cooled) before a byte of
HTTP is parsed: about what the service's ratio would be with no HTTP and no JSON at all.

``--cpus 0`` pins this process, the server and the hop to the CPUs listed (Linux): a
diagnosis, not the measurement as deployed. On one CPU a process the socket wakes runs
where its caller runs as soon as the caller waits; on several, the kernel wakes it on an
idle CPU, which on a virtual machine may first have to be woken by its host.

``--compare no-direct`` times another server in the same rounds, a process of its own on the
same file, to show what a piece of the server buys: ``no-direct`` answers every read through
its FastAPI route (``create_app(direct_reads=False)``: no ``server/direct.py``). It is
reported beside the service: p50, p99, their ratios to embedded, and the CPU a call used.

``--runs N`` repeats the measurement N times on the one store, each run with a fresh server
process and a freshly opened embedded store (each warmed up as above), prints every run's
p99 ratios and whether all N stayed within the goal. p99 of 3,000 rounds is the 30th
slowest call: one stall of the machine moves it little. Writes JSON to
bench/results/service.json.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from branchmem import Memory
from branchmem.client import Client
from branchmem.server.keys import KeyRing
from chatlike import conversations
from load import Worker

NAMESPACE = "bench"
QUERIES = ["turn", "abandoned edit", "summary", "conversation fork", "turn 150"]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def build(path: str, records: int) -> list[str]:
    """The store at ``path``; returns the depth-200 anchors, one per conversation."""
    anchors: list[str] = []
    with Memory.open(path) as mem:
        for conv in conversations(records):
            mem.add_events(conv.events, namespace=NAMESPACE)
            mem.add_records(conv.records, namespace=NAMESPACE)
            anchors.append(conv.main_line[200])
    return anchors


def http_stack() -> str:
    """What ``branchmem serve`` runs in this environment (the server runs in the same one)."""
    parser = "httptools" if importlib.util.find_spec("httptools") else "h11"
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    return f"uvicorn with {parser} and {loop}"


def server_cpu(pid: int) -> float | None:
    """CPU seconds the server process has used (Linux /proc), or None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


VARIANTS = {
    "no-direct": "every read through its FastAPI route",
}


@dataclass
class VariantWorker(Worker):
    """A server of ``--compare``: the same store, served as ``variant`` says."""

    variant: str = "no-direct"

    def start(self) -> None:
        handle, name = tempfile.mkstemp(prefix="branchmem-variant-", suffix=".log")
        self.log = Path(name)
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve-variant", self.variant, self.dsn,
             "--port", str(self.port)],
            stdout=handle, stderr=subprocess.STDOUT,
        )  # fmt: skip
        os.close(handle)


def serve_variant(variant: str, path: str, port: int) -> int:
    """The server of ``VariantWorker``, as ``branchmem serve`` runs one but for ``variant``."""
    import uvicorn

    from branchmem.server import create_app

    with Memory.open(path) as mem:
        app = create_app(mem, direct_reads=variant != "no-direct")
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
    return 0


class Hop:
    """The same calls made by a second process on the same file (``--hop``): asked and
    answered over a bare loopback socket, a line each way."""

    def __init__(self, path: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--hop-server", path], stdout=subprocess.PIPE
        )
        assert self.process.stdout is not None
        port = int(self.process.stdout.readline())  # once the store is open
        self.socket = socket.create_connection(("127.0.0.1", port))
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.answers = self.socket.makefile("rb")

    def call(self, op: str, *args: str) -> int:
        """How many records ``op`` answered in the other process."""
        self.socket.sendall("\t".join((op, *args)).encode() + b"\n")
        return int(self.answers.readline())

    def close(self) -> None:
        self.answers.close()
        self.socket.close()  # the server's loop ends at the end of its input
        self.process.wait(timeout=30)


def hop_server(path: str) -> int:
    """The other process of ``Hop``: one connection, one call per line, answered by count."""
    with Memory.open(path) as mem, socket.create_server(("127.0.0.1", 0)) as listener:
        print(listener.getsockname()[1], flush=True)
        connection, _ = listener.accept()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with connection, connection.makefile("rb") as lines:
            for line in lines:
                op, *args = line.rstrip(b"\n").decode().split("\t")
                connection.sendall(b"%d\n" % len(getattr(mem, op)(*args, namespace=NAMESPACE)))
    return 0


Timings = dict[str, dict[str, list[float]]]


def cpu_keys(side: str) -> tuple[str, str]:
    """Where a side's CPU is kept: this process's share, then the other process's."""
    if side == "service":
        return "client", "server"
    if side == "hop":
        return "hop_client", "hop"
    return f"{side}_client", f"{side}_server"


def measure(
    mem: Memory,
    services: dict[str, tuple[Client, int]],
    anchors: list[str],
    rounds: int,
    warmup: int,
    hop: Hop | None = None,
) -> tuple[Timings, Timings]:
    """Per operation: one untimed pass over every anchor on every side (each process has
    its own caches: all start warm) and ``warmup`` untimed rounds, then interleaved rounds.
    ``services`` maps a side (``service``, then any ``--compare`` variant) to its client
    and its server's pid. Returns wall-clock latencies and CPU seconds per call; a service
    call's CPU is this process's (the client) plus the server's share of its CPU over the
    rounds, which a loaded machine does not inflate (the hop's likewise)."""
    wall: Timings = {}
    cpu: Timings = {}
    sides = ["embedded", *services] + (["hop"] if hop is not None else [])
    others = {side: pid for side, (_, pid) in services.items()}
    if hop is not None:
        others["hop"] = hop.process.pid
    for op in ("visible", "search"):
        rng = random.Random(1)
        wall[op] = {side: [] for side in sides}
        cpu[op] = {"embedded": []} | {key: [] for side in others for key in cpu_keys(side)}
        before: dict[str, float] = {}
        untimed = len(anchors) + warmup
        for index in range(untimed + rounds):
            timed = index >= untimed
            if index == untimed:
                before = {side: server_cpu(pid) or 0.0 for side, pid in others.items()}
            anchor = anchors[index] if index < len(anchors) else rng.choice(anchors)
            query = rng.choice(QUERIES)
            args = (anchor,) if op == "visible" else (query, anchor)
            calls: dict[str, Callable[[], Any]] = {
                "embedded": functools.partial(getattr(mem, op), *args, namespace=NAMESPACE)
            }
            for side, (client, _) in services.items():
                calls[side] = functools.partial(getattr(client, op), *args, namespace=NAMESPACE)
            if hop is not None:
                calls["hop"] = functools.partial(hop.call, op, *args)
            turn = index % len(sides)  # each side first in as many rounds as the others
            answers = {}
            for side in sides[turn:] + sides[:turn]:
                cpu_started = time.process_time()
                started = time.perf_counter()
                answers[side] = calls[side]()
                elapsed = time.perf_counter() - started
                used = time.process_time() - cpu_started
                if timed:
                    wall[op][side].append(elapsed)
                    cpu[op][side if side == "embedded" else cpu_keys(side)[0]].append(used)
            for side in services:
                if answers[side] != answers["embedded"]:
                    raise SystemExit(f"{op} at {anchor!r}: {side} answered differently")
            if hop is not None and answers["hop"] != len(answers["embedded"]):
                raise SystemExit(f"{op} at {anchor!r}: the hop's process answered differently")
        for side, pid in others.items():
            after = server_cpu(pid)
            if after is not None:
                cpu[op][cpu_keys(side)[1]] = [(after - before[side]) / rounds]
    return wall, cpu


GOAL = 1.5  # service p99 / embedded p99, every operation, every run


def one_run(
    path: str,
    anchors: list[str],
    rounds: int,
    warmup: int,
    with_hop: bool = False,
    compare: tuple[str, ...] = (),
) -> tuple[list[dict[str, Any]], int]:
    """One measurement with fresh servers (and hop process) and a freshly opened embedded
    store: a row per operation, and how many records ``visible`` returns."""
    with Memory.open(path) as mem:
        api_key, _ = KeyRing(mem).create("bench", [NAMESPACE])
        workers = {"service": Worker(path)} | {
            variant: VariantWorker(path, variant=variant) for variant in compare
        }
        for worker in workers.values():
            worker.start()
        hop = Hop(path) if with_hop else None
        try:
            with contextlib.ExitStack() as clients:
                services: dict[str, tuple[Client, int]] = {}
                for side, worker in workers.items():
                    worker.wait_ready()
                    assert worker.process is not None
                    client = clients.enter_context(Client(worker.url, api_key))
                    services[side] = (client, worker.process.pid)
                visible_size = len(mem.visible(anchors[0], namespace=NAMESPACE))
                timings, cpu = measure(mem, services, anchors, rounds, warmup, hop)
        finally:
            for worker in workers.values():
                worker.stop()
            if hop is not None:
                hop.close()
    return summarise(timings, cpu, compare), visible_size


def summarise(
    timings: Timings, cpu: Timings, compare: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    rows = []
    for op, sides in timings.items():
        row: dict[str, Any] = {"operation": op}
        for side, values in sides.items():
            row[f"{side}_p50_ms"] = 1000 * percentile(values, 0.5)
            row[f"{side}_p99_ms"] = 1000 * percentile(values, 0.99)
        row["ratio_p50"] = row["service_p50_ms"] / row["embedded_p50_ms"]
        row["ratio_p99"] = row["service_p99_ms"] / row["embedded_p99_ms"]
        spent = cpu[op]
        row["embedded_cpu_ms"] = 1000 * statistics.mean(spent["embedded"])
        row["client_cpu_ms"] = 1000 * statistics.mean(spent["client"])
        row["server_cpu_ms"] = 1000 * spent["server"][0] if spent["server"] else None
        if row["server_cpu_ms"] is not None:
            service_cpu = row["client_cpu_ms"] + row["server_cpu_ms"]
            row["cpu_ratio"] = service_cpu / row["embedded_cpu_ms"]
        if "hop" in sides:
            row["hop_ratio_p50"] = row["hop_p50_ms"] / row["embedded_p50_ms"]
            row["hop_ratio_p99"] = row["hop_p99_ms"] / row["embedded_p99_ms"]
            row["hop_cpu_ms"] = 1000 * (
                statistics.mean(spent["hop_client"]) + (spent["hop"][0] if spent["hop"] else 0)
            )
        for variant in compare:
            row[f"{variant}_ratio_p50"] = row[f"{variant}_p50_ms"] / row["embedded_p50_ms"]
            row[f"{variant}_ratio_p99"] = row[f"{variant}_p99_ms"] / row["embedded_p99_ms"]
            row[f"{variant}_client_cpu_ms"] = 1000 * statistics.mean(spent[f"{variant}_client"])
            server = spent[f"{variant}_server"]
            row[f"{variant}_server_cpu_ms"] = 1000 * server[0] if server else None
        rows.append(row)
    return rows


def print_rows(rows: list[dict[str, Any]], compare: tuple[str, ...] = ()) -> None:
    print(
        f"{'operation':<10} {'embedded p50':>13} {'p99':>8} {'service p50':>12} {'p99':>8} "
        f"{'ratio p50':>10} {'p99':>6}"
    )
    for row in rows:
        print(
            f"{row['operation']:<10} {row['embedded_p50_ms']:>10.2f} ms "
            f"{row['embedded_p99_ms']:>8.2f} {row['service_p50_ms']:>9.2f} ms "
            f"{row['service_p99_ms']:>8.2f} {row['ratio_p50']:>9.2f}x {row['ratio_p99']:>5.2f}x"
        )
    print("CPU per call (mean ms): embedded | service = client + server | ratio")
    for row in rows:
        server = row["server_cpu_ms"]
        print(
            f"{row['operation']:<10} {row['embedded_cpu_ms']:>6.2f} | "
            f"{row['client_cpu_ms']:.2f} + "
            + ("n/a" if server is None else f"{server:.2f} | {row['cpu_ratio']:.2f}x")
        )
    if "hop_p99_ms" in rows[0]:
        print("the hop (the same call in another process, over a bare socket): p50, p99, ratios")
        for row in rows:
            print(
                f"{row['operation']:<10} {row['hop_p50_ms']:>10.2f} ms "
                f"{row['hop_p99_ms']:>8.2f} {row['hop_ratio_p50']:>9.2f}x "
                f"{row['hop_ratio_p99']:>5.2f}x; CPU {row['hop_cpu_ms']:.2f} ms"
            )
    for variant in compare:
        print(f"{variant} ({VARIANTS[variant]}): p50, p99, ratios; CPU client + server")
        for row in rows:
            server = row[f"{variant}_server_cpu_ms"]
            print(
                f"{row['operation']:<10} {row[f'{variant}_p50_ms']:>10.2f} ms "
                f"{row[f'{variant}_p99_ms']:>8.2f} {row[f'{variant}_ratio_p50']:>9.2f}x "
                f"{row[f'{variant}_ratio_p99']:>5.2f}x; CPU "
                f"{row[f'{variant}_client_cpu_ms']:.2f} + "
                + ("n/a" if server is None else f"{server:.2f}")
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=3000, help="timed rounds per run")
    parser.add_argument("--warmup", type=int, default=200, help="untimed rounds first")
    parser.add_argument("--runs", type=int, default=1, help="measurements, each fresh")
    parser.add_argument(
        "--hop", action="store_true", help="also time the same call in a second process"
    )
    parser.add_argument(
        "--compare",
        default="",
        help=f"also time these servers, comma-separated: {', '.join(VARIANTS)}",
    )
    parser.add_argument(
        "--cpus", help="pin every process to these CPUs, e.g. 0 or 0,1 (Linux; a diagnosis)"
    )
    parser.add_argument("--hop-server", metavar="PATH", help=argparse.SUPPRESS)
    parser.add_argument(
        "--serve-variant", nargs=2, metavar=("VARIANT", "PATH"), help=argparse.SUPPRESS
    )
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "service.json"))
    args = parser.parse_args()
    if args.hop_server:
        return hop_server(args.hop_server)
    if args.serve_variant:
        return serve_variant(*args.serve_variant, args.port)
    compare = tuple(variant for variant in args.compare.split(",") if variant)
    unknown = [variant for variant in compare if variant not in VARIANTS]
    if unknown or len(set(compare)) < len(compare):
        parser.error(f"--compare {args.compare!r}: each of {', '.join(VARIANTS)} at most once")
    if args.cpus:
        try:
            cpus = {int(cpu) for cpu in args.cpus.split(",")}
            os.sched_setaffinity(0, cpus)  # the server and the hop inherit it
        except (ValueError, OSError, AttributeError) as error:
            parser.error(f"--cpus {args.cpus!r}: {error}")
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="branchmem-service-") as folder:
        path = os.path.join(folder, "service.db")
        started = time.perf_counter()
        anchors = build(path, args.records)
        built = time.perf_counter() - started
        print(
            f"{args.records:,} records in {len(anchors)} conversations (built in {built:.1f} s), "
            f"SQLite, anchors at depth 200, {args.rounds} interleaved rounds after "
            f"{args.warmup} untimed, {http_stack()}"
            + (f", every process pinned to CPUs {args.cpus}" if args.cpus else "")
            + (f", compared with {', '.join(compare)}" if compare else "")
        )
        for number in range(1, args.runs + 1):
            rows, visible_size = one_run(path, anchors, args.rounds, args.warmup, args.hop, compare)
            load = os.getloadavg()
            ratios = {row["operation"]: row["ratio_p99"] for row in rows}
            print(
                f"\nrun {number}/{args.runs}: visible returns ~{visible_size} records, "
                f"load average {load[0]:.2f}; p99 ratio "
                + ", ".join(f"{op} {ratio:.2f}x" for op, ratio in ratios.items())
                + (
                    "; the hop's "
                    + ", ".join(f"{row['operation']} {row['hop_ratio_p99']:.2f}x" for row in rows)
                    if args.hop
                    else ""
                )
                + "".join(
                    f"; {variant}'s "
                    + ", ".join(
                        f"{row['operation']} {row[f'{variant}_ratio_p99']:.2f}x" for row in rows
                    )
                    for variant in compare
                )
            )
            print_rows(rows, compare)
            runs.append({"load": load, "visible_size": visible_size, "rows": rows})
    worst = [max(row["ratio_p99"] for row in run["rows"]) for run in runs]
    within = all(ratio <= GOAL for ratio in worst)
    print(
        "\np99 ratio service / embedded, worst operation per run: "
        + " ".join(f"{ratio:.2f}" for ratio in worst)
        + f"; all {len(runs)} <= {GOAL}: {'yes' if within else 'no'}"
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            {
                "records": args.records,
                "conversations": len(anchors),
                "rounds": args.rounds,
                "warmup": args.warmup,
                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
                f"Python {platform.python_version()}",
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "http": http_stack(),
                "goal_p99_ratio": GOAL,
                "hop": args.hop,
                "compare": list(compare),
                "cpus": args.cpus,
                "worst_p99_ratio_per_run": worst,
                "all_within_goal": within,
                # the run with the worst ratio, as bench/figures.py reads one run's rows
                "rows": runs[worst.index(max(worst))]["rows"],
                "runs": runs,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
