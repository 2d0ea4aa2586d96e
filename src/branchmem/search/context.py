"""Context assembly: what a prompt gets at an anchor, within a token budget.

``assemble_context`` is storage-free: ``Memory.context`` hands it the anchor's path (root to
anchor) and the records visible there, and delivery tracking keeps its ``Context.items``. The
default format, in full::

    Memory:
    - <record content, whitespace collapsed to one line>
    - ...

    Conversation:
    User: <message content>
    Assistant: <message content>

A section with nothing in it is left out (heading included); an empty context is ``""``.
Headings and role labels come from a ``ContextFormat`` (``CHINESE_FORMAT`` is provided).

With ``cite`` (``Memory.context(..., cite=True)``) each memory line ends with a marker
``[n]``, numbered from 1 in rendered order, and a last section lists each marker's record and
the messages it rests on, with their conversations (``citation_line``)::

    Memory:
    - <record content> [1]

    Conversation:
    ...

    Sources:
    [1] <record id> <- <message id>, <message id> (<conversation>)

The markers and the list are priced with their record, so the budget holds them too.

What goes in, in order of priority:

1. Records, up to ``record_share`` of the budget, best first: records relevant to the query
   (by the given ``ranking`` of record ids, else by ``lexical.rank``), then keyed records,
   then the others, each group most recent (latest in input order) first. Only the current
   value of each ``(scope, key)`` is used, the last one in input order (pass records in
   ``visible()`` order, which is path order) — unless ``decided`` says a view has already
   chosen one current value per key, as ``Memory.context`` does; records of ``skip_kinds``
   (retractions, whose content is a reason, by default) are left out. A record that does not
   fit is skipped, never cut, and the next one is tried.
2. Messages of the current branch, most recent first, as long as they fit; the first message
   that does not fit whole is cut (its beginning kept, ``…`` appended) and older ones are left
   out, so the transcript is one unbroken stretch that ends at the anchor. Messages are
   rendered in chronological order.
3. Records that did not fit in their share, if the messages left room.

Each piece is priced once (a record left out of its share is not priced again in step 3), and
a text with a visible character is taken to cost at least one token, so no record is priced
once the room left is zero.

The whole text is measured with the counter at the end; should a counter not add up over
the pieces (a BPE tokenizer merging across a newline), the last piece taken is dropped until
the text fits. So ``counter.count(context.text) <= budget`` for every input.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Final, NamedTuple, Protocol

from ..errors import InvalidInput
from ..model import Citation
from .lexical import rank
from .tokens import DEFAULT_COUNTER, TokenCounter, check_budget, count_tokens, truncate


class Message(Protocol):
    """What a path event must offer (``branchmem.Event`` does). One that also has ``tokens``
    (a store's ``PathMessage``) is priced by it under the default counter; None or absent:
    ``content`` is counted."""

    @property
    def id(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...


class MemoryItem(Protocol):
    """What a visible record must offer (``branchmem.Record`` does)."""

    @property
    def id(self) -> str: ...
    @property
    def revision(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def key(self) -> str | None: ...
    @property
    def scope(self) -> str | None: ...


class Memo(NamedTuple):
    """A ``MemoryItem`` holding only what assembly reads: ``Memory.context`` offers the
    view's revisions as these, not as ``Record``s (a frozen dataclass of ten fields costs
    five times as much to make, forty times a context)."""

    id: str
    revision: int
    kind: str
    content: str
    key: str | None
    scope: str | None


@dataclass(frozen=True, slots=True)
class ContextFormat:
    """Headings, role labels and the record bullet of the rendered context."""

    memory_heading: str = "Memory:"
    conversation_heading: str = "Conversation:"
    roles: tuple[tuple[str, str], ...] = (
        ("user", "User"),
        ("assistant", "Assistant"),
        ("system", "System"),
        ("tool", "Tool"),
    )
    bullet: str = "- "
    sources_heading: str = "Sources:"  # the citation list of a cited context

    def label(self, role: str) -> str:
        """The label of a role; an unknown role is shown as it is."""
        return dict(self.roles).get(role, role)


DEFAULT_FORMAT: Final = ContextFormat()
CHINESE_FORMAT: Final = ContextFormat(
    memory_heading="记忆：",
    conversation_heading="对话：",
    roles=(("user", "用户"), ("assistant", "助手"), ("system", "系统"), ("tool", "工具")),
    sources_heading="来源：",
)

# (record id, revision) -> its citation (marker 0: numbered when rendered)
Cite = Callable[[str, int], Citation]


def citation_line(citation: Citation) -> str:
    """A citation as the Sources section renders it: ``[n] id <- m1, m2 (tree)``."""
    line = f"[{citation.marker}] {citation.record_id}"
    if citation.messages:
        line += " <- " + ", ".join(citation.messages)
    if citation.trees:
        line += " (" + ", ".join(citation.trees) + ")"
    return line


@dataclass(frozen=True, slots=True)
class Context:
    """The text for a prompt and what it was made of.

    ``items`` are the (record id, revision) pairs rendered, in rendered order (what delivery
    tracking remembers); ``events`` the ids of the messages rendered, oldest first; ``tokens``
    the counter's count of ``text``, never above the budget; ``citations`` (a cited context
    only) one per item, in the same order, marker n for the n-th memory line; ``delivery``
    the seq of the delivery a session's context was remembered as (what ``blame`` takes).
    """

    text: str
    items: tuple[tuple[str, int], ...]
    anchor: str | None
    tokens: int
    events: tuple[str, ...] = ()
    citations: tuple[Citation, ...] = ()
    delivery: int | None = None


@dataclass(slots=True)
class _Piece:
    """A record's line; messages, hundreds per context, are plain tuples (``_Said``)."""

    order: int  # rendered order within the memory section
    line: str
    record: tuple[str, int]
    cost: int = -1  # the counter's count of the line, once asked
    citation: Citation | None = None  # a cited context's, looked up when first priced


