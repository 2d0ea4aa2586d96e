"""``branchmem mcp``: memory as tools for an agent, over MCP (stdio).

Five tools, bound to one namespace and one conversation tree:

- ``remember(content, key?, kind?, message?, event?)``: a record sourced at the user's
  message: ``message`` is added as a new event below the current one, or ``event`` names a
  message already there. With neither it is refused: the current event may be a head that
  never moved (the conversation's root), and a fact sourced there holds on every branch, so
  an agent that forgot ``message`` would silently lose branch gating;
- ``recall(query?, k?, event?)``: the records visible at the current event, best match first,
  each with the ids it was built from (its citation);
- ``forget(record_id? | key?, reason?, everywhere?)``: a retraction sourced at the current
  event (this branch), or with ``everywhere`` a tree-scope one (every branch);
- ``explain(record_id, event?)``: why a record is or is not visible at the current event;
- ``diff(other, event?)``: what memory the current event has that another message's branch
  does not, and the other way round, with why, and the keys whose value differs.

Irreversible erasure (``Memory.forget`` with its receipt) is deliberately not a tool: a
model that misreads a request must not be able to destroy data; ``forget`` here is the
reversible, gated retraction.

The current event is the conversation tree's head. ``event`` moves it (the host edited a
message or switched branch: memory written on the abandoned branch stops showing), and
``message`` extends it with the user's words, so every record has real provenance.
"""

from __future__ import annotations

import uuid
from typing import Any

from .. import __version__
from .._core.validation import check_bound
from ..errors import BranchmemError, InvalidInput, NotFoundError, require

REMEMBER_NEEDS_A_MESSAGE = (
    "remember needs `message` (the user's words the fact comes from) or `event` (the id of "
    "the message it comes from, e.g. the `event` an earlier call returned): without one the "
    "fact would be tied to no message and hold on every branch of the conversation"
)


class Conversation:
    """The agent's side: one namespace, one tree, a current event (the tree's head)."""

    def __init__(self, memory: Any, namespace: str, tree: str) -> None:
        self.memory = memory
        self.namespace = namespace
        self.tree = tree

    def current(self, event: str | None = None) -> str:
        """The event the conversation is at; ``event`` moves it there first."""
        ns = self.namespace
        if event is not None:
            found = self.memory.get_event(event, namespace=ns)
            if found.tree != self.tree:
                raise NotFoundError(f"event {event!r} is not in conversation {self.tree!r}")
            self.memory.set_head(event, namespace=ns)
            return event
        head: str | None = self.memory.head(self.tree, namespace=ns)
        if head is not None:
            return head
        self.memory.add_event(self.tree, tree=self.tree, role="system", namespace=ns)
        self.memory.set_head(self.tree, namespace=ns)
        return self.tree

    def said(self, message: str, event: str | None = None) -> str:
        """Add ``message`` below the current event; it becomes the current event."""
        parent = self.current(event)
        new_id = f"{self.tree}:{uuid.uuid4().hex[:12]}"
        self.memory.add_event(new_id, parent, content=message, namespace=self.namespace)
        self.memory.set_head(new_id, namespace=self.namespace)
        return new_id

    def remember(
        self,
        content: str,
        key: str | None = None,
        kind: str = "fact",
        message: str | None = None,
        event: str | None = None,
    ) -> dict[str, Any]:
        if not message and event is None:
            raise InvalidInput(REMEMBER_NEEDS_A_MESSAGE)
        at = self.said(message, event) if message else self.current(event)
        record = self.memory.add_record(
            f"m:{uuid.uuid4().hex[:12]}", sources=[at], content=content, kind=kind, key=key,
            namespace=self.namespace,
        )  # fmt: skip
        return {"id": record.id, "event": at, "content": record.content, "key": record.key}

    def recall(self, query: str = "", k: int = 10, event: str | None = None) -> dict[str, Any]:
        k = check_bound("k", k)  # before anything moves: the rule search() holds everywhere
        at = self.current(event)
        if query.strip():
            hits = self.memory.search(query, at, k=k, namespace=self.namespace)
            found = [
                {"id": h.record.id, "content": h.record.content, "key": h.record.key,
                 "kind": h.record.kind, "score": h.score, "sources": _sources(h.record)}
                for h in hits
            ]  # fmt: skip
        else:
            records = self.memory.visible(at, namespace=self.namespace)[-k:]
            found = [
                {
                    "id": r.id,
                    "content": r.content,
                    "key": r.key,
                    "kind": r.kind,
                    "score": None,
                    "sources": _sources(r),
                }
                for r in records
                if r.kind != "retraction"
            ]
        return {"event": at, "records": found}

    def forget(
        self,
        record_id: str | None = None,
        key: str | None = None,
        reason: str = "",
        everywhere: bool = False,
        event: str | None = None,
    ) -> dict[str, Any]:
        at = self.current(event)
        retraction = self.memory.retract(
            f"x:{uuid.uuid4().hex[:12]}", sources=[at],
            targets=[record_id] if record_id else [], key=key,
            scope="tree" if everywhere else "branch", reason=reason, namespace=self.namespace,
        )  # fmt: skip
        return {"retraction": retraction.id, "event": at, "everywhere": everywhere}

    def explain(self, record_id: str, event: str | None = None) -> dict[str, Any]:
        at = self.current(event)
        why = self.memory.explain(record_id, at, namespace=self.namespace)
        return {
            "record_id": why.record_id, "event": at, "visible": why.visible,
            "reason": why.reason, "source": why.source, "fork": why.fork,
        }  # fmt: skip

    def diff(self, other: str, event: str | None = None) -> dict[str, Any]:
        at = self.current(event)
        self.memory.get_event(other, namespace=self.namespace)  # NotFoundError names it
        found = self.memory.diff(at, other, namespace=self.namespace)

        def entries(side: list[Any]) -> list[dict[str, Any]]:
            return [
                {"id": e.record.id, "content": e.record.content, "key": e.record.key,
                 "why_not_on_the_other": e.reason, "source": e.source, "fork": e.fork}
                for e in side
            ]  # fmt: skip

        return {
            "event": at, "other": other,
            "only_here": entries(found.only_a), "only_there": entries(found.only_b),
            "keys": [
                {"key": k.key, "scope": k.scope,
                 "here": None if k.a is None else k.a.content,
                 "there": None if k.b is None else k.b.content}
                for k in found.keys
            ],
        }  # fmt: skip


