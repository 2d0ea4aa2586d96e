"""``branchmem``: the command line, named after the Python API it calls.

Every data command works on a store directly (``--db URL``) or through the service
(``--url URL --api-key KEY``; or ``BRANCHMEM_DB``, ``BRANCHMEM_URL``, ``BRANCHMEM_API_KEY``):

    branchmem events add u1 --content "I'm moving to Chengdu" --db mem.db
    branchmem records add f1 --source u1 --content "moving to Chengdu" --key city --db mem.db
    branchmem visible u1 --db mem.db
    branchmem tree u1 --anchor u1 --db mem.db
    branchmem serve --db postgresql://... --port 8765
    branchmem keys create --tenant acme --namespace 'acme/*' --db postgresql://...

Errors from the library become one-line messages here, and only here (exit status 2).
``--json`` prints what the API returned as JSON instead of a table.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

from .errors import BranchmemError, InvalidInput

try:
    import typer
    from rich.console import Console
    from rich.table import Table
    from rich.tree import Tree
except ImportError as missing:  # the core library has no dependencies; the CLI has two
    raise SystemExit(
        f"branchmem: the command line needs {missing.name!r}: pip install 'branchmem[cli]'"
    ) from missing

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

app = typer.Typer(
    name="branchmem",
    help="Branch-aware, provenance-gated long-term memory: the Python API on the command line.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
events_app = typer.Typer(help="Conversation events (add).", no_args_is_help=True)
records_app = typer.Typer(help="Derived records (add, revise).", no_args_is_help=True)
keys_app = typer.Typer(help="API keys of the service (create, list, delete).", no_args_is_help=True)
app.add_typer(events_app, name="events")
app.add_typer(records_app, name="records")
app.add_typer(keys_app, name="keys")

F = TypeVar("F", bound=Callable[..., Any])

# -- shared options ---------------------------------------------------------------------------
Db = Annotated[
    str | None,
    typer.Option("--db", envvar="BRANCHMEM_DB", help="a store: SQLite path or postgresql://"),
]
Url = Annotated[
    str | None,
    typer.Option("--url", envvar="BRANCHMEM_URL", help="a branchmem service, instead of --db"),
]
ApiKeyOpt = Annotated[
    str | None, typer.Option("--api-key", envvar="BRANCHMEM_API_KEY", help="the service key")
]
Namespace = Annotated[str, typer.Option("--namespace", "-n", help="the namespace")]
Mode = Annotated[str | None, typer.Option("--mode", help="strict or compat (default: store's)")]
CrossTree = Annotated[bool, typer.Option("--cross-tree", help="other trees contribute heads")]
AsJson = Annotated[bool, typer.Option("--json", help="print JSON instead of a table")]


@contextmanager
def opened(db: str | None, url: str | None, api_key: str | None) -> Iterator[Any]:
    """A ``Memory`` over ``--db`` or a ``Client`` of ``--url``: the same API either way."""
    if url:
        from .client import Client

        with Client(url, api_key) as client:
            yield client
        return
    if not db:
        raise InvalidInput("say where the memory is: --db URL, or --url URL --api-key KEY")
    from .memory import Memory

    with Memory.open(db) as memory:
        yield memory


def jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        return [jsonable(item) for item in items]
    return value


def emit_json(value: Any) -> None:
    out.print_json(json.dumps(jsonable(value), ensure_ascii=False))


def records_table(records: Sequence[Any], title: str) -> None:
    table = Table(title=title, title_justify="left")
    for column in ("id", "rev", "kind", "key", "content", "sources"):
        table.add_column(column)
    for r in records:
        sources = "(legacy)" if r.sources is None else ", ".join(r.sources)
        table.add_row(r.id, str(r.revision), r.kind, r.key or "", r.content, sources)
    out.print(table)


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


# -- store administration -------------------------------------------------------------------
@app.command()
def migrate(url: Annotated[str, typer.Argument(help="SQLite path or postgresql:// URL")]) -> int:
    """Create or upgrade a store's schema."""
    from .store import open_store

    store = open_store(url, migrate=True)
    try:
        version = getattr(store, "schema_version", lambda: None)()
    finally:
        store.close()
    out.print(f"{url}: schema version {version}")
    return 0


