"""Where a command's memory is: the options every data command shares, and opening it.

``--db`` (a store) or ``--url`` + ``--api-key`` (the service), ``--namespace``, ``--json``
and ``--actor`` are declared once here and added to each command by ``shared``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from ..errors import InvalidInput


@dataclass(frozen=True, slots=True)
class Target:
    """The shared options of one command invocation."""

    db: str | None = None
    url: str | None = None
    api_key: str | None = None
    namespace: str = "default"
    as_json: bool = False
    actor: str | None = None

    @contextmanager
    def open(self, *, reading: bool = False) -> Iterator[Any]:
        """A ``Memory`` over ``--db`` or a ``Client`` of ``--url``: the same API either way.
        ``reading``: a store that does not exist is an error, not a new empty store."""
        if self.url:
            if self.actor:
                raise InvalidInput("--actor is for a local store; the service names the key")
            from ..client import Client

            with Client(self.url, self.api_key) as client:
                yield client
            return
        if not self.db:
            raise InvalidInput("say where the memory is: --db URL, or --url URL --api-key KEY")
        from ..memory import Memory

        with Memory.open(self.db, create=not reading) as memory:
            scope = memory.acting_as(self.actor) if self.actor else nullcontext()
            with scope:
                yield memory


OPTIONS: list[inspect.Parameter] = [
    inspect.Parameter(
        "db",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[
            str | None,
            typer.Option(
                "--db", envvar="BRANCHMEM_DB", help="a store: SQLite path or postgresql://"
            ),
        ],
    ),
    inspect.Parameter(
        "url",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[
            str | None,
            typer.Option(
                "--url", envvar="BRANCHMEM_URL", help="a branchmem service, instead of --db"
            ),
        ],
    ),
    inspect.Parameter(
        "api_key",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[
            str | None,
            typer.Option("--api-key", envvar="BRANCHMEM_API_KEY", help="the service's key"),
        ],
    ),
    inspect.Parameter(
        "namespace",
        inspect.Parameter.KEYWORD_ONLY,
        default="default",
        annotation=Annotated[str, typer.Option("--namespace", "-n", help="the namespace")],
    ),
    inspect.Parameter(
        "as_json",
        inspect.Parameter.KEYWORD_ONLY,
        default=False,
        annotation=Annotated[bool, typer.Option("--json", help="print JSON")],
    ),
    inspect.Parameter(
        "actor",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[
            str | None,
            typer.Option("--actor", help="name in the audit log (Memory.acting_as)"),
        ],
    ),
]
SHARED = frozenset(p.name for p in OPTIONS)


def shared(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the shared options to ``command(target, ...)``; it receives them as a Target."""
    own = list(inspect.signature(command, eval_str=True).parameters.values())[1:]

    @functools.wraps(command)
    def run(**given: Any) -> Any:
        target = Target(**{name: given.pop(name) for name in SHARED})
        return command(target, **given)

    run.__signature__ = inspect.Signature([*own, *OPTIONS])  # type: ignore[attr-defined]
    run.__annotations__ = {}
    del run.__wrapped__  # typer must read the new signature, not the original
    return run
