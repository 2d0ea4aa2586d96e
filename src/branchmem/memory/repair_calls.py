"""``Memory.repair``: stale records rebuilt by a caller's deriver, which runs outside any
transaction (it may call a model) between the plan and each write-back."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .._engine import repair as queue
from .._engine.namespace import Namespace
from ..errors import BranchmemError
from ..model import Deriver, RepairItem, RepairResult

if TYPE_CHECKING:
    from . import Memory


def repair(
    memory: Memory,
    deriver: Deriver,
    anchor: str | None,
    limit: int | None,
    namespace: str,
) -> RepairResult:
    """``Memory.repair``: plan in one transaction, derive outside any, write each result
    back in its own (a record that changed meanwhile is left for the next pass)."""
    ns = memory._namespace(namespace)
    result = RepairResult()
    with memory._write(ns):
        work = queue.plan(ns, anchor, limit, result)
    for item, stale_record, shown in work.values():
        try:
            derived = deriver(stale_record, shown)
        except Exception as error:
            failed(memory, ns, item, f"{type(error).__name__}: {error}", result)
            continue
        try:
            with memory._write(ns):
                queue.done(ns, item, stale_record, derived, result)
        except BranchmemError as error:  # an unusable result: counted like a failure
            failed(memory, ns, item, f"{type(error).__name__}: {error}", result)
    with memory._read(ns):
        return replace(result, pending=queue.pending_count(ns))


def failed(
    memory: Memory, ns: Namespace, item: RepairItem, error: str, result: RepairResult
) -> None:
    with memory._write(ns):
        queue.failed(ns, item, error)
    result.failed[item.record_id] = error