@app.command("import")
def import_(
    file: Annotated[str, typer.Argument(help="JSON, JSONL or .zip holding conversations.json")],
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    format: Annotated[
        str, typer.Option(help="auto, chatgpt, openwebui, librechat, sillytavern or claude")
    ] = "auto",
    namespace: Namespace = "default",
) -> int:
    """Import a chat export as event trees (ids kept, every branch, the head set)."""
    from .importers import ImportProgress, import_file

    if url:
        from .client import Client

        with Client(url, api_key) as client:
            summary = client.import_file(file, format=format, namespace=namespace)
    else:

        def progress(step: ImportProgress) -> None:
            if sys.stderr.isatty() and step.total:
                share = 100 * step.done / step.total
                print(f"\r  {share:5.1f}% of {step.total:,} {step.unit}", end="", file=sys.stderr)

        with opened(db, None, None) as memory:
            summary = import_file(
                file, memory, format=format, namespace=namespace, progress=progress
            )
        if sys.stderr.isatty():
            print(file=sys.stderr)
    out.print(str(summary), markup=False)
    return 1 if summary.failed else 0


@app.command()
def demo() -> int:
    """The Chengdu/Hangzhou story, end to end."""
    from .demo import main as run_demo

    run_demo()
    return 0


@app.command()
def serve(
    db: Db = None,
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
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
) -> int:
    """Serve the HTTP API and the /ui explorer over a store (several may share a PostgreSQL)."""
    import uvicorn

    from .memory import Memory
    from .server import Limits, create_app

    if not db:
        raise InvalidInput("serve needs --db URL (or BRANCHMEM_DB)")
    if no_auth and host not in ("127.0.0.1", "localhost", "::1"):
        raise InvalidInput("--no-auth is only allowed on a loopback --host")
    from .server.explorer import LocalSession

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


@app.command()
def mcp(
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
    conversation: Annotated[str, typer.Option(help="the tree the agent's messages go to")] = "mcp",
) -> int:
    """Serve the tools remember, recall, forget and explain to an agent (MCP over stdio)."""
    from .integrations.mcp import run_stdio

    run_stdio(db=db, url=url, api_key=api_key, namespace=namespace, conversation=conversation)
    return 0


# -- keys -----------------------------------------------------------------------------------
def _keyring(db: str | None) -> Any:
    from .memory import Memory
    from .server.keys import KeyRing

    if not db:
        raise InvalidInput("keys are kept in the store: give --db URL")
    memory = Memory.open(db)
    return memory, KeyRing(memory)


@keys_app.command("create")
def keys_create(
    tenant: Annotated[str, typer.Option(help="who the key belongs to")],
    namespace: Annotated[
        list[str], typer.Option("--namespace", "-n", help="a namespace or 'prefix*'; repeatable")
    ],
    db: Db = None,
) -> int:
    """Create a key bound to namespaces; the key is printed once and stored hashed."""
    memory, ring = _keyring(db)
    with memory:
        secret, grant = ring.create(tenant, namespace)
    out.print(secret, markup=False)
    err.print(f"key {grant.key_id} for tenant {grant.tenant!r}: {', '.join(grant.namespaces)}")
    return 0


@keys_app.command("list")
def keys_list(db: Db = None, as_json: AsJson = False) -> int:
    """Keys with their tenant and namespaces (never a secret)."""
    memory, ring = _keyring(db)
    with memory:
        grants = ring.list()
    if as_json:
        emit_json(grants)
        return 0
    table = Table("key id", "tenant", "namespaces", "created")
    for g in grants:
        table.add_row(g.key_id, g.tenant, ", ".join(g.namespaces), f"{g.created:.0f}")
    out.print(table)
    return 0


@keys_app.command("delete")
def keys_delete(key_id: str, db: Db = None) -> int:
    """Delete a key; every worker refuses it within a few seconds."""
    memory, ring = _keyring(db)
    with memory:
        ring.delete(key_id)
    out.print(f"deleted key {key_id}")
    return 0


# -- events and records ---------------------------------------------------------------------
@events_app.command("add")
def events_add(
    id: str,
    parent: Annotated[str | None, typer.Option(help="the parent event (omit for a root)")] = None,
    tree: Annotated[str | None, typer.Option(help="the tree (a root's defaults to its id)")] = None,
    role: str = "user",
    content: str = "",
    meta: Annotated[str | None, typer.Option(help="a JSON object")] = None,
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
    as_json: AsJson = False,
) -> int:
    """Memory.add_event: one event; a child may arrive before its parent."""
    with opened(db, url, api_key) as memory:
        event = memory.add_event(
            id, parent, tree=tree, role=role, content=content, meta=parse_meta(meta),
            namespace=namespace,
        )  # fmt: skip
    if as_json:
        emit_json(event)
    else:
        out.print(f"event {event.id} (tree {event.tree}, parent {event.parent})", markup=False)
    return 0


