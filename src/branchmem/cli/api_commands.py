"""One command per routed ``MemoryAPI`` method, built from the operation table.

The command is the method's name with dashes (``get_event`` -> ``get-event``). What the
Python call takes positionally, the command takes as arguments, in the same order
(``mem.explain("f1", "u2b")`` -> ``branchmem explain f1 u2b``); keyword parameters are
options named after them (``cross_tree`` -> ``--cross-tree``). Lists of ids are repeatable
options (``--source/-s``, ``--target/-t``, ``--supersedes``), ``meta`` is a JSON object and
``add-events`` and ``add-records`` read a JSON array or JSON lines from a file (``-``: stdin).
"""

from __future__ import annotations

import inspect
import json
import sys
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from .._core.validation import Keep
from ..api.operations import REQUIRED, Operation, Param, operations
from ..errors import InvalidInput, NotFoundError
from .render import emit_json, show, warn
from .target import OPTIONS, SHARED, Target

BATCHES = ("events", "records")  # a batch argument is a file of JSON items

# parameters whose CLI spelling differs from ``--name``: (flags, help)
SPELLING: dict[str, tuple[tuple[str, ...], str, str | None]] = {
    "sources": (("--source", "-s"), "a source event id; repeatable", "ID"),
    "targets": (("--target", "-t"), "a record to retract; repeatable", "ID"),
    "supersedes": (("--supersedes",), "a record this one replaces; repeatable", "ID"),
    "k": (("-k",), "how many hits", None),
    "meta": (("--meta",), "a JSON object", "JSON"),
}


def _bare(hint: Any) -> Any:
    """The hint without None and ``Keep`` (``revise``'s "keep the sources" default)."""
    args = [a for a in typing.get_args(hint) if a not in (type(None), Keep)]
    return args[0] if len(args) == 1 and len(typing.get_args(hint)) > 1 else hint


def _id_list(hint: Any) -> bool:
    origin = typing.get_origin(_bare(hint))
    return (
        isinstance(origin, type)
        and issubclass(origin, Iterable)
        and not issubclass(origin, Mapping)
    )


def _cli_type(param: Param) -> Any:
    bare = _bare(param.hint)
    if param.name == "as_of":  # a seq or an ISO 8601 time: the engine reads the text
        return str | None
    if param.name in BATCHES:
        return Path
    if _id_list(param.hint):
        return list[str] | None
    if typing.get_origin(bare) is not None:  # Mapping: JSON text
        return str | None
    optional = type(None) in typing.get_args(param.hint) or param.default is None
    return bare | None if optional and not param.positional else bare


def _parameter(param: Param) -> list[inspect.Parameter]:
    kind = inspect.Parameter.KEYWORD_ONLY
    kind_type = _cli_type(param)
    default: Any
    if param.positional:
        default = inspect.Parameter.empty if param.required else param.default
        info: Any = typer.Argument(help="'-' reads stdin" if param.name in BATCHES else None)
        return [inspect.Parameter(param.name, kind, annotation=Annotated[kind_type, info],
                                  default=default)]  # fmt: skip
    flags, help_text, metavar = SPELLING.get(
        param.name, ((f"--{param.name.replace('_', '-')}",), "", None)
    )
    if _id_list(param.hint):
        default = None
    elif param.required:
        default = inspect.Parameter.empty
    elif isinstance(param.default, tuple):
        default = None
    else:
        default = param.default
    made = [
        inspect.Parameter(
            param.name, kind, default=default,
            annotation=Annotated[
                kind_type, typer.Option(*flags, help=help_text or None, metavar=metavar)
            ],
        )
    ]  # fmt: skip
    if param.name == "sources":  # no default widens the gate: say which, or give -s
        for name, flag, says in (
            ("legacy", "--legacy", "no provenance at all (sources=None)"),
            ("everywhere", "--global", "no sources: visible on every branch (sources=[])"),
        ):
            made.append(
                inspect.Parameter(
                    name, kind, default=False,
                    annotation=Annotated[bool, typer.Option(flag, help=says)],
                )
            )  # fmt: skip
    return made


def read_events(source: Path) -> list[Any]:
    """A JSON array of events (or records), or one JSON object per line."""
    text = sys.stdin.read() if str(source) == "-" else source.read_text(encoding="utf-8")
    stripped = text.strip()
    try:
        if stripped.startswith("["):
            found = json.loads(stripped)
        else:
            found = [json.loads(line) for line in stripped.splitlines() if line.strip()]
    except ValueError as error:
        raise InvalidInput(f"{source}: not a JSON array or JSON lines ({error})") from error
    if not isinstance(found, list):
        raise InvalidInput(f"{source}: expected a JSON array")
    return found


