"""The commands that are not one API method: stores, imports, the service, keys, the tree."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.tree import Tree

from ..api.codec import encode
from ..errors import InvalidInput, StorageError, require
from .api_commands import read_receipt
from .render import emit_json, err, make_table, out
from .target import Target, shared

if TYPE_CHECKING:
    from ..importers import ImportPlan, ImportProgress, ImportSummary

Format = Annotated[
    str, typer.Option(help="auto, chatgpt, openwebui, librechat, sillytavern or claude")
]
BIG_IMPORT = 1 << 20  # bytes: a progress bar below this would only flicker


def migrate(
    url: Annotated[str, typer.Argument(help="SQLite path or postgresql:// URL")],
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> int:
    """Create or upgrade a store's schema."""
    from ..memory import Memory

    with Memory.open(url, migrate=True) as memory:
        version = memory.schema_version()
    if as_json:
        emit_json({"url": url, "schema_version": version})
    else:
        out.print(f"{url}: schema version {version}", markup=False)
    return 0


# -- import ----------------------------------------------------------------------------------
@shared
def import_(
    target: Target,
    file: Annotated[str, typer.Argument(help="JSON, JSONL or .zip holding conversations")],
    format: Format = "auto",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show, write nothing")] = False,
    limit: Annotated[
        list[str] | None,
        typer.Option(help="raise an import limit: NAME=SIZE, e.g. max_export_bytes=8GiB"),
    ] = None,
) -> int:
    """Memory.import_: a chat export as event trees (ids kept, every branch, the head set);
    prints each conversation's title, tree, chosen head and the rule that chose it."""
    from ..importers import ImportLimits, load

    limits = ImportLimits.parse(limit or ())
    if target.url and limit:
        raise InvalidInput("--limit applies to a local import; a service sets its own limits")
    if dry_run:
        plan = load(file, format, limits=limits)
        return show_plan(plan, target.as_json)
    if target.url:
        with target.open() as client:
            summary = client.import_file(file, format=format, namespace=target.namespace)
    else:
        plan = load(file, format, limits=limits)
        with target.open() as memory, progress_bar(plan) as progress:
            summary = memory.import_(plan, namespace=target.namespace, progress=progress)
    show_summary(summary, target.as_json)
    return 1 if summary.failed else 0


def show_plan(plan: ImportPlan, as_json: bool) -> int:
    found = list(plan)
    if as_json:
        emit_json(
            {
                "format": plan.format,
                "format_reason": plan.format_reason,
                "source": plan.source,
                "conversations": [
                    {
                        "tree": c.tree, "title": c.title, "head": c.head,
                        "head_reason": c.head_reason, "events": len(c.events),
                        "branches": c.branches,
                        "error": None if c.error is None else str(c.error),
                    }
                    for c in found
                ],
            }
        )  # fmt: skip
        return 0
    out.print(f"format: {plan.format} ({plan.format_reason}); dry run, nothing written")
    rows = make_table("title", "tree", "head", "chosen by", "events", title=plan.source)
    for c in found:
        note = f"error: {c.error}" if c.error is not None else c.head_reason
        rows.add_row(c.title or "", c.tree or "", c.head or "", note, str(len(c.events)))
    out.print(rows)
    return 1 if any(c.error is not None for c in found) else 0


def show_summary(summary: ImportSummary, as_json: bool) -> None:
    if as_json:
        emit_json(summary)
        return
    rows = make_table("title", "tree", "head", "chosen by", "events", "added", title=summary.source)
    for c in summary.outcomes:
        note = f"error: {c.error}" if c.error else c.head_reason
        rows.add_row(c.title or "", c.tree or "", c.head or "", note, str(c.events), str(c.added))
    out.print(rows)
    out.print(str(summary), markup=False)


@contextmanager
def progress_bar(plan: ImportPlan) -> Iterator[Any]:
    """A rich progress bar on stderr for a large file (bytes read), else nothing."""
    if not plan.total or plan.total < BIG_IMPORT or not err.is_terminal:
        yield None
        return
    from rich.progress import Progress

    with Progress(console=err, transient=True) as bar:
        task = bar.add_task(f"importing {plan.source}", total=plan.total)

        def advance(step: ImportProgress) -> None:
            bar.update(task, completed=step.done)

        yield advance


# -- the service and agents -------------------------------------------------------------------
def demo() -> int:
    """The Chengdu/Hangzhou story, end to end."""
    from ..demo import main as run_demo

    run_demo()
    return 0


