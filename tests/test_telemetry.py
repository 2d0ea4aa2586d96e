"""OpenTelemetry spans of the GenAI memory conventions (the ``otel`` extra), read back with
the SDK's in-memory exporter; and no OpenTelemetry import until a traced call needs it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the SDK is in the 'test' extra")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from branchmem import Memory, NotFoundError
from branchmem._engine import telemetry


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(provider)
    yield exporter
    telemetry.configure(None)


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == name]


def test_each_record_operation_is_a_span_of_its_genai_memory_operation(
    spans: InMemorySpanExporter,
) -> None:
    memory = Memory()
    memory.add_event("u1", tree="chat", content="I'm moving to Chengdu", namespace="alice")
    memory.add_record("city", sources=["u1"], content="moving to Chengdu", namespace="alice")
    memory.revise("city", content="moving to Chengdu in May", namespace="alice")
    memory.erase("city", namespace="alice")
    (create,) = named(spans, "create_memory")
    assert dict(create.attributes or {}) == {
        "gen_ai.operation.name": "create_memory",
        "gen_ai.memory.store.id": "alice",
        "gen_ai.memory.record.id": "city",
        "gen_ai.memory.record.count": 1,
    }
    (update,) = named(spans, "update_memory")
    assert (update.attributes or {})["gen_ai.memory.record.id"] == "city"
    (delete,) = named(spans, "delete_memory")
    assert (delete.attributes or {})["gen_ai.memory.record.count"] == 1
    every = [
        str(value)
        for span in spans.get_finished_spans()
        for value in (span.attributes or {}).values()
    ]
    assert not any("Chengdu" in value for value in every)  # no text on any span


def test_a_delivered_record_links_to_the_write_that_created_it(
    spans: InMemorySpanExporter,
) -> None:
    memory = Memory()
    memory.add_event("u1", tree="chat", content="I'm moving to Chengdu")
    memory.add_records(
        [
            {"id": "city", "sources": ["u1"], "content": "moving to Chengdu"},
            {"id": "food", "sources": ["u1"], "content": "likes hotpot"},
        ]
    )
    memory.revise("food", content="likes spicy hotpot")
    memory.context("u1", session="s1", query="Chengdu")
    (create,) = named(spans, "create_memory")
    (update,) = named(spans, "update_memory")
    (search,) = named(spans, "search_memory")
    assert (search.attributes or {})["gen_ai.memory.record.count"] == 2
    linked = {
        (link.attributes or {})["gen_ai.memory.record.id"]: link.context.span_id
        for link in search.links
    }
    assert create.context is not None and update.context is not None
    assert linked == {"city": create.context.span_id, "food": update.context.span_id}


def test_a_failed_call_names_its_error_type(spans: InMemorySpanExporter) -> None:
    memory = Memory()
    with pytest.raises(NotFoundError):
        memory.search("x", "nowhere")
    (search,) = named(spans, "search_memory")
    assert (search.attributes or {})["error.type"] == "NotFoundError"


def test_tracing_off_leaves_no_span(spans: InMemorySpanExporter) -> None:
    telemetry.configure(None)
    memory = Memory()
    memory.add_event("u1", content="hello")
    memory.add_record("r", sources=["u1"], content="greeting")
    assert spans.get_finished_spans() == ()


def test_importing_branchmem_imports_no_opentelemetry() -> None:
    code = (
        "import sys, branchmem, branchmem.memory, branchmem._engine.telemetry\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
