"""``branchmem``: the command line, named after the Python API it calls.

    branchmem migrate URL
    branchmem import FILE --db URL [--format auto|chatgpt|...] [--namespace NS]
    branchmem demo

Errors from the library become one-line messages here, and only here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .errors import BranchmemError


def _migrate(args: argparse.Namespace) -> int:
    from .store import open_store

    store = open_store(args.url, migrate=True)
    try:
        version = getattr(store, "schema_version", lambda: None)()
    finally:
        store.close()
    print(f"{args.url}: schema version {version}")
    return 0


def _import(args: argparse.Namespace) -> int:
    from .importers import ImportProgress, import_file
    from .memory import Memory

    def progress(step: ImportProgress) -> None:
        if sys.stderr.isatty() and step.total:
            share = 100 * step.done / step.total
            print(f"\r  {share:5.1f}% of {step.total:,} {step.unit}", end="", file=sys.stderr)

    with Memory.open(args.db) as mem:
        summary = import_file(
            args.file, mem, format=args.format, namespace=args.namespace, progress=progress
        )
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(summary)
    return 1 if summary.failed else 0


def _demo(args: argparse.Namespace) -> int:
    from .demo import main as demo

    demo()
    return 0


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="branchmem", description=__doc__.splitlines()[0])
    commands = root.add_subparsers(dest="command", required=True)

    migrate = commands.add_parser("migrate", help="create or upgrade a store's schema")
    migrate.add_argument("url", help="a SQLite path, sqlite:///path or postgresql://...")
    migrate.set_defaults(run=_migrate)

    load = commands.add_parser("import", help="import a chat export as event trees")
    load.add_argument("file", help="the export: JSON, JSONL or a .zip holding conversations.json")
    load.add_argument("--db", required=True, help="the store: a path or URL")
    load.add_argument(
        "--format",
        default="auto",
        choices=["auto", "chatgpt", "openwebui", "librechat", "sillytavern", "claude"],
    )
    load.add_argument("--namespace", default="default")
    load.set_defaults(run=_import)

    demo = commands.add_parser("demo", help="the Chengdu/Hangzhou story, end to end")
    demo.set_defaults(run=_demo)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except BranchmemError as error:
        print(f"branchmem: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
