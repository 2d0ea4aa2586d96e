"""What an import will write, per conversation, and how it is applied to a Memory.

A plan is computed without a Memory, so parsers are testable on their own and a CLI can
show a dry run. Conversations are produced lazily: a plan over a file re-reads the file
each time it is iterated, so memory stays flat however many conversations it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import BranchmemError, ConflictError, NotFoundError
from .errors import ImportFormatError, ImportTooLarge
from .tree import Message, latest_leaf, leaves, order_tree

if TYPE_CHECKING:
    from ..memory import Memory


@dataclass(frozen=True, slots=True)
class ConversationPlan:
    """One conversation's events (parent before child), its head and why, or its error."""

    format: str
    index: int
    path: str
    tree: str | None
    title: str | None = None
    events: tuple[dict[str, Any], ...] = ()
    head: str | None = None
    head_reason: str = ""
    branches: int = 0
    error: BranchmemError | None = None
    replaced: tuple[str, ...] = ()  # events whose unstorable characters became U+FFFD

    @property
    def label(self) -> str:
        """How messages name this conversation: its id and title, else its position."""
        if self.tree is None:
            return f"#{self.index} at {self.path}"
        return f"{self.tree!r} ({self.title!r})" if self.title else repr(self.tree)

    def transcript(self) -> list[tuple[str, str]]:
        """(role, content) from the root to the head, hidden messages left out.

        This is what the app displays; after ``apply`` it equals ``memory.path(head)``
        with the same filter.
        """
        if self.head is None:
            return []
        by_id = {event["id"]: event for event in self.events}
        chain: list[dict[str, Any]] = []
        current: str | None = self.head
        while current is not None:
            event = by_id[current]
            chain.append(event)
            current = event["parent"]
        return [
            (event["role"], event["content"])
            for event in reversed(chain)
            if not event["meta"].get("hidden")
        ]


def conversation_plan(
    *,
    format: str,
    index: int,
    path: str,
    tree: str,
    title: str | None,
    messages: Sequence[Message],
    head: str | None,
    head_reason: str,
    head_path: str | None = None,
    tree_title: str | None = None,
) -> ConversationPlan:
    """Order and check a parsed conversation; raises ImportFormatError naming ``tree``.

    With ``head`` None the latest leaf becomes the head and ``head_reason`` says why the
    export's own head could not be used. The root event carries ``tree_title`` (default:
    ``title``) as ``meta["title"]``, the name ``Memory.conversations`` lists.
    """
    label = f"{tree!r} ({title!r})" if title else repr(tree)
    ordered = order_tree(messages, label)
    if head is None:
        tip, how = latest_leaf(ordered)
        head = tip.id if tip is not None else None
        head_reason = f"{head_reason}: {how}" if head_reason else how
    elif not any(message.id == head for message in ordered):
        raise ImportFormatError(
            f"head {head!r} ({head_reason}) is not a message of this conversation",
            conversation=label,
            path=head_path or path,
        )
    return ConversationPlan(
        format=format,
        index=index,
        path=path,
        tree=tree,
        title=title,
        events=tuple(_titled(message.as_event(tree), tree_title or title) for message in ordered),
        head=head,
        head_reason=head_reason,
        branches=len(leaves(ordered)),
    )


def _titled(event: dict[str, Any], title: str | None) -> dict[str, Any]:
    """The conversation's title goes on its root event (``Memory.conversations`` reads it)."""
    if title and event["parent"] is None:
        event["meta"]["title"] = title
    return event


@dataclass(frozen=True, slots=True)
class ImportProgress:
    """Where a running import is: ``done`` of ``total`` ``unit`` (bytes or conversations)."""

    done: int
    total: int | None
    unit: str
    conversations: int
    events_added: int


ProgressCallback = Callable[[ImportProgress], None]


@dataclass(frozen=True, slots=True)
class ConversationOutcome:
    """What an import did with one conversation: its head and the rule that chose it."""

    tree: str | None
    title: str | None
    head: str | None
    head_reason: str
    events: int
    added: int
    error: str | None = None


@dataclass(slots=True)
class ImportSummary:
    """Counts of an applied import plus every per-conversation error; printable."""

    format: str
    format_reason: str
    source: str
    namespace: str = "default"
    conversations: int = 0
    imported: int = 0
    failed: int = 0
    events_added: int = 0
    events_existing: int = 0
    branches: int = 0
    heads_moved: int = 0
    heads_unchanged: int = 0
    errors: list[str] = field(default_factory=list)
    kept_stored: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    outcomes: list[ConversationOutcome] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [
            f"format: {self.format} ({self.format_reason})",
            f"source: {self.source} -> namespace {self.namespace!r}",
            f"conversations: {self.conversations} ({self.imported} imported, {self.failed} failed)",
            f"events: {self.events_added} added, {self.events_existing} already present",
            f"branches: {self.branches}",
            f"heads: {self.heads_moved} set or moved, {self.heads_unchanged} unchanged",
        ]
        if self.kept_stored:
            lines.append(
                f"edited in place since an earlier import (stored text kept): "
                f"{len(self.kept_stored)}"
            )
            lines.extend(f"  {entry}" for entry in self.kept_stored)
        if self.replaced:
            lines.append(
                f"text changed to be storable (NUL or lone surrogate -> U+FFFD): "
                f"{len(self.replaced)} events"
            )
            lines.extend(f"  {entry}" for entry in self.replaced)
        if self.errors:
            lines.append(f"errors: {len(self.errors)} (nothing of these conversations imported)")
            lines.extend(f"  {error}" for error in self.errors)
        return "\n".join(lines)