@records_app.command("add")
def records_add(
    id: str,
    source: Annotated[list[str] | None, typer.Option("--source", "-s", help="repeatable")] = None,
    legacy: Annotated[bool, typer.Option(help="no provenance at all (sources=None)")] = False,
    content: str = "",
    kind: str = "fact",
    key: str | None = None,
    scope: str | None = None,
    meta: Annotated[str | None, typer.Option(help="a JSON object")] = None,
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
    as_json: AsJson = False,
) -> int:
    """Memory.add_record: a derived memory built from its sources."""
    sources = None if legacy else list(source or [])
    with opened(db, url, api_key) as memory:
        record = memory.add_record(
            id, sources=sources, content=content, kind=kind, key=key, scope=scope,
            meta=parse_meta(meta), namespace=namespace,
        )  # fmt: skip
    if as_json:
        emit_json(record)
    else:
        out.print(f"record {record.id} revision {record.revision}", markup=False)
    return 0


@records_app.command("revise")
def records_revise(
    id: str,
    content: Annotated[str, typer.Option(help="the new content")],
    source: Annotated[list[str] | None, typer.Option("--source", "-s", help="repeatable")] = None,
    legacy: bool = False,
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
    as_json: AsJson = False,
) -> int:
    """Memory.revise: a new revision under the same id, with its own sources."""
    with opened(db, url, api_key) as memory:
        record = memory.revise(
            id, content=content, sources=None if legacy else list(source or []),
            namespace=namespace,
        )  # fmt: skip
    if as_json:
        emit_json(record)
    else:
        out.print(f"record {record.id} revision {record.revision}", markup=False)
    return 0


# -- views ----------------------------------------------------------------------------------
@app.command()
def visible(
    anchor: str,
    kind: str | None = None,
    key: str | None = None,
    scope: str | None = None,
    cross_tree: CrossTree = False,
    mode: Mode = None,
    include_superseded: bool = False,
    include_stale: bool = False,
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
    as_json: AsJson = False,
) -> int:
    """Memory.visible: records visible at ANCHOR, in path order."""
    with opened(db, url, api_key) as memory:
        records = memory.visible(
            anchor, kind=kind, key=key, scope=scope, cross_tree=cross_tree, mode=mode,
            include_superseded=include_superseded, include_stale=include_stale,
            namespace=namespace,
        )  # fmt: skip
    if as_json:
        emit_json(records)
    else:
        records_table(records, f"visible at {anchor}")
    return 0


@app.command()
def explain(
    record_id: str,
    anchor: str,
    cross_tree: CrossTree = False,
    mode: Mode = None,
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
    as_json: AsJson = False,
) -> int:
    """Memory.explain: why RECORD_ID is or is not visible at ANCHOR."""
    with opened(db, url, api_key) as memory:
        why = memory.explain(
            record_id, anchor, cross_tree=cross_tree, mode=mode, namespace=namespace
        )
    if as_json:
        emit_json(why)
        return 0
    line = f"{why.record_id} at {anchor}: {'visible' if why.visible else 'hidden'} ({why.reason})"
    if why.source:
        line += f"; source {why.source}"
    if why.fork:
        line += f", paths part at {why.fork}"
    out.print(line, markup=False)
    return 0


@app.command()
def current(
    key: str,
    anchor: str,
    scope: str | None = None,
    cross_tree: CrossTree = False,
    mode: Mode = None,
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
    as_json: AsJson = False,
) -> int:
    """Memory.current: the value of KEY that holds at ANCHOR."""
    with opened(db, url, api_key) as memory:
        record = memory.current(
            key, anchor, scope=scope, cross_tree=cross_tree, mode=mode, namespace=namespace
        )
    if as_json:
        emit_json(record)
    else:
        out.print("(none)" if record is None else record.content, markup=False)
    return 0


