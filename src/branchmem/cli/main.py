"""The ``branchmem`` application and its one edge where errors become messages.

A usage mistake prints one line and exits 2; an expected failure (bad input, a missing
store, a missing extra, an unknown id) prints ``branchmem: <what>`` and exits 1. Neither
ever shows a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from types import ModuleType
from typing import Annotated

import typer

from .. import __version__
from ..errors import BranchmemError
from . import commands
from .api_commands import register
from .render import err, out

app = typer.Typer(
    name="branchmem",
    help=(
        "Branch-aware, provenance-gated long-term memory: the Python API on the command "
        "line, one command per method (Memory.get_event -> branchmem get-event)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
keys_app = typer.Typer(help="API keys of the service (create, list, delete).", no_args_is_help=True)


def _version(value: bool) -> None:
    if value:
        out.print(f"branchmem {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="print the version"),
    ] = False,
) -> None:
    """Branch-aware, provenance-gated long-term memory on the command line."""


register(app)
app.command("import")(commands.import_)
app.command()(commands.tree)
app.command()(commands.namespaces)
app.command("scan-store")(commands.scan_store)
app.command()(commands.migrate)
app.command()(commands.serve)
app.command()(commands.mcp)
app.command()(commands.demo)
keys_app.command("create")(commands.keys_create)
keys_app.command("list")(commands.keys_list)
keys_app.command("delete")(commands.keys_delete)
app.add_typer(keys_app, name="keys")


def _click() -> ModuleType:
    """The click that typer runs on: bundled as ``typer._click`` since typer 0.2x, a
    dependency before (the base install has no separate click)."""
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            return import_module(name)
        except ImportError:
            continue
    raise ImportError("typer provides no click")  # pragma: no cover


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status."""
    click = _click()
    try:
        result = app(
            args=list(argv) if argv is not None else None,
            prog_name="branchmem",
            standalone_mode=False,
        )
    except typer.Exit as done:  # --help, --version (click's Exit in older typers)
        return int(getattr(done, "exit_code", 0) or 0)
    except click.UsageError as error:
        if type(error).__name__ == "NoArgsIsHelpError":  # `branchmem` or a group alone
            out.print(error.format_message(), markup=False)
            return 2
        where = error.ctx.command_path if error.ctx is not None else "branchmem"
        err.print(f"{where}: {error.format_message()} (see {where} --help)", markup=False)
        return 2
    except click.ClickException as error:
        err.print(f"branchmem: {error.format_message()}", markup=False)
        return int(error.exit_code)
    except typer.Abort:
        err.print("branchmem: aborted", markup=False)
        return 1
    except BranchmemError as error:
        err.print(f"branchmem: {_one_line(str(error))}", markup=False)
        return 1
    except (OSError, UnicodeDecodeError) as error:  # a file the command was given
        err.print(f"branchmem: {_one_line(str(error))}", markup=False)
        return 1
    return result if isinstance(result, int) else 0


def _one_line(message: str) -> str:
    return " ".join(message.split()) or "failed"


def run() -> None:
    """The console entry point."""
    raise SystemExit(main())