_Said = tuple[str, str]  # a message taken: (line, event id)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def prioritize(
    records: Sequence[MemoryItem],
    *,
    query: str | None = None,
    ranking: Sequence[str] | None = None,
    skip_kinds: Collection[str] = ("retraction",),
    decided: bool = False,
) -> list[MemoryItem]:
    """Records in the order ``assemble_context`` offers them to the budget (rule 1).

    ``decided``: the records hold one current value per ``(scope, key)`` already (a view
    decided it, by path order); no competition by input order is run again.
    """
    latest: dict[str, int] = {}
    current: dict[tuple[str | None, str], int] = {}
    for index, record in enumerate(records):
        if record.kind in skip_kinds or not record.content or record.content.isspace():
            continue
        latest[record.id] = index
        if record.key is not None and not decided:
            current[(record.scope, record.key)] = index

    def is_current(index: int) -> bool:
        key, scope = records[index].key, records[index].scope
        return decided or key is None or current[(scope, key)] == index

    kept = [index for index in sorted(latest.values()) if is_current(index)]
    relevance: dict[str, int] = {}
    if ranking is not None:
        for position, record_id in enumerate(ranking):
            relevance.setdefault(record_id, position)
    elif query is not None:
        documents = {records[index].id: records[index].content for index in kept}
        hits = rank(query, documents, k=len(documents))
        relevance = {hit.doc_id: position for position, hit in enumerate(hits)}

    def priority(index: int) -> tuple[int, int, int]:
        record = records[index]
        if record.id in relevance:
            return (0, relevance[record.id], 0)
        return (1 if record.key is not None else 2, 0, -index)

    return [records[index] for index in sorted(kept, key=priority)]


def assemble_context(
    *,
    anchor: str | None,
    path_events: Sequence[Message],
    records: Sequence[MemoryItem],
    query: str | None = None,
    budget: int,
    counter: TokenCounter = DEFAULT_COUNTER,
    ranking: Sequence[str] | None = None,
    record_share: float = 0.5,
    skip_kinds: Collection[str] = ("retraction",),
    style: ContextFormat = DEFAULT_FORMAT,
    decided: bool = False,
    cite: Cite | None = None,
) -> Context:
    """Messages of the anchor's branch plus visible records, within ``budget`` tokens.

    ``path_events`` run root to anchor; ``ranking`` (record ids, best first, e.g. from a hybrid
    search) replaces the lexical ranking of ``query``. Deterministic: the same inputs give the
    same text. See the module docstring for the rules. ``cite`` looks up a record's
    citation: given, the context is cited (markers and a Sources section).
    """
    check_budget(budget)
    if (
        isinstance(record_share, bool)
        or not isinstance(record_share, int | float)
        or not 0.0 <= record_share <= 1.0
    ):
        raise InvalidInput(f"record_share must be between 0 and 1, got {record_share!r}")
    if query is not None and not isinstance(query, str):
        raise InvalidInput(f"query must be a string or None, got {type(query).__name__}")
    offered = prioritize(
        records, query=query, ranking=ranking, skip_kinds=skip_kinds, decided=decided
    )
    headings = (style.memory_heading, style.conversation_heading, style.sources_heading)
    heading_cost = counter.count(headings[0] + "\n")
    if cite is not None:
        heading_cost += counter.count(headings[2] + "\n")
    fill = _Fill(counter, heading_cost, cite)

    left: list[_Piece] = []
    cap = math.floor(budget * record_share)
    for order, item in enumerate(offered):
        piece = _Piece(order, style.bullet + _one_line(item.content), (item.id, item.revision))
        if fill.used >= cap or not fill.take_within(piece, cap):
            left.append(piece)
    shared = len(fill.taken)  # records taken within their share

    said = _messages(path_events, budget, counter, style, fill, headings[1])
    cited = cite is not None

    for piece in left:
        if fill.used >= budget:
            break
        fill.take_within(piece, budget)

    taken = fill.taken
    text = _render(taken, said, headings, cited)
    additive = getattr(counter, "additive", False) and not cited  # markers are renumbered
    tokens = fill.used if additive else counter.count(text)
    while tokens > budget and (taken or said):  # drop the last piece taken
        if len(taken) > shared or not said:
            taken.pop()
            shared = min(shared, len(taken))
        else:
            said.pop()
        text = _render(taken, said, headings, cited)
        tokens = counter.count(text)
    rendered = sorted(taken, key=_by_order)
    return Context(
        text=text,
        items=tuple(p.record for p in rendered),
        anchor=anchor,
        tokens=tokens,
        events=tuple(event_id for _, event_id in reversed(said)),
        citations=tuple(
            replace(p.citation, marker=n)
            for n, p in enumerate(rendered, 1)
            if p.citation is not None
        ),
    )