Producer = Callable[[], Iterator[tuple[ConversationPlan, int]]]


class ImportPlan:
    """A parsed export: its detected format and a re-iterable stream of conversation plans."""

    def __init__(
        self,
        *,
        format: str,
        format_reason: str,
        source: str,
        produce: Producer,
        total: int | None,
        unit: str,
    ) -> None:
        self.format = format
        self.format_reason = format_reason
        self.source = source
        self.total = total
        self.unit = unit
        self._produce = produce

    def __iter__(self) -> Iterator[ConversationPlan]:
        return self.conversations()

    def conversations(self) -> Iterator[ConversationPlan]:
        """Each conversation's plan in file order (streams the source again)."""
        for conversation, _ in self._produce():
            yield conversation

    def apply(
        self,
        memory: Memory,
        *,
        namespace: str = "default",
        progress: ProgressCallback | None = None,
    ) -> ImportSummary:
        """Write every conversation (atomically each) and set its head; never raises for one.

        Re-applying is idempotent: events already stored are skipped, so a newer export of
        the same conversation adds only its new events and moves the head. A stored event
        whose text the export now shows differently (an in-place edit) keeps its stored
        text, because events are immutable; the summary lists it. A stored event with a
        different parent, tree or role fails that conversation with a ConflictError.
        """
        summary = ImportSummary(
            format=self.format,
            format_reason=self.format_reason,
            source=self.source,
            namespace=namespace,
        )
        try:
            for conversation, done in self._produce():
                summary.conversations += 1
                _apply_conversation(memory, conversation, namespace, summary)
                if progress is not None:
                    progress(
                        ImportProgress(
                            done=done,
                            total=self.total,
                            unit=self.unit,
                            conversations=summary.conversations,
                            events_added=summary.events_added,
                        )
                    )
        except ImportTooLarge as error:
            # what was written stays (each conversation whole); the error says how much
            raise error.stopped_after(summary) if summary.conversations else error from None
        return summary


def _apply_conversation(
    memory: Memory, conversation: ConversationPlan, namespace: str, summary: ImportSummary
) -> None:
    if conversation.error is not None:
        summary.failed += 1
        summary.errors.append(str(conversation.error))
        summary.outcomes.append(_outcome(conversation, 0, str(conversation.error)))
        return
    try:
        fresh, kept = _fresh_events(memory, conversation, namespace)
        if fresh:
            memory.add_events(fresh, namespace=namespace)
        moved = False
        if (
            conversation.head is not None
            and conversation.tree is not None
            and memory.head(conversation.tree, namespace=namespace) != conversation.head
        ):
            memory.set_head(conversation.head, namespace=namespace)
            moved = True
    except BranchmemError as error:
        summary.failed += 1
        summary.errors.append(f"conversation {conversation.label}: {error}")
        summary.outcomes.append(_outcome(conversation, 0, str(error)))
        return
    summary.outcomes.append(_outcome(conversation, len(fresh)))
    summary.imported += 1
    summary.events_added += len(fresh)
    summary.events_existing += len(conversation.events) - len(fresh)
    summary.branches += conversation.branches
    if moved:
        summary.heads_moved += 1
    elif conversation.head is not None:
        summary.heads_unchanged += 1
    summary.kept_stored.extend(kept)
    summary.replaced.extend(conversation.replaced)


def _outcome(
    conversation: ConversationPlan, added: int, error: str | None = None
) -> ConversationOutcome:
    return ConversationOutcome(
        tree=conversation.tree,
        title=conversation.title,
        head=conversation.head,
        head_reason=conversation.head_reason,
        events=len(conversation.events),
        added=added,
        error=error,
    )


def _fresh_events(
    memory: Memory, conversation: ConversationPlan, namespace: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """The events not stored yet, plus notes on stored events whose text has changed."""
    fresh: list[dict[str, Any]] = []
    kept: list[str] = []
    for event in conversation.events:
        try:
            stored = memory.get_event(event["id"], namespace=namespace)
        except NotFoundError:
            fresh.append(event)
            continue
        for name in ("parent", "tree", "role"):
            if getattr(stored, name) != event[name]:
                raise ConflictError(
                    f"event {event['id']!r} is already stored with {name} "
                    f"{getattr(stored, name)!r}; this export says {event[name]!r}"
                )
        if stored.content != event["content"]:
            kept.append(f"conversation {conversation.label}: event {event['id']!r}")
    return fresh, kept
