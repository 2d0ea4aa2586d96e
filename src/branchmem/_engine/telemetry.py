"""Optional OpenTelemetry spans following the GenAI memory semantic conventions.

``Memory`` marks its record operations with ``@traced(operation)``: ``create_memory``
(``add_record``, ``add_records``), ``update_memory`` (``revise``), ``delete_memory``
(``erase``) and ``search_memory`` (``search``, ``context``). Each call is one ``INTERNAL``
span named after the operation, with ``gen_ai.operation.name``, ``gen_ai.memory.store.id``
(the namespace), ``gen_ai.memory.record.id`` when the call is about one record,
``gen_ai.memory.record.count`` and, on failure, ``error.type`` (the exception's class).
A search links each record it returns to the span of the write that created that revision
(link attribute ``gen_ai.memory.record.id``), when that write ran in this process.

No text is ever put on a span: query text and record content (the conventions' opt-in
``gen_ai.memory.query.text`` and ``gen_ai.memory.records``) would outlive an ``erase`` in
the trace backend. Zero cost when absent: nothing here imports OpenTelemetry at module load;
the first traced call looks for ``opentelemetry-api`` (the ``otel`` extra) once, and without
it every later call goes straight through.
"""

from __future__ import annotations

import functools
import importlib.util
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

if TYPE_CHECKING:
    from opentelemetry.trace import Span, SpanContext, Tracer, TracerProvider

F = TypeVar("F", bound=Callable[..., Any])

OPERATION: Final = "gen_ai.operation.name"
STORE: Final = "gen_ai.memory.store.id"
RECORD: Final = "gen_ai.memory.record.id"
COUNT: Final = "gen_ai.memory.record.count"
ERROR: Final = "error.type"
CREATING: Final = ("create_memory", "update_memory")  # operations whose spans are linked to
REMEMBERED: Final = 65_536  # write spans kept for links, oldest forgotten first
_UNSET: Final = object()

_tracer: Any = _UNSET  # a Tracer, None (off), or _UNSET (not looked up yet)
_writes: dict[tuple[str, str, int], SpanContext] = {}
_writes_lock = threading.Lock()


def configure(provider: TracerProvider | None) -> None:
    """Trace through ``provider`` instead of the global one; None turns tracing off."""
    global _tracer
    _tracer = None if provider is None else provider.get_tracer("branchmem")
    with _writes_lock:
        _writes.clear()


def _current() -> Tracer | None:
    global _tracer
    if _tracer is _UNSET:
        if importlib.util.find_spec("opentelemetry") is None:
            _tracer = None
        else:
            from opentelemetry import trace

            _tracer = trace.get_tracer("branchmem")
    return cast("Tracer | None", _tracer)


def traced(operation: str) -> Callable[[F], F]:
    """Run a ``Memory`` method inside a span of the GenAI memory ``operation``."""

    def wrap(method: F) -> F:
        @functools.wraps(method)
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            tracer = _current()
            if tracer is None:
                return method(self, *args, **kwargs)
            from opentelemetry.trace import SpanKind

            namespace = str(kwargs.get("namespace", "default"))
            with tracer.start_as_current_span(operation, kind=SpanKind.INTERNAL) as span:
                if not span.is_recording():
                    return method(self, *args, **kwargs)
                span.set_attribute(OPERATION, operation)
                span.set_attribute(STORE, namespace)
                try:
                    result = method(self, *args, **kwargs)
                except BaseException as error:
                    span.set_attribute(ERROR, type(error).__qualname__)
                    raise
                _describe(span, operation, namespace, args, result)
                return result

        return cast(F, run)

    return wrap


def _describe(
    span: Span, operation: str, namespace: str, args: tuple[Any, ...], result: Any
) -> None:
    """Set what the result says: the record (or how many), and links or write spans."""
    from ..model import Hit, Record
    from ..search.context import Context

    pairs: list[tuple[str, int]] = []
    if isinstance(result, Record):
        pairs = [(result.id, result.revision)]
    elif isinstance(result, Context):
        pairs = list(result.items)
    elif isinstance(result, list):
        pairs = [_pair(item) for item in result if isinstance(item, Record | Hit)]
    elif isinstance(result, set):  # erase: the ids it took
        span.set_attribute(COUNT, len(result))
        if args:
            span.set_attribute(RECORD, str(args[0]))
        return
    span.set_attribute(COUNT, len(pairs))
    if len(pairs) == 1 and operation != "search_memory":
        span.set_attribute(RECORD, pairs[0][0])
    if operation in CREATING:
        _remember(span.get_span_context(), namespace, pairs)
        return
    for record_id, revision in pairs:
        with _writes_lock:
            written = _writes.get((namespace, record_id, revision))
        if written is not None:
            span.add_link(written, {RECORD: record_id})


def _pair(item: Any) -> tuple[str, int]:
    record = item.record if hasattr(item, "record") else item
    return (record.id, record.revision)


def _remember(context: SpanContext, namespace: str, pairs: Iterable[tuple[str, int]]) -> None:
    with _writes_lock:
        for record_id, revision in pairs:
            _writes[(namespace, record_id, revision)] = context
        while len(_writes) > REMEMBERED:
            del _writes[next(iter(_writes))]
