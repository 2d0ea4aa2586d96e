"""Reads stay right while another process writes the same SQLite file.

A reader that keeps anything between calls (``_engine.viewcache``: search views and their term
indexes) must notice every commit of every process. Here the reader process never writes: the
A script of the two-tenant suite (``tests/two_worlds.py``: its history, then every operation
of the API table with its example calls, twice) runs with each write sent to another process
(``tests/step_worker.py``) on the same file, and each read made twice in the reader (the
second may use what the first kept). Every outcome must equal the same script run by one
Memory alone. A new operation joins through its line in ``two_worlds.CALLS``; the in-process
reads (``two_worlds.IN_PROCESS``: ``currents``, ``change_stamp``) are asked after the
history and again after each write, once with the default reads and once with every view
read from the key index (``path_events_per_entry=0``, the read ``currents`` answers from).
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import two_worlds as tw
from branchmem import Memory
from branchmem._engine.views import PATH_EVENTS_PER_ENTRY
from branchmem.api.codec import encode
from branchmem.api.operations import operations
from branchmem.store import open_store

WORKER = Path(__file__).with_name("step_worker.py")
SRC = Path(__file__).parent.parent / "src"


class Writer:
    """The other process: one call per line, answered in order."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        )

    def call(self, op: str, kwargs: dict[str, Any], namespace: str) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        line = json.dumps({"op": op, "kwargs": kwargs, "namespace": namespace}, default=str)
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        assert answer, f"the writer process ended at {op}"
        return dict(json.loads(answer))

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        assert self.process.wait(timeout=60) == 0


def read(memory: Memory, op: str, kwargs: dict[str, Any], namespace: str) -> dict[str, Any]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            answer: dict[str, Any] = {
                "value": encode(getattr(memory, op)(**kwargs, namespace=namespace))
            }
        except Exception as error:
            answer = {"error": type(error).__name__, "message": str(error)}
    if caught:
        answer["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    return answer


def run_split(reader: Memory, writer: Writer, steps: list[tw.Step]) -> list[tuple[str, Any]]:
    """``two_worlds.run_python``'s outcomes, reads in ``reader`` (twice, the second one kept),
    writes in ``writer``'s process."""
    table = operations()
    results: dict[str, Any] = {}
    seen = []
    for step in steps:
        kwargs = tw.resolve(step.kwargs, results)
        namespace = tw.NAMESPACES[step.who]
        if mutates(table, step.op):
            answer = writer.call(step.op, kwargs, namespace)
        else:
            first = read(reader, step.op, kwargs, namespace)
            answer = read(reader, step.op, kwargs, namespace)
            assert answer == first, (step.label, first, answer)
        if "value" in answer:
            results[step.label] = answer["value"]
        seen.append((step.label, answer))
    return seen


def mutates(table: dict[str, Any], op: str) -> bool:
    return table[op].mutates if op in table else op in tw.IN_PROCESS_WRITES


REPEATED = 12  # reads asked again after each write: the latest distinct ones
# writes that change what a search at u4 finds, after the history (the script's own writes
# mostly land off u4's path); the search is asked again after each
MOVERS: list[tuple[str, dict[str, Any]]] = [
    ("search", {"query": "movers arrive", "anchor": "u4", "k": 3}),
    ("search", {"query": "movers arrive", "anchor": "u4", "k": 3, "key": "movers"}),
    ("add_record", {"id": "m-1", "sources": ["u4"], "content": "movers arrive Tuesday"}),
    ("add_record", {"id": "m-2", "sources": ["u3"], "content": "movers arrive at nine",
                    "key": "movers"}),
    ("add_record", {"id": "m-3", "sources": ["u4"], "content": "movers arrive at ten",
                    "key": "movers"}),
    ("revise", {"id": "m-1", "content": "movers arrive Friday"}),
    ("withdraw", {"id": "m-3", "reason": "checking"}),
    ("restore", {"id": "m-3"}),
    ("supersede", {"new_id": "m-1", "old_id": "m-2"}),
    ("erase", {"id": "m-1", "reason": "wrong day"}),
]  # fmt: skip


def with_reads_again(steps: list[tw.Step]) -> list[tw.Step]:
    """The script with the latest ``REPEATED`` distinct reads asked again after each write,
    so a read whose answer a write changed is asked across that write."""
    table = operations()
    out: list[tw.Step] = []
    latest: dict[str, tw.Step] = {}
    for number, step in enumerate(steps):
        out.append(step)
        if not mutates(table, step.op):
            call = repr((step.op, step.who, step.kwargs))
            latest.pop(call, None)
            latest[call] = step
            continue
        for again in list(latest.values())[-REPEATED:]:
            out.append(tw.Step(again.who, again.op, again.kwargs, f"{again.label}@{number}"))
    return out


@pytest.mark.parametrize("per_entry", [PATH_EVENTS_PER_ENTRY, 0], ids=["default", "key-index"])
def test_reads_see_every_write_of_another_process(tmp_path: Path, per_entry: int) -> None:
    script = tw.a_script()
    at = len(tw.HISTORY)
    movers = [tw.Step("a", op, kwargs, f"m{i}:{op}") for i, (op, kwargs) in enumerate(MOVERS)]
    reads = [s for s in tw.in_process_probes() if s.op not in tw.IN_PROCESS_WRITES]
    steps = with_reads_again(script[:at] + reads + movers + script[at:])

    def opened(path: Path) -> Memory:
        return Memory(store=open_store(path), path_events_per_entry=per_entry)

    with opened(tmp_path / "alone.db") as alone:
        want = tw.run_python(alone, steps)
    if per_entry == 0:  # the in-process reads answered, not only said None
        currents = [answer for label, answer in want if label.startswith("in:currents")]
        assert any(isinstance(answer.get("value"), list) for answer in currents)
    path = tmp_path / "shared.db"
    Memory.open(path).close()  # created before either process opens it
    writer = Writer(path)
    try:
        with opened(path) as reader:
            seen = run_split(reader, writer, steps)
            kept = len(reader._views)
    finally:
        writer.close()
    assert kept, "no search view was kept: the suite did not exercise what it guards"
    assert tw.compare("split", without_counts(want), without_counts(seen)) == []


def without_counts(outcomes: list[tuple[str, Any]]) -> Any:
    """``two_worlds.normalise`` without ``report``'s decision counts: they count the calls of
    one Memory, and here the reader reads each time twice and the writer counts its own."""
    normalised = tw.normalise(outcomes)
    for label, answer in normalised:
        if label.split(":")[1].startswith("report#") and "value" in answer:
            answer["value"].pop("decisions")
    return normalised
