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
   (retractions, whose content is a reason, by default) are left out. The query-relevant
   records come first: each one longer than its slot (1/``PASSAGE_SHARE`` = 1/16 of the
   records' share) is cut to what matches the query within the slot (below), the others are
   taken whole where they fit; then those that did not fit are cut to the room left, and
   only then are the others offered; any other record that does not fit is skipped, never
   cut, and the next one is tried.
2. Messages of the current branch, most recent first, as long as they fit; the first message
   that does not fit whole is cut (its beginning kept, ``…`` appended) and older ones are left
   out, so the transcript is one unbroken stretch that ends at the anchor. Messages are
   rendered in chronological order.
3. Records that did not fit in their share, if the messages left room, in the same way.

Cut to what matches: given a ``query``, a record relevant to it (in ``ranking``, else matched
by ``lexical.rank``) that does not fit whole keeps the passage that matches the query best,
so a long record (a chat turn with code) still delivers the sentence that answers. Its
content is split into pieces: sentences (ending at ``.!?`` before a space, or at ``。！？``)
and lines, a line of a fenced code block whole. A piece scores the summed weight of the
query terms (``lexical.query_terms``) that are substrings of its ``lexical.normalize`` form,
a term weighing its idf among the candidate records (a rare term counts more). The
best-scoring piece that fits the room left is the seed (ties: the earliest), and the
passage grows by the neighbouring piece that scores more (ties: the earlier) while its line
still fits. The line shows ``…`` where text was left out::

    - … the API now answers in 120ms …

A passage without a matching term, or of fewer than ``MIN_CUT`` (8) tokens, is not made:
the record is taken whole if it fits, else skipped. The slot keeps one long record from
taking the room of the next fifteen: cutting the first long record to fill the room left put
the updated turn of BEAM among the first ten the context uses for 17 questions of 62, against
43 when long records were skipped, and 47 with the slot (as many as ``search`` ranks in its
top ten). A slot under ``MIN_CUT`` (a budget under ~260 tokens) caps nothing.
A cut record is in ``Context.items`` (it was delivered, in part) and is cited like any
other, its marker priced with the cut line.

Each piece is priced once (a record left out of its share is not priced again in step 3; a
cut prices the passages it tries), and a text with a visible character is taken to cost at
least one token, so no record is priced once the room left is zero.

The whole text is measured with the counter at the end; should a counter not add up over
the pieces (a BPE tokenizer merging across a newline), the last piece taken is dropped until
the text fits. So ``counter.count(context.text) <= budget`` for every input.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Final, NamedTuple, Protocol

from ..errors import InvalidInput
from ..model import Citation
from .lexical import CorpusStats, idf, normalize, query_terms, rank
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

MIN_CUT: Final = 8  # fewest tokens a record is cut down to; less says too little to be worth it
# a query-relevant record may take at most 1/16 of the records' share whole; a longer one is
# cut to its best passage within that, so the top ~16 relevant records fit (module docstring)
PASSAGE_SHARE: Final = 16


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
    cuttable: str | None = None  # a query-relevant record's content: may be cut to a passage


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
    return _prioritized(records, query, ranking, skip_kinds, decided)[0]


def _prioritized(
    records: Sequence[MemoryItem],
    query: str | None,
    ranking: Sequence[str] | None,
    skip_kinds: Collection[str],
    decided: bool,
) -> tuple[list[MemoryItem], Collection[str]]:
    """``prioritize``'s order and the ids of the query-relevant records (those may be cut)."""
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

    return [records[index] for index in sorted(kept, key=priority)], relevance.keys()


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
    offered, relevant = _prioritized(records, query, ranking, skip_kinds, decided)
    headings = (style.memory_heading, style.conversation_heading, style.sources_heading)
    heading_cost = counter.count(headings[0] + "\n")
    if cite is not None:
        heading_cost += counter.count(headings[2] + "\n")
    passages = None if query is None else _Passages(query, offered, style.bullet)
    fill = _Fill(counter, heading_cost, cite, passages)
    fill.longest = math.floor(budget * record_share) // PASSAGE_SHARE

    pieces: list[_Piece] = []
    for order, item in enumerate(offered):
        piece = _Piece(order, style.bullet + _one_line(item.content), (item.id, item.revision))
        if passages is not None and item.id in relevant:
            piece.cuttable = item.content
        pieces.append(piece)
    left = fill.take_records(pieces, math.floor(budget * record_share))
    shared = len(fill.taken)  # records taken within their share

    said = _messages(path_events, budget, counter, style, fill, headings[1])
    cited = cite is not None

    fill.take_records(left, budget)

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
    a lazy path (``_engine.events.PathMessages``) loads only the pages this loop reaches."""
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

    def __init__(
        self,
        counter: TokenCounter,
        heading_cost: int,
        cite: Cite | None,
        passages: _Passages | None,
    ) -> None:
        self.counter = counter
        self.heading_cost = heading_cost
        self.cite = cite
        self.passages = passages
        self.taken: list[_Piece] = []
        self.used = 0
        self.longest = 0  # what a relevant record may cost before it is cut (0: no cap)

    def take_records(self, pieces: Sequence[_Piece], limit: int) -> list[_Piece]:
        """Take what fits of ``pieces`` (in priority order) within ``limit``; the ones left.

        The query-relevant ones, first, are taken whole where they fit, then cut where they
        do not, before the others: a cut never crowds out a relevant record that fits whole."""
        relevant = [piece for piece in pieces if piece.cuttable is not None]
        left = [piece for piece in relevant if not self.take_within(piece, limit, capped=True)]
        left = [piece for piece in left if not self.take_within(piece, limit, cut=True)]
        others = (piece for piece in pieces if piece.cuttable is None)
        return left + [piece for piece in others if not self.take_within(piece, limit)]

    def take_within(
        self, piece: _Piece, limit: int, cut: bool = False, capped: bool = False
    ) -> bool:
        """Take the record whole if it fits, else (``cut``) its best passage that does;
        ``capped``: a relevant record longer than ``longest`` is first cut to within it."""
        if self.used >= limit:  # nothing is priced once the room is gone
            return False
        if piece.cost < 0:
            if self.cite is not None:  # priced at marker order + 1: never fewer digits
                piece.citation = replace(self.cite(*piece.record), marker=piece.order + 1)
            piece.cost = self.cost(piece, piece.line)
        heading = 0 if self.taken else self.heading_cost
        room = limit - self.used - heading
        if capped and MIN_CUT <= self.longest < piece.cost and room >= MIN_CUT:
            cap = min(room, self.longest)
            if self.cut(piece, cap):  # else: a relevant record without a matching passage
                self.taken.append(piece)
                self.used += heading + piece.cost
                return True
        if piece.cost > room and not (cut and self.cut(piece, room)):
            return False
        self.taken.append(piece)
        self.used += heading + piece.cost
        return True

    def cost(self, piece: _Piece, line: str) -> int:
        """What ``line`` costs as the piece's memory line, with its marker and source."""
        if piece.citation is None:
            return self.counter.count(line + "\n")
        return self.counter.count(_marked(line, piece.citation.marker) + "\n") + (
            self.counter.count(citation_line(piece.citation) + "\n")
        )

    def cut(self, piece: _Piece, room: int) -> bool:
        """Make the piece its best passage that costs at most ``room``, if there is one."""
        if piece.cuttable is None or self.passages is None or room < MIN_CUT:
            return False
        line = self.passages.cut(piece.cuttable, lambda line: self.cost(piece, line) <= room)
        if line is None or self.counter.count(line) < MIN_CUT:
            return False
        piece.line, piece.cost = line, self.cost(piece, line)
        return True


# a sentence ends at .!? before a space or the line's end, or at 。！？; else the line does
_SENTENCE: Final = re.compile(r"[^\n]+?(?:[.!?]+(?=\s|$)|[。！？]+|$)", re.MULTILINE)
_LINE: Final = re.compile(r"[^\n]+")
_FENCE: Final = "```"


def _pieces(content: str) -> list[tuple[int, int]]:
    """The (start, end) spans of a record's sentences and lines, in order; a fenced code
    block's lines are kept whole, whitespace-only spans dropped."""
    spans: list[tuple[int, int]] = []
    fenced = False
    for line in _LINE.finditer(content):
        fence = line.group().lstrip().startswith(_FENCE)
        fenced ^= fence
        if fenced or fence:
            spans.append(line.span())
        else:
            spans.extend(m.span() for m in _SENTENCE.finditer(content, *line.span()))
    return [(start, end) for start, end in spans if not content[start:end].isspace()]


class _Passages:
    """Cuts a query-relevant record to the passage that matches the query best (module
    docstring); term weights are the terms' idf among the candidates, taken once, when
    the first record is cut."""

    def __init__(self, query: str, candidates: Sequence[MemoryItem], bullet: str) -> None:
        self.terms = query_terms(query)
        self.candidates = candidates
        self.bullet = bullet
        self._weights: dict[str, float] | None = None

    def weights(self) -> dict[str, float]:
        if self._weights is None:
            texts = [normalize(item.content) for item in self.candidates]
            stats = CorpusStats(len(texts), 0.0)
            self._weights = {
                term: idf(sum(term in text for text in texts), stats) for term in self.terms
            }
        return self._weights

    def cut(self, content: str, fits: Callable[[str], bool]) -> str | None:
        """The line of the best passage of ``content`` that ``fits``; None if none that
        matches a term does."""
        whole = normalize(content)
        if not any(term in whole for term in self.terms):
            return None
        weights = self.weights()
        spans = _pieces(content)
        scores = []
        for start, end in spans:
            piece = normalize(content[start:end])
            scores.append(sum(weight for term, weight in weights.items() if term in piece))

        def line(first: int, last: int) -> str:
            text = _one_line(content[spans[first][0] : spans[last][1]])
            before = "… " if first > 0 else ""
            after = " …" if last < len(spans) - 1 else ""
            return f"{self.bullet}{before}{text}{after}"

        seeds = sorted((i for i, score in enumerate(scores) if score > 0), key=lambda i: -scores[i])
        seed = next((i for i in seeds if fits(line(i, i))), None)  # sorted is stable
        if seed is None:
            return None
        first = last = seed
        while True:  # grow by the neighbour that scores more, the earlier on a tie
            options = []
            if first > 0:
                options.append((scores[first - 1], first - 1, last))
            if last + 1 < len(spans):
                options.append((scores[last + 1], first, last + 1))
            fitting = [option for option in options if fits(line(*option[1:]))]
            if not fitting:
                return line(first, last)
            _, first, last = max(fitting, key=lambda option: option[0])


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