@app.command()
def stale(
    anchor: str,
    cross_tree: CrossTree = False,
    mode: Mode = None,
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
    as_json: AsJson = False,
) -> int:
    """Memory.stale: records hidden at ANCHOR because what they were built on changed."""
    with opened(db, url, api_key) as memory:
        records = memory.stale(anchor, cross_tree=cross_tree, mode=mode, namespace=namespace)
    if as_json:
        emit_json(records)
    else:
        records_table(records, f"stale at {anchor}")
    return 0


@app.command()
def search(
    query: str,
    anchor: Annotated[str, typer.Option(help="the event the conversation is at")],
    k: Annotated[int, typer.Option("-k", help="how many hits")] = 10,
    kind: str | None = None,
    key: str | None = None,
    scope: str | None = None,
    cross_tree: CrossTree = False,
    mode: Mode = None,
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
    as_json: AsJson = False,
) -> int:
    """Memory.search: the records visible at --anchor that best match QUERY."""
    with opened(db, url, api_key) as memory:
        hits = memory.search(
            query, anchor, k=k, kind=kind, key=key, scope=scope, cross_tree=cross_tree,
            mode=mode, namespace=namespace,
        )  # fmt: skip
    if as_json:
        emit_json(hits)
        return 0
    table = Table("score", "id", "content", "why", title=f"{query!r} at {anchor}")
    for hit in hits:
        table.add_row(f"{hit.score:.3f}", hit.record.id, hit.record.content, hit.why)
    out.print(table)
    return 0


@app.command()
def context(
    anchor: str,
    query: str | None = None,
    budget: Annotated[int | None, typer.Option(help="tokens (default 2000)")] = None,
    session: Annotated[str | None, typer.Option(help="remember this delivery")] = None,
    cross_tree: CrossTree = False,
    mode: Mode = None,
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
    as_json: AsJson = False,
) -> int:
    """Memory.context: the prompt text at ANCHOR within --budget tokens."""
    with opened(db, url, api_key) as memory:
        built = memory.context(
            anchor, query=query, budget=budget, session=session, cross_tree=cross_tree,
            mode=mode, namespace=namespace,
        )  # fmt: skip
    if as_json:
        emit_json(built)
    else:
        out.print(built.text, markup=False)
        err.print(f"{built.tokens} tokens, {len(built.items)} records", markup=False)
    return 0


# -- corrections ----------------------------------------------------------------------------
@app.command()
def retract(
    id: str,
    source: Annotated[list[str] | None, typer.Option("--source", "-s", help="repeatable")] = None,
    target: Annotated[list[str] | None, typer.Option("--target", "-t", help="repeatable")] = None,
    key: str | None = None,
    key_scope: str | None = None,
    scope: Annotated[str, typer.Option(help="branch (default) or tree (everywhere)")] = "branch",
    reason: str = "",
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
    as_json: AsJson = False,
) -> int:
    """Memory.retract: write retraction ID hiding --target records or a --key."""
    with opened(db, url, api_key) as memory:
        record = memory.retract(
            id, sources=list(source or []), targets=list(target or []), key=key,
            key_scope=key_scope, scope=scope, reason=reason, namespace=namespace,
        )  # fmt: skip
    if as_json:
        emit_json(record)
    else:
        out.print(f"retraction {record.id}: {record.content}", markup=False)
    return 0


@app.command()
def supersede(
    new_id: str,
    old_id: str,
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
) -> int:
    """Memory.supersede: NEW_ID replaces OLD_ID wherever NEW_ID is visible."""
    with opened(db, url, api_key) as memory:
        memory.supersede(new_id, old_id, namespace=namespace)
    out.print(f"{new_id} supersedes {old_id}", markup=False)
    return 0


@app.command()
def withdraw(
    id: str,
    reason: str = "",
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
) -> int:
    """Memory.withdraw: take an event or record out of every view (reversible)."""
    with opened(db, url, api_key) as memory:
        memory.withdraw(id, reason=reason, namespace=namespace)
    out.print(f"withdrew {id}", markup=False)
    return 0


@app.command()
def restore(
    id: str,
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
) -> int:
    """Memory.restore: undo a withdrawal."""
    with opened(db, url, api_key) as memory:
        memory.restore(id, namespace=namespace)
    out.print(f"restored {id}", markup=False)
    return 0


@app.command()
def erase(
    id: str,
    reason: str = "",
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
    as_json: AsJson = False,
) -> int:
    """Memory.erase: irreversibly remove the text of ID and of everything built on it."""
    with opened(db, url, api_key) as memory:
        erased = memory.erase(id, reason=reason, namespace=namespace)
    if as_json:
        emit_json(erased)
    else:
        out.print(f"erased {len(erased)}: {', '.join(sorted(erased))}", markup=False)
    return 0