def serve(
    db: Annotated[
        str | None,
        typer.Option("--db", envvar="BRANCHMEM_DB", help="a store: SQLite path or postgresql://"),
    ] = None,
    host: Annotated[str, typer.Option(help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8765,
    no_auth: Annotated[
        bool, typer.Option("--no-auth", help="serve without API keys (local use only)")
    ] = False,
    max_body: Annotated[int, typer.Option(help="largest request body, bytes")] = 1 << 20,
    max_import: Annotated[int, typer.Option(help="largest import upload, bytes")] = 64 << 20,
    migrate_store: Annotated[
        bool, typer.Option("--migrate", help="create or upgrade the schema first")
    ] = False,
    create: Annotated[
        bool, typer.Option("--create", help="create the SQLite file if it does not exist")
    ] = False,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
) -> int:
    """Serve the HTTP API and the /ui explorer over a store (several may share a PostgreSQL).
    A SQLite path that does not exist is refused unless ``--create``: a typo in ``--db``
    would otherwise serve a new, empty store."""
    if not db:
        raise InvalidInput("serve needs --db URL (or BRANCHMEM_DB)")
    if no_auth and host not in ("127.0.0.1", "localhost", "::1"):
        raise InvalidInput("--no-auth is only allowed on a loopback --host")
    for module in ("fastapi", "uvicorn"):
        require(module, "the service", "server")
    from ..memory import Memory, refuse_missing

    if not create:
        try:
            refuse_missing(db)
        except StorageError as error:
            raise StorageError(f"{error} (pass --create to start a new one)") from None
    import uvicorn

    from ..server import Limits, create_app
    from ..server.explorer import LocalSession

    memory = Memory.open(db, migrate=migrate_store)
    loopback = host in ("127.0.0.1", "localhost", "::1")
    local = LocalSession() if loopback and not no_auth else None  # see docs/explorer.md
    service = create_app(
        memory, auth=not no_auth, limits=Limits(max_body=max_body, max_import=max_import),
        local=local,
    )  # fmt: skip
    shown = f"[{host}]" if ":" in host else host
    err.print(
        f"explorer: {local.link(host, port) if local else f'http://{shown}:{port}/ui'}",
        markup=False,
    )
    try:
        uvicorn.run(service, host=host, port=port, log_level=log_level)
    finally:
        memory.close()
    return 0


@shared
def mcp(
    target: Target,
    conversation: Annotated[str, typer.Option(help="the tree the agent's messages go to")] = "mcp",
) -> int:
    """Serve the tools remember, recall, forget and explain to an agent (MCP over stdio)."""
    require("mcp", "the MCP server", "mcp")
    from ..integrations.mcp import run_stdio

    run_stdio(
        db=target.db, url=target.url, api_key=target.api_key, namespace=target.namespace,
        conversation=conversation,
    )  # fmt: skip
    return 0


# -- keys -------------------------------------------------------------------------------------
Db = Annotated[
    str | None,
    typer.Option("--db", envvar="BRANCHMEM_DB", help="the store that keeps the keys"),
]


@contextmanager
def keyring(db: str | None, *, reading: bool = False) -> Iterator[Any]:
    from ..memory import Memory
    from ..server.keys import KeyRing

    if not db:
        raise InvalidInput("keys are kept in the store: give --db URL")
    with Memory.open(db, create=not reading) as memory:
        yield KeyRing(memory)


def keys_create(
    tenant: Annotated[str, typer.Option(help="who the key belongs to")],
    namespace: Annotated[
        list[str], typer.Option("--namespace", "-n", help="a namespace or 'prefix*'; repeatable")
    ],
    db: Db = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> int:
    """Create a key bound to namespaces; the key is printed once and stored hashed."""
    with keyring(db) as ring:
        secret, grant = ring.create(tenant, namespace)
    if as_json:
        emit_json({"key": secret, **encode(grant)})
        return 0
    out.print(secret, markup=False)
    err.print(f"key {grant.key_id} for tenant {grant.tenant!r}: {', '.join(grant.namespaces)}")
    return 0


def keys_list(
    db: Db = None, as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False
) -> int:
    """Keys with their tenant and namespaces (never a secret)."""
    with keyring(db, reading=True) as ring:
        grants = ring.list()
    if as_json:
        emit_json(grants)
        return 0
    rows = make_table("key id", "tenant", "namespaces", "created")
    for g in grants:
        rows.add_row(g.key_id, g.tenant, ", ".join(g.namespaces), f"{g.created:.0f}")
    out.print(rows)
    return 0


def keys_delete(
    key_id: str,
    db: Db = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> int:
    """Delete a key; every worker refuses it within a few seconds."""
    with keyring(db, reading=True) as ring:
        ring.delete(key_id)
    if as_json:
        emit_json({"deleted": key_id})
    else:
        out.print(f"deleted key {key_id}", markup=False)
    return 0


# -- where the data is ------------------------------------------------------------------------
@shared
def namespaces(target: Target) -> int:
    """Memory.namespaces: every namespace holding data, one per line (--namespace is not
    used: an import with -n alice went to alice, and every other command takes -n)."""
    with target.open(reading=True) as memory:
        names = memory.namespaces()
    if target.as_json:
        emit_json(names)
    elif not names:
        err.print("no namespace holds data yet", markup=False)
    for name in [] if target.as_json else names:
        out.print(name, markup=False, highlight=False, soft_wrap=True)
    return 0


@shared
def scan_store(
    target: Target,
    receipt: Annotated[str, typer.Argument(help="the receipt: forget --json's output, or -")],
) -> int:
    """Memory.scan_store: the operator's scan of the whole store (every file, table and
    statistic, every namespace's bytes) for a receipt's fingerprints; a local --db only,
    since it reads every tenant's data. Exits 1 when anything was found."""
    if target.url:
        raise InvalidInput("scan-store reads the store's own files: give --db, not --url")
    with target.open(reading=True) as memory:
        check = memory.scan_store(read_receipt(receipt))
    if target.as_json:
        emit_json(check)
    else:
        found = {where: hits for where, hits in check.locations.items() if hits}
        verdict = "clean" if check.clean else f"NOT clean: {found or 'see unchecked'}"
        out.print(f"scanned {len(check.locations)} location(s): {verdict}", markup=False)
        for line in check.unchecked:
            err.print(f"note: {line}", markup=False)
    return 0 if check.clean else 1


# -- the tree ---------------------------------------------------------------------------------
@shared
def tree(
    target: Target,
    event: Annotated[str, typer.Argument(help="any event of the conversation")],
    anchor: Annotated[
        str | None, typer.Argument(help="where the conversation is (default EVENT)")
    ] = None,
    cross_tree: Annotated[bool, typer.Option("--cross-tree")] = False,
    mode: Annotated[str | None, typer.Option("--mode")] = None,
) -> int:
    """The tree of EVENT, the path to ANCHOR in bold, every record's visibility there."""
    at = anchor or event
    ns = target.namespace
    with target.open(reading=True) as memory:
        root_path = memory.path(event, namespace=ns)
        on_path = {e.id for e in memory.path(at, namespace=ns)}
        tree_id = root_path[-1].tree
        # a detached event's tree is not known yet: its known ancestry is all there is
        nodes = root_path if tree_id is None else memory.tree_events(tree_id, namespace=ns).events
        decisions = [
            (shown.explanation, shown.content)
            for shown in memory.record_views(at, cross_tree=cross_tree, mode=mode, namespace=ns)
        ]
    if target.as_json:
        emit_json(
            {
                "tree": tree_id, "anchor": at, "path": sorted(on_path), "events": list(nodes),
                "records": [{"explanation": why, "content": text} for why, text in decisions],
            }
        )  # fmt: skip
        return 0
    children: dict[str | None, list[Any]] = {}
    for node in nodes:
        children.setdefault(node.parent, []).append(node)
    known = {n.id for n in nodes}
    view = Tree(f"[b]tree {tree_id}[/b] (anchor {at})")

    def add(branch: Tree, node: Any) -> None:
        label = f"{node.id} [{node.role}] {node.content[:60]}".replace("[", "\\[")
        style = "bold green" if node.id in on_path else "dim"
        marker = " ◀ anchor" if node.id == at else ""
        sub = branch.add(f"[{style}]{label}{marker}[/{style}]")
        for child in children.get(node.id, []):
            add(sub, child)

    for node in nodes:
        if node.parent is None or node.parent not in known:
            add(view, node)
    out.print(view)
    rows = make_table("record", "visible", "reason", "source", "content", title=f"records at {at}")
    for why, content in decisions:
        rows.add_row(
            why.record_id, "yes" if why.visible else "no", why.reason, why.source or "",
            content or "",
        )  # fmt: skip
    out.print(rows)
    return 0
