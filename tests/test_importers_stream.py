"""Large exports stream: values split anywhere decode the same, memory stays flat."""

from __future__ import annotations

import io
import json
import os
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from branchmem.importers import ImportProgress, load
from branchmem.importers.jsonstream import JsonReader, iter_array

SCALE = int(os.environ.get("BRANCHMEM_BENCH_SCALE", "0") or 0)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300 * max(SCALE, 1), deadline=None)
@given(st.lists(json_values, max_size=6), st.integers(1, 17), st.sampled_from(["", " ", "\n "]))
def test_any_chunking_decodes_like_json_loads(values: list[Any], chunk_size: int, gap: str) -> None:
    text = "[" + gap + ("," + gap).join(json.dumps(v, ensure_ascii=False) for v in values) + "]"
    reader = JsonReader(io.BytesIO(text.encode("utf-8")), chunk_size=chunk_size)
    assert [value for _, value in iter_array(reader)] == json.loads(text)


def write_chatgpt_export(path: Path, conversations: int, messages: int = 8) -> None:
    """A synthetic ``conversations.json``: each conversation forks once (a regenerate)."""
    with path.open("w") as out:
        out.write("[")
        for c in range(conversations):
            conversation_id = f"c{c:08d}-0000-4000-8000-000000000000"
            ids = [f"{c:08x}-{m:04x}-4000-8000-000000000000" for m in range(messages + 1)]
            mapping: dict[str, Any] = {}
            for m, node_id in enumerate(ids):
                parent = ids[m - 1] if 0 < m < messages else (ids[m - 2] if m else None)
                role = "user" if m % 2 else "assistant"
                text = f"message {m} of conversation {c}: " + "lorem ipsum " * 20
                mapping[node_id] = {
                    "id": node_id,
                    "parent": parent,
                    "children": [],
                    "message": None
                    if m == 0
                    else {
                        "id": node_id,
                        "author": {"role": role},
                        "content": {"content_type": "text", "parts": [text]},
                        "create_time": 1.7e9 + m,
                    },
                }
            for node in mapping.values():
                if node["parent"] is not None:
                    mapping[node["parent"]]["children"].append(node["id"])
            conversation = {
                "id": conversation_id,
                "title": f"conversation {c}",
                "current_node": ids[-1],
                "mapping": mapping,
            }
            out.write(("," if c else "") + json.dumps(conversation))
        out.write("]")


def streamed_peak(path: Path) -> tuple[int, int]:
    """Peak traced bytes while planning every conversation of ``path``; and events seen."""
    tracemalloc.start()
    try:
        events = sum(len(plan.events) for plan in load(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, events


def test_memory_stays_flat_as_conversations_grow(tmp_path: Path) -> None:
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    write_chatgpt_export(small, 50)
    write_chatgpt_export(large, 1000)
    small_peak, small_events = streamed_peak(small)
    large_peak, large_events = streamed_peak(large)
    assert large_events == 20 * small_events
    # Twenty times the conversations, not twenty times the memory: a whole-file read
    # would need at least the file's size.
    assert large_peak < 2 * small_peak
    assert large_peak < large.stat().st_size / 8


def test_progress_reports_bytes_up_to_the_file_size(tmp_path: Path) -> None:
    from branchmem.importers.plan import ImportSummary

    path = tmp_path / "conversations.json"
    write_chatgpt_export(path, 30)
    seen: list[ImportProgress] = []
    plan = load(path)

    class Discard:  # a sink that stores nothing, to watch progress alone
        def get_event(self, id: str, namespace: str = "default") -> Any:
            from branchmem.errors import NotFoundError

            raise NotFoundError(id)

        def add_events(self, events: Any, namespace: str = "default") -> list[Any]:
            return list(events)

        def head(self, tree: str, namespace: str = "default") -> None:
            return None

        def set_head(self, event_id: str, namespace: str = "default") -> None:
            return None

    summary = plan.apply(Discard(), progress=seen.append)  # type: ignore[arg-type]
    assert isinstance(summary, ImportSummary)
    assert [p.conversations for p in seen] == list(range(1, 31))
    assert all(p.unit == "bytes" and p.total == path.stat().st_size for p in seen)
    assert [p.done for p in seen] == sorted(p.done for p in seen)
    assert seen[-1].done == path.stat().st_size
    assert summary.events_added == 30 * 9 and summary.heads_moved == 30


@pytest.mark.skipif(not SCALE, reason="set BRANCHMEM_BENCH_SCALE to stream a 200 MB export")
def test_200_megabyte_export_streams_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    write_chatgpt_export(path, 38_000)
    size = path.stat().st_size
    assert size > 200 * 10**6
    started = time.perf_counter()
    peak, events = streamed_peak(path)
    elapsed = time.perf_counter() - started
    print(
        f"\n200MB stream: {size / 1e6:.0f} MB, {events} events, {elapsed:.1f} s, "
        f"peak {peak / 1e6:.1f} MB traced"
    )
    assert events == 38_000 * 9
    assert peak < 32 * 10**6