def read_receipt(source: str) -> Any:
    """A forget receipt: the JSON ``forget --json`` printed, from a file or '-' (stdin)."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        return json.loads(text)
    except OSError as error:
        raise InvalidInput(f"receipt {source}: {error.strerror or error}") from error
    except ValueError as error:
        raise InvalidInput(f"receipt {source}: not JSON ({error})") from error


def parse_meta(meta: str | None) -> dict[str, Any] | None:
    if meta is None:
        return None
    try:
        value = json.loads(meta)
    except ValueError as error:
        raise InvalidInput(f"--meta is not JSON: {error}") from error
    if not isinstance(value, dict):
        raise InvalidInput("--meta must be a JSON object")
    return value


# what to pass when a command that must name its sources was given none
SOURCES_NEEDED: dict[str, str] = {
    "add_record": "record {id!r} needs its sources: pass -s/--source ID (an event it comes "
    "from; repeatable), or --global to make it visible on every branch",
    "retract": "retraction {id!r} needs its sources: pass -s/--source ID (the event it is "
    "said at), or --global --scope tree to hide its targets on every branch",
}


def sources_choice(op: Operation, param: Param, given: dict[str, Any], named: str) -> Any:
    """``sources`` as the call takes it: the ``-s`` ids, ``[]`` for ``--global``, None for
    ``--legacy``; none of them is an error where Python requires the argument (a default of
    ``[]`` would make the record visible on every branch) and ``KEEP`` for ``revise``."""
    ids, legacy, everywhere = given.pop("sources"), given.pop("legacy"), given.pop("everywhere")
    chosen = [flag for flag, on in (("-s", ids), ("--legacy", legacy), ("--global", everywhere))
              if on]  # fmt: skip
    if len(chosen) > 1:
        raise InvalidInput(f"{named!r}: pass only one of {', '.join(chosen)}")
    if ids:
        return list(ids)
    if legacy:
        return None
    if everywhere:
        return []
    if param.required:
        needed = SOURCES_NEEDED.get(op.name, "{id!r} needs its sources: pass -s/--source ID "
                                    "or --global")  # fmt: skip
        raise InvalidInput(needed.format(id=named))
    return param.default


def call_arguments(op: Operation, given: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The Python call's arguments from what the command was given."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for param in op.params:
        if param.name == "sources":
            named = next((a for a in args if isinstance(a, str)), op.name)
            value = sources_choice(op, param, given, named)
        else:
            value = given.pop(param.name)
        if param.name in BATCHES:
            value = read_events(value)
        elif param.name == "meta":
            value = parse_meta(value)
        elif param.name == "receipt":  # a file written by `forget --json`, or '-'
            value = read_receipt(value)
        elif _id_list(param.hint) and param.name != "sources":
            value = list(value or [])
        if isinstance(value, Keep):
            continue  # left out: the method's default
        if param.positional:
            args.append(value)
        else:
            kwargs[param.name] = value
    return args, kwargs


# -- what the API accepts silently, said ---------------------------------------------------
def _known(memory: Any, item: str, namespace: str) -> bool:
    for lookup in (memory.get_event, memory.get_record):
        try:
            lookup(item, namespace=namespace)
            return True
        except NotFoundError:
            continue
    return False


def unknown_parents(memory: Any, namespace: str, events: list[Any]) -> None:
    for event in events:
        if event.parent is not None and not _known(memory, event.parent, namespace):
            warn(
                f"event {event.id!r}: parent {event.parent!r} is not in the store yet; "
                f"{event.id} stays hidden until it arrives"
            )


def unknown_sources(memory: Any, namespace: str, record: Any) -> None:
    for source in record.sources or ():
        if not _known(memory, source, namespace):
            warn(
                f"record {record.id!r}: source {source!r} is not in the store yet; "
                f"{record.id} stays hidden until it arrives"
            )


def data_elsewhere(memory: Any, namespace: str, found: Any) -> None:
    """No conversation here: say which namespaces hold data (an import's ``-n alice``)."""
    if found:
        return
    others = [name for name in memory.namespaces() if name != namespace]
    if others:
        warn(
            f"namespace {namespace!r} has no conversations; data is in "
            f"{', '.join(repr(name) for name in others)} (pass -n NAME; see branchmem namespaces)"
        )


CHECKS: dict[str, Callable[[Any, str, Any], None]] = {
    "add_event": lambda memory, ns, event: unknown_parents(memory, ns, [event]),
    "add_events": unknown_parents,
    "add_record": unknown_sources,
    "revise": unknown_sources,
    "retract": unknown_sources,
    "conversations": data_elsewhere,
}


def failed(result: Any) -> int:
    """The exit status: 1 when the answer is a check that did not pass (``verify_receipt``'s
    ``ok`` false), so a script can test it as it tests any command; else 0."""
    return 1 if getattr(result, "ok", True) is False else 0


def command(op: Operation) -> Callable[..., int]:
    """The command of ``op``: arguments and options from its signature, then the call."""

    def run(**given: Any) -> int:
        target = Target(**{name: given.pop(name) for name in SHARED})
        args, kwargs = call_arguments(op, given)
        with target.open(reading=not op.mutates) as memory:
            result = getattr(memory, op.name)(*args, namespace=target.namespace, **kwargs)
            check = CHECKS.get(op.name)
            if check is not None:
                check(memory, target.namespace, result)
        if target.as_json:
            emit_json(result)
        else:
            named = " ".join(a for a in args if isinstance(a, str))
            show(result, op.result, f"{op.name} {named}".strip())
        return failed(result)

    params = [made for param in op.params for made in _parameter(param)]
    run.__signature__ = inspect.Signature([*params, *OPTIONS])  # type: ignore[attr-defined]
    run.__name__ = op.name
    run.__doc__ = f"Memory.{op.name}: {op.doc}"
    return run


def register(app: typer.Typer) -> None:
    for op in operations().values():
        app.command(op.name.replace("_", "-"))(command(op))


def command_names() -> dict[str, str]:
    """API method -> command name."""
    return {name: name.replace("_", "-") for name in operations()}


__all__ = ["REQUIRED", "command_names", "register"]