def _messages(
    path_events: Sequence[Message],
    budget: int,
    counter: TokenCounter,
    style: ContextFormat,
    fill: _Fill,
    heading: str,
) -> list[_Said]:
    """Rule 2: messages from the anchor back while they fit, the first that does not cut.

    Hundreds of messages per call: one pass, no object per message, each line priced once;
    a lazy path (``engine.events.PathMessages``) loads only the pages this loop reaches."""
    said: list[_Said] = []
    take = said.append
    labels = dict(style.roles)
    count = counter.count
    # an additive counter prices "Label: " + content as the two apart: the label once per role
    additive = getattr(counter, "additive", False)
    # the default counter's count of an event's content is kept with the event by the store
    # (``PathMessage.tokens``): at a million events most lines would miss the count's cache
    kept = additive and count is count_tokens
    prefixes: dict[str, tuple[str, int]] = {}
    opening = count(heading + "\n")  # paid with the first message taken
    used = fill.used
    for event in reversed(path_events):
        content = event.content
        if not content or content.isspace():
            continue
        role = event.role
        known = prefixes.get(role)
        if known is None:
            prefix = f"{labels.get(role, role)}: "
            known = prefixes[role] = (prefix, count(prefix))
        prefix, prefix_cost = known
        line = prefix + content
        if kept:
            tokens = getattr(event, "tokens", None)
            price = prefix_cost + (count(content) if tokens is None else tokens) + opening
        elif additive:
            price = prefix_cost + count(content) + opening
        else:
            price = count(line + "\n") + opening
        if used + price <= budget:
            take((line, event.id))
            used += price
            opening = 0
            continue
        cut = truncate(line, max(budget - used - opening, 0), counter)
        if len(cut) > len(prefix) + 1 and cut.startswith(prefix):  # more than "…" is left
            price = count(cut + "\n") + opening
            if used + price <= budget:
                take((cut, event.id))
                used += price
        break
    fill.used = used
    return said


def _by_order(piece: _Piece) -> int:
    return piece.order


class _Fill:
    """Records taken so far and what everything taken costs; the memory heading is paid
    with the first record."""

    def __init__(self, counter: TokenCounter, heading_cost: int, cite: Cite | None) -> None:
        self.counter = counter
        self.heading_cost = heading_cost
        self.cite = cite
        self.taken: list[_Piece] = []
        self.used = 0

    def take_within(self, piece: _Piece, limit: int) -> bool:
        if piece.cost < 0:
            piece.cost = self.counter.count(piece.line + "\n")
            if self.cite is not None:  # priced at marker order + 1: never fewer digits
                citation = replace(self.cite(*piece.record), marker=piece.order + 1)
                piece.citation = citation
                piece.cost = self.counter.count(_marked(piece.line, citation.marker) + "\n")
                piece.cost += self.counter.count(citation_line(citation) + "\n")
        price = piece.cost + (0 if self.taken else self.heading_cost)
        if self.used + price > limit:
            return False
        self.taken.append(piece)
        self.used += price
        return True


def _marked(line: str, marker: int) -> str:
    return f"{line} [{marker}]"


def _render(
    records: Sequence[_Piece], said: Sequence[_Said], headings: tuple[str, str, str], cited: bool
) -> str:
    sections: list[str] = []
    rendered = sorted(records, key=_by_order)
    if rendered:
        if cited:
            lines = [_marked(p.line, n) for n, p in enumerate(rendered, 1)]
        else:
            lines = [p.line for p in rendered]
        sections.append("\n".join([headings[0], *lines]))
    if said:
        sections.append("\n".join([headings[1], *[line for line, _ in reversed(said)]]))
    if cited and rendered:
        notes = [
            citation_line(replace(p.citation, marker=n))
            for n, p in enumerate(rendered, 1)
            if p.citation is not None
        ]
        sections.append("\n".join([headings[2], *notes]))
    return "\n\n".join(sections)