def _sources(record: Any) -> list[str] | None:
    return None if record.sources is None else list(record.sources)


def build_server(conversation: Conversation) -> Any:
    """The MCP server exposing ``conversation``'s five tools."""
    require("mcp", "the MCP server (branchmem.integrations.mcp)", "mcp")
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(
        name="branchmem",
        version=__version__,
        instructions=(
            "Long-term memory that follows the conversation's branch. remember() facts the "
            "user states (pass the user's message as `message`, or the `event` id of a "
            "message already sent), recall() before answering, forget() when asked to, "
            "explain() when a memory seems missing."
        ),
    )

    def guarded(call: Any, *args: Any) -> dict[str, Any]:
        try:
            return call(*args)  # type: ignore[no-any-return]
        except BranchmemError as error:  # a tool error the model can read and act on
            raise ToolError(f"{error.code}: {error}") from error

    @server.tool()
    def remember(
        content: str,
        key: str | None = None,
        kind: str = "fact",
        message: str | None = None,
        event: str | None = None,
    ) -> dict[str, Any]:
        """Store a memory derived from the user's message: pass the text as `message`, or
        `event`, the id of a message already sent (a call's returned `event`); one of them is
        required. `key` groups values that replace each other (e.g. "city")."""
        return guarded(conversation.remember, content, key, kind, message, event)

    @server.tool()
    def recall(query: str = "", k: int = 10, event: str | None = None) -> dict[str, Any]:
        """Memories valid on the current branch, best match to `query` first."""
        return guarded(conversation.recall, query, k, event)

    @server.tool()
    def forget(
        record_id: str | None = None,
        key: str | None = None,
        reason: str = "",
        everywhere: bool = False,
        event: str | None = None,
    ) -> dict[str, Any]:
        """Stop using a memory (by id or key) from here on this branch; `everywhere` for
        every branch of the conversation."""
        return guarded(conversation.forget, record_id, key, reason, everywhere, event)

    @server.tool()
    def explain(record_id: str, event: str | None = None) -> dict[str, Any]:
        """Why a memory is or is not available at the current message."""
        return guarded(conversation.explain, record_id, event)

    @server.tool()
    def diff(other: str, event: str | None = None) -> dict[str, Any]:
        """Memory the current message's branch has and message `other`'s branch lacks (and
        the reverse), why the other side lacks it, and keys whose value differs."""
        return guarded(conversation.diff, other, event)

    return server


def run_stdio(
    *,
    db: str | None,
    url: str | None,
    api_key: str | None,
    namespace: str,
    conversation: str,
) -> None:
    """Serve over stdin/stdout until the host closes the pipe."""
    import anyio

    from ..errors import InvalidInput

    if url:
        from ..client import Client

        memory: Any = Client(url, api_key)
    elif db:
        from ..memory import Memory

        memory = Memory.open(db)
    else:
        raise InvalidInput("branchmem mcp needs --db URL or --url URL --api-key KEY")
    try:
        server = build_server(Conversation(memory, namespace, conversation))
        anyio.run(server.run_stdio_async)
    finally:
        memory.close()