# -- reporting ------------------------------------------------------------------------------
@app.command()
def report(
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
) -> int:
    """Memory.report: decision counts by reason and the store's gauges (JSON)."""
    with opened(db, url, api_key) as memory:
        emit_json(memory.report(namespace=namespace))
    return 0


@app.command()
def audit(
    id: str | None = None,
    op: str | None = None,
    since: float | None = None,
    until: float | None = None,
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
    as_json: AsJson = False,
) -> int:
    """Memory.audit: mutations in order, by id, never content."""
    with opened(db, url, api_key) as memory:
        entries = memory.audit(id=id, op=op, since=since, until=until, namespace=namespace)
    if as_json:
        emit_json(entries)
        return 0
    table = Table("seq", "op", "ids", "actor", "reason", title=f"audit of {namespace!r}")
    for e in entries:
        table.add_row(str(e.seq), e.op, ", ".join(e.ids), e.actor or "", e.reason)
    out.print(table)
    return 0


@app.command()
def history(
    record_id: str,
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
) -> int:
    """Memory.history: what happened to RECORD_ID, oldest first (JSON)."""
    with opened(db, url, api_key) as memory:
        emit_json(memory.history(record_id, namespace=namespace))
    return 0


@app.command()
def tree(
    event: Annotated[str, typer.Argument(help="any event of the conversation")],
    anchor: Annotated[
        str | None, typer.Option(help="where the conversation is (default EVENT)")
    ] = None,
    cross_tree: CrossTree = False,
    mode: Mode = None,
    db: Db = None,
    url: Url = None,
    api_key: ApiKeyOpt = None,
    namespace: Namespace = "default",
) -> int:
    """The tree of EVENT, the path to --anchor in bold, every record's visibility there."""
    at = anchor or event
    with opened(db, url, api_key) as memory:
        root_path = memory.path(event, namespace=namespace)
        on_path = {e.id for e in memory.path(at, namespace=namespace)}
        tree_id = root_path[-1].tree
        nodes = _tree_events(memory, namespace, tree_id, root_path)
        decisions = _decisions(memory, namespace, at, cross_tree, mode)
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
    table = Table("record", "visible", "reason", "source", "content", title=f"records at {at}")
    for why, content in decisions:
        table.add_row(
            why.record_id, "yes" if why.visible else "no", why.reason, why.source or "",
            content or "",
        )  # fmt: skip
    out.print(table)
    return 0


def _tree_events(memory: Any, namespace: str, tree_id: str | None, fallback: list[Any]) -> Any:
    from .client import Client

    if tree_id is None:
        return fallback
    if isinstance(memory, Client):
        from .model import Event

        data = memory._request(
            "GET", f"{memory._ns(namespace)}/trees/{memory._id(tree_id, 'tree')}"
        )
        return [Event(**e) for e in data["events"]]
    from .model import Event
    from .server.explorer import tree as explore

    return [Event(**e) for e in explore(memory, namespace, tree_id)["events"]]


def _decisions(
    memory: Any, namespace: str, anchor: str, cross_tree: bool, mode: str | None
) -> list[tuple[Any, str | None]]:
    from .client import Client

    if isinstance(memory, Client):
        views = memory._pages(
            f"{memory._ns(namespace)}/explanations",
            {"anchor": anchor, "cross_tree": "true" if cross_tree else "false", "mode": mode},
        )
        from .model import Explanation

        return [(Explanation(**v["explanation"]), v["content"]) for v in views]
    from .server.explorer import record_views

    found = record_views(memory, namespace, anchor, cross_tree=cross_tree, mode=mode)
    from .model import Explanation

    return [(Explanation(**v["explanation"]), v["content"]) for v in found]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (library errors: a one-line message and 2)."""
    import click

    try:
        result = app(
            args=list(argv) if argv is not None else None,
            prog_name="branchmem",
            standalone_mode=False,
        )
    except click.exceptions.Exit as done:
        return int(done.exit_code)
    except click.ClickException as error:
        error.show()
        return int(error.exit_code)
    except click.exceptions.Abort:
        return 1
    except BranchmemError as error:
        err.print(f"branchmem: error: {error}", markup=False)
        return 2
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
