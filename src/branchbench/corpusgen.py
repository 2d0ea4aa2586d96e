"""The corpus-built splits ``locomo`` and ``beam``: real conversations, forked where a
fact is stated, a counterfactual planted on the abandoned branch.

Authored scenarios measure what their author wrote; these are built from conversations
written by other people (LoCoMo, Maharana et al., ACL 2024; BEAM 100K, Tavakoli et al.,
ICLR 2026) and probed with the corpus's own questions:

- ``locomo``: a QA item whose gold answer (a number, date, person's name or place)
  occurs verbatim in its single evidence turn. The evidence turn is the fork: the kept
  branch has the real turn, the abandoned branch the same turn with the value replaced
  by a different value of the same type. Probe ``leak``: answer = the gold value,
  forbidden = the counterfactual.
- ``beam``: a ``knowledge_update`` item whose updated value occurs verbatim in its
  ``updated_info`` turn, forked there the same way. When the ``original_info`` turn
  holds exactly one value of the same type that the update does not repeat, that turn
  is kept on the shared prefix and a ``stale`` probe forbids the original value.

Each fork is a scenario: up to ``PREFIX`` real turns before the fork (BEAM: plus the
original turn and its reply when they lie further back), then ``CONTINUATION`` real
turns after the fork on each branch (the abandoned copy carries the counterfactual
wherever the value recurs). BEAM turns are cut to ``BEAM_TURN_CHARS`` characters (the
annotated turns at the end of the sentence holding their value at the earliest).
Every fork appears three times, once per arrival order (``abandoned_first``,
``abandoned_last``, ``interleaved``).

The corpora are read at run time and nothing generated is written into the
repository; instead the canonical JSON of each generated split is pinned by SHA-256
together with the upstream commits, and ``load_corpus_split`` refuses a mismatch.
``python -m branchbench.corpusgen digest`` prints the digests after a deliberate change.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from branchbench.corpora import (
    BEAM_DIR,
    BEAM_UPSTREAM,
    LOCOMO_DIR,
    LOCOMO_UPSTREAM,
    BeamChat,
    CorpusError,
    CorpusTurn,
    CorpusUnavailable,
    LocomoConversation,
    corpora_root,
    load_beam,
    load_locomo,
)
from branchbench.errors import ManifestError
from branchbench.keywords import contains
from branchbench.scenario import (
    CORPUS_SPLITS,
    Fact,
    Message,
    Probe,
    Scenario,
    scenario_to_dict,
)
from branchbench.validate import validate_scenario

SEED = 20260424
FORKS = 8  # per split; each fork gives one scenario per arrival order
PREFIX = 24  # real turns before the fork
CONTINUATION = 3  # real turns after the fork, on each branch
BEAM_TURN_CHARS = 400
ORDERS = ("abandoned_first", "abandoned_last", "interleaved")
LOCOMO_CATEGORIES = (1, 2, 4)  # multi-hop, temporal, single-hop; not open-domain nor adversarial


@dataclass(frozen=True)
class Pin:
    """What a generated split is frozen to."""

    sha256: str
    folder: str
    upstream: tuple[str, str]  # repository, commit


# SHA-256 of the canonical JSON of each generated split (``split_digest``), valid for the
# upstream commits named; a change to the generator or the corpora means changing these.
PINNED = {
    "locomo": Pin(
        "449262de1a959893236a64ab036470253a6e8c7a44e357a149152ba7b530f1e7",
        LOCOMO_DIR,
        LOCOMO_UPSTREAM,
    ),
    "beam": Pin(
        "17465b9253cf8362d16a233908d3b6d20307ff875803b2492966ddd2418874d3",
        BEAM_DIR,
        BEAM_UPSTREAM,
    ),
}


class CorpusMismatch(ManifestError):
    """A generated corpus split differs from its pinned digest, or the corpora are not
    the pinned upstream commits; the message names the split and both values."""


# --- typed values ---------------------------------------------------------------

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_MONTH = "|".join(MONTHS)
_NUMBER = r"\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?"
DATE = re.compile(
    rf"\b(?:{_MONTH}) \d{{1,2}}(?:, \d{{4}})?\b|\b\d{{1,2}} (?:{_MONTH})(?: \d{{4}})?\b"
)
TIME = re.compile(r"\b\d{1,2}(?::\d{2})? ?[AP]M\b")
AMOUNT = re.compile(rf"(?<![\w.,$])\$?(?:\d+-\d+|{_NUMBER})(?:%|ms\b|k\b)?(?: [a-z]+)?")
_PROPER = re.compile(r"[A-Z][\w'-]*(?: [A-Z][\w'-]*)*")

PLACES = (
    "Lisbon", "Kyoto", "Reykjavik", "Montreal", "Marrakesh", "Tallinn", "Cartagena",
    "Hobart", "Valencia", "Bergen", "Oaxaca", "Krakow", "Halifax", "Porto", "Busan",
)  # fmt: skip
NAMES = (
    "Biscuit", "Juniper", "Clover", "Maple", "Pickles", "Rosie", "Toby", "Hazel",
    "Oliver", "Winnie", "Jasper", "Poppy",
)  # fmt: skip
FULL_NAMES = (
    "Nora Jones", "Leon Bridges", "Sam Fender", "Maggie Rogers", "Tom Odell",
    "Lorde Wilson", "Jack Johnson", "Norah Baxter",
)  # fmt: skip


@dataclass(frozen=True)
class Value:
    """A value found in a turn: its text as written and its type."""

    text: str
    kind: str  # number, date, time, name, place


def _boundary(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w$]){re.escape(value)}(?![\w%])")


def occurs(text: str, value: str) -> bool:
    """The value occurs in the text as written (not inside a longer word or number)."""
    return _boundary(value).search(text) is not None


def substitute(text: str, value: str, replacement: str) -> str:
    """Every occurrence of the value replaced (same boundaries as ``occurs``)."""
    return _boundary(value).sub(lambda _: replacement, text)


def _format_number(n: int, like: str) -> str:
    return f"{n:,}" if "," in like else str(n)


def _number_candidates(token: str) -> list[str]:
    """Other numbers written like ``token`` (same affixes, thousands separators)."""
    m = re.fullmatch(rf"(\$?)(\d+-\d+|{_NUMBER})(.*)", token)
    if m is None:
        return []
    prefix, number, suffix = m.groups()
    if "-" in number:
        low, high = (int(x) for x in number.split("-"))
        return [
            f"{prefix}{low + d}-{high + d}{suffix}" for d in (-3, -2, -1, 1, 2, 3) if low + d > 0
        ]
    if "." in number:
        return []
    n = int(number.replace(",", ""))
    if 1900 <= n <= 2100 and not prefix and not suffix:
        deltas = [-4, -3, -2, -1, 1, 2, 3]
    else:
        step = max(1, 10 ** (len(str(n)) - 2))
        deltas = [d * step for d in (-5, -4, -3, -2, -1, 1, 2, 3, 4, 5, 6, 7)]
    return [f"{prefix}{_format_number(n + d, number)}{suffix}" for d in deltas if n + d > 0]


def _date_candidates(token: str) -> list[str]:
    day = re.search(r"(?<!\d)(\d{1,2})(?!\d)", token)
    if day is not None:
        d = int(day.group(1))
        return [f"{token[: day.start()]}{x}{token[day.end() :]}" for x in range(1, 29) if x != d]
    month = next(m for m in MONTHS if m in token)
    return [token.replace(month, m) for m in MONTHS if m != month]


def _time_candidates(token: str) -> list[str]:
    hour = int(re.match(r"\d+", token).group(0))  # type: ignore[union-attr]
    return [re.sub(r"^\d+", str(h), token) for h in range(1, 12) if h != hour]


def candidates(value: Value) -> list[str]:
    """Counterfactual values of the same type, in a fixed order (shuffled by the caller)."""
    if value.kind == "number":
        return _number_candidates(value.text)
    if value.kind == "date":
        return _date_candidates(value.text)
    if value.kind == "time":
        return _time_candidates(value.text)
    if value.kind == "place":
        return [p for p in PLACES if p != value.text]
    pool = FULL_NAMES if " " in value.text else NAMES
    return [n for n in pool if n != value.text]


def typed_values(text: str) -> list[Value]:
    """Every date, time and number (with a following word as its unit) in the text."""
    out: list[tuple[int, Value]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in (("date", DATE), ("time", TIME), ("number", AMOUNT)):
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            found = m.group(0)
            if kind == "number" and re.match(r"\$|[\d,.-]+(?:%|ms\b|k\b)", found):
                found = found.split(" ", 1)[0]  # "$65", "78%": the affix is the unit
            out.append((m.start(), Value(found, kind)))
    return [v for _, v in sorted(out, key=lambda x: x[0])]


def _unit(value: Value) -> str:
    """A number's affixes and unit word (``$``, ``%``, ``hours``), for matching values
    of one quantity."""
    if value.kind != "number":
        return value.kind
    return re.sub(rf"\d+-\d+|{_NUMBER}", "#", value.text)


# --- scenario building ----------------------------------------------------------


@dataclass(frozen=True)
class Fork:
    """One fork before it is laid out in an arrival order."""

    key: str  # scenario id stem
    title: str
    operation: str
    prefix: tuple[Message, ...]  # linear, root first
    kept: tuple[Message, ...]  # fork turn first
    abandoned: tuple[Message, ...]
    probes: tuple[Probe, ...]


def _sentence(text: str, value: str) -> str:
    """The sentence of ``text`` holding ``value`` (the fact an extractor would keep)."""
    for part in re.split(r"(?<=[.!?])\s+|\n+", text):
        if occurs(part, value):
            return part.strip()
    return text.strip()


def _cut(text: str, limit: int, keep: str = "") -> str:
    """At most ``limit`` characters at a word boundary, but never before the end of the
    sentence holding ``keep``."""
    if keep:
        sentence = _sentence(text, keep)
        end = text.find(sentence)
        if end >= 0:
            limit = max(limit, end + len(sentence))
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip() + " …"


def lay_out(fork: Fork, order: str, split: str) -> Scenario:
    """The fork as a scenario whose events arrive in ``order``."""
    if order == "abandoned_first":
        branches = [*fork.abandoned, *fork.kept]
    elif order == "abandoned_last":
        branches = [*fork.kept, *fork.abandoned]
    elif order == "interleaved":
        # the abandoned fork turn right after the kept one, then the continuations
        # alternate, the kept branch's last turn arriving last
        branches = [fork.kept[0], fork.abandoned[0]]
        for a, k in zip(fork.abandoned[1:], fork.kept[1:], strict=True):
            branches += [a, k]
    else:
        raise ValueError(f"unknown arrival order {order!r}")
    return Scenario(
        id=f"{fork.key}-{order.replace('_', '-')}",
        language="en",
        operation=fork.operation,
        split=split,
        title=fork.title,
        messages=(*fork.prefix, *branches),
        anchor=fork.kept[-1].id,
        probes=fork.probes,
        arrival=order,
    )


def _chain(turns: Sequence[tuple[str, str, str]], parent: str | None) -> list[Message]:
    out: list[Message] = []
    for mid, role, content in turns:
        out.append(Message(mid, parent, role, content))
        parent = mid
    return out


def _with_fact(m: Message, key: str, value: str) -> Message:
    return Message(
        m.id,
        m.parent,
        m.role,
        m.content,
        (*m.facts, Fact(key=key, value=_sentence(m.content, value))),
    )


def _counterfactual(rng: random.Random, value: Value, ok: Callable[[str], bool]) -> str | None:
    options = candidates(value)
    rng.shuffle(options)
    return next((o for o in options if ok(o)), None)


def _build_fork(
    *,
    key: str,
    title: str,
    question: str,
    operation: str,
    turns: Sequence[CorpusTurn],
    fork_at: int,
    shown: Callable[[CorpusTurn], str],
    role: Callable[[CorpusTurn], str],
    value: Value,
    rng: random.Random,
    extra: Sequence[int] = (),
    original: tuple[int, Value] | None = None,
    suffix: str = "x",
) -> Fork | None:
    """Lay a fork at ``turns[fork_at]``; None when no counterfactual fits."""
    before = sorted({*extra, *range(max(0, fork_at - PREFIX), fork_at)})
    after = range(fork_at, min(len(turns), fork_at + 1 + CONTINUATION))
    if len(after) < 2:
        return None
    prefix = _chain([(turns[i].id, role(turns[i]), shown(turns[i])) for i in before], None)
    parent = prefix[-1].id if prefix else None
    kept = _chain([(turns[i].id, role(turns[i]), shown(turns[i])) for i in after], parent)
    path_text = [m.content for m in (*prefix, *kept)]

    def ok(option: str) -> bool:
        return (
            not contains(question, option)
            and not contains(option, value.text)
            and not contains(value.text, option)
            and not (original and contains(option, original[1].text))
            and not any(contains(t, option) for t in path_text)
        )

    swapped = _counterfactual(rng, value, ok)
    if swapped is None:
        return None
    abandoned = _chain(
        [(f"{m.id}{suffix}", m.role, substitute(m.content, value.text, swapped)) for m in kept],
        parent,
    )
    fact_key = f"{key}-value"
    kept[0] = _with_fact(kept[0], fact_key, value.text)
    abandoned[0] = _with_fact(abandoned[0], fact_key, swapped)
    probes = [
        Probe(
            id="leak",
            type="leak",
            question=question,
            answer=(value.text,),
            forbidden=(swapped,),
            notes=f"{value.kind} in {turns[fork_at].id}; the abandoned copy says {swapped!r}",
        ),
        Probe(
            id="retain",
            type="retain",
            question=question,
            answer=(value.text,),
            notes=f"the corpus's gold answer, said in {turns[fork_at].id} on the kept branch",
        ),
    ]
    if original is not None:
        at = next(i for i, m in enumerate(prefix) if m.id == turns[original[0]].id)
        prefix[at] = _with_fact(prefix[at], fact_key, original[1].text)
        probes.append(
            Probe(
                id="stale",
                type="stale",
                question=question,
                answer=(value.text,),
                forbidden=(original[1].text,),
                notes=f"stated in {turns[original[0]].id}, updated in {turns[fork_at].id}",
            )
        )
    return Fork(
        key=key,
        title=title,
        operation=operation,
        prefix=tuple(prefix),
        kept=tuple(kept),
        abandoned=tuple(abandoned),
        probes=tuple(probes),
    )


def _valid(fork: Fork, split: str) -> bool:
    return all(not validate_scenario(lay_out(fork, order, split)) for order in ORDERS)


def _pick(groups: dict[str, list[tuple[int, Callable[[], Fork | None]]]], split: str) -> list[Fork]:
    """Up to FORKS valid forks, one per conversation in turn (round robin over the
    conversations in a seeded order); within a conversation, candidates in a seeded
    order, those of higher ``rank`` (e.g. with a stale probe) first."""
    rng = random.Random(f"{SEED}-{split}-order")
    names = sorted(groups, key=lambda n: (len(n), n))
    rng.shuffle(names)
    queues: dict[str, list[Callable[[], Fork | None]]] = {}
    for name in names:
        ranked = list(groups[name])
        rng.shuffle(ranked)
        queues[name] = [make for _, make in sorted(ranked, key=lambda x: -x[0])]
    chosen: list[Fork] = []
    while len(chosen) < FORKS and any(queues.values()):
        for items in queues.values():
            while items and len(chosen) < FORKS:
                fork = items.pop(0)()
                if fork is not None and _valid(fork, split):
                    chosen.append(fork)
                    break
    return sorted(chosen, key=lambda f: f.key)


# --- LoCoMo ---------------------------------------------------------------------


def locomo_value(question: str, answer: str, turn_text: str) -> Value | None:
    """The gold answer as a typed value when it occurs verbatim in the evidence turn."""
    core = re.sub(r"^(?:in|about|around|on) ", "", answer.strip())
    if not core or len(core) > 30 or not occurs(turn_text, core):
        return None
    q = question.lower()
    if DATE.fullmatch(core):
        return Value(core, "date")
    if TIME.fullmatch(core):
        return Value(core, "time")
    if AMOUNT.fullmatch(core):
        return Value(core, "number")
    if not _PROPER.fullmatch(core) or core.startswith("The "):
        return None
    if q.startswith("where") or re.search(r"\bwhich (?:city|country|state)\b", q):
        return Value(core, "place")
    if "name of" in q or (q.startswith("who ") and " " in core):
        return Value(core, "name")
    return None


def _locomo_shown(turn: CorpusTurn) -> str:
    photo = f" [shares a photo: {turn.image_caption}]" if turn.image_caption else ""
    return f"{turn.speaker}: {turn.text}{photo}"


def locomo_forks(conversations: Sequence[LocomoConversation]) -> list[Fork]:
    """The chosen LoCoMo forks (deterministic)."""
    groups: dict[str, list[tuple[int, Callable[[], Fork | None]]]] = {}
    for conv in conversations:
        index = {t.id: i for i, t in enumerate(conv.turns)}
        user = conv.speakers[0]

        def role(t: CorpusTurn, user: str = user) -> str:
            return "user" if t.speaker == user else "assistant"

        for n, qa in enumerate(conv.qa):
            if qa.category not in LOCOMO_CATEGORIES or len(qa.evidence) != 1 or not qa.answer:
                continue
            at = index[qa.evidence[0]]
            turn = conv.turns[at]
            value = locomo_value(qa.question, qa.answer, turn.text)
            if value is None:
                continue

            def make(
                conv: LocomoConversation = conv,
                n: int = n,
                at: int = at,
                value: Value = value,
                question: str = qa.question,
                role: Callable[[CorpusTurn], str] = role,
            ) -> Fork | None:
                return _build_fork(
                    key=f"locomo-{conv.id}-q{n}",
                    title=question,
                    question=question,
                    operation="edit_user" if role(conv.turns[at]) == "user" else "regenerate",
                    turns=conv.turns,
                    fork_at=at,
                    shown=_locomo_shown,
                    role=role,
                    value=value,
                    rng=random.Random(f"{SEED}-locomo-{conv.id}-{n}"),
                )

            groups.setdefault(conv.id, []).append((0, make))
    return _pick(groups, "locomo")


# --- BEAM -----------------------------------------------------------------------


def beam_value(rubric: Sequence[str], answer: str, text: str) -> Value | None:
    """The updated value: the first typed value of the rubric ("should state: X") or
    the answer that occurs verbatim in the update turn; a bare number needs 3+ digits."""
    stated = [r.split("should state:", 1)[1].strip() for r in rubric if "should state:" in r]
    for source in [*stated, answer]:
        for v in typed_values(source):
            for text_form in (v.text, v.text.rsplit(" ", 1)[0]):
                if not occurs(text, text_form):
                    continue
                found = Value(text_form, v.kind)
                if v.kind == "number" and re.fullmatch(r"\d{1,2}", text_form):
                    continue
                return found
    return None


def beam_original(value: Value, original: str, updated: str) -> Value | None:
    """The one value in the original turn of the same type and unit that the update
    turn does not repeat (None when there is none or more than one)."""
    unit = _unit(value)
    found = {
        v.text
        for v in typed_values(original)
        if v.kind == value.kind
        and _unit(v) == unit
        and v.text != value.text
        and not occurs(updated, v.text)
    }
    return Value(found.pop(), value.kind) if len(found) == 1 else None


def _beam_role(turn: CorpusTurn) -> str:
    return turn.speaker


def _beam_shown(turn: CorpusTurn, keep: str = "") -> str:
    return _cut(turn.text, BEAM_TURN_CHARS, keep)


def beam_forks(chats: Sequence[BeamChat]) -> list[Fork]:
    """The chosen BEAM forks (deterministic)."""
    groups: dict[str, list[tuple[int, Callable[[], Fork | None]]]] = {}
    for chat in chats:
        index = {t.id: i for i, t in enumerate(chat.turns)}
        for n, update in enumerate(chat.updates):
            for turn_id in update.updated_ids:
                at = index[turn_id]
                turn = chat.turns[at]
                value = beam_value(update.rubric, update.answer, turn.text)
                if value is None:
                    continue
                original: tuple[int, Value] | None = None
                extra: list[int] = []
                if len(update.original_ids) == 1 and index[update.original_ids[0]] < at:
                    o = index[update.original_ids[0]]
                    old = beam_original(value, chat.turns[o].text, turn.text)
                    if old is not None:
                        original = (o, old)
                        extra = [o, o + 1] if o + 1 < at else [o]
                keeps = {at: value.text, **({original[0]: original[1].text} if original else {})}

                def shown(
                    t: CorpusTurn, keeps: dict[int, str] = keeps, idx: dict[str, int] = index
                ) -> str:
                    return _beam_shown(t, keeps.get(idx[t.id], ""))

                def make(
                    chat: BeamChat = chat,
                    n: int = n,
                    at: int = at,
                    value: Value = value,
                    question: str = update.question,
                    original: tuple[int, Value] | None = original,
                    extra: Sequence[int] = tuple(extra),
                    shown: Callable[[CorpusTurn], str] = shown,
                ) -> Fork | None:
                    return _build_fork(
                        key=f"beam-{chat.id}-u{n}",
                        title=question,
                        question=question,
                        operation="edit_user" if chat.turns[at].speaker == "user" else "regenerate",
                        turns=chat.turns,
                        fork_at=at,
                        shown=shown,
                        role=_beam_role,
                        value=value,
                        rng=random.Random(f"{SEED}-beam-{chat.id}-{n}"),
                        extra=extra,
                        original=original,
                    )

                groups.setdefault(chat.id, []).append((int(original is not None), make))
                break  # the first update turn that states the value
    return _pick(groups, "beam")


# --- the splits -----------------------------------------------------------------


def generate(split: str, root: Path | None = None) -> list[Scenario]:
    """Generate a corpus split from the corpora (no digest check)."""
    if split == "locomo":
        forks = locomo_forks(load_locomo(root))
    elif split == "beam":
        forks = beam_forks(load_beam(root))
    else:
        raise CorpusError(f"unknown corpus split {split!r}; choose from {', '.join(CORPUS_SPLITS)}")
    return [lay_out(f, order, split) for f in forks for order in ORDERS]


def canonical_json(scenarios: Sequence[Scenario]) -> str:
    """The form the digest is taken over: sorted keys, no whitespace, UTF-8 text."""
    return json.dumps(
        [scenario_to_dict(s) for s in scenarios],
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
    )


def split_digest(scenarios: Sequence[Scenario]) -> str:
    """SHA-256 of the canonical JSON of a generated split."""
    return hashlib.sha256(canonical_json(scenarios).encode("utf-8")).hexdigest()


def readme_commits(root: Path) -> dict[str, tuple[str, str]]:
    """Upstream repository and commit of each corpus folder, from the corpora README's
    table (``| `locomo/` | snap-research/locomo (...) | <commit> | ...``)."""
    path = root / "README.md"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise CorpusMismatch(f"{path}: cannot read the corpora README: {e}") from e
    out: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3:
            continue
        folder = cells[0].strip("`").rstrip("/").removesuffix("/N")
        repo = cells[1].split(" ", 1)[0]
        if re.fullmatch(r"[0-9a-f]{40}", cells[2]):
            out[folder] = (repo, cells[2])
    return out


def load_corpus_split(split: str, root: Path | None = None) -> list[Scenario]:
    """Generate a corpus split and check it against its pin: the corpora README must
    name the pinned upstream commit and the split's digest must match. Raises
    ``CorpusUnavailable`` when the corpora are absent, ``CorpusMismatch`` otherwise."""
    if split not in PINNED:
        raise CorpusError(f"unknown corpus split {split!r}; choose from {', '.join(CORPUS_SPLITS)}")
    base = root if root is not None else corpora_root()
    if base is None:
        raise CorpusUnavailable(
            f"split {split} needs the corpora: set BRANCHBENCH_CORPORA or put them in"
            " ../shared/corpora"
        )
    pin = PINNED[split]
    folder, upstream = pin.folder, pin.upstream
    if not (base / folder).is_dir():
        raise CorpusUnavailable(f"split {split} needs {base / folder}, which is absent")
    recorded = readme_commits(base).get(folder)
    if recorded != upstream:
        raise CorpusMismatch(
            f"split {split}: {base / 'README.md'} names {folder} at {recorded},"
            f" the split is pinned to {upstream}"
        )
    scenarios = generate(split, base)
    digest = split_digest(scenarios)
    if digest != pin.sha256:
        raise CorpusMismatch(
            f"split {split}: generated {len(scenarios)} scenarios with SHA-256 {digest},"
            f" pinned {pin.sha256 or '(none)'}: the corpus files or the generator changed"
            " (re-pin in branchbench/corpusgen.py only after reviewing the change)"
        )
    return scenarios


def main(argv: Sequence[str] | None = None) -> int:
    """``check SPLIT`` (exit 0 ready, 3 corpora absent, 1 mismatch), ``digest``, and
    ``dump SPLIT DIR`` (the generated scenarios as files, for reading; never into the
    repository)."""
    parser = argparse.ArgumentParser(prog="python -m branchbench.corpusgen")
    sub = parser.add_subparsers(dest="command", required=True)
    p_check = sub.add_parser("check", help="is the split available and pinned?")
    p_check.add_argument("split", choices=CORPUS_SPLITS)
    sub.add_parser("digest", help="print each split's digest (for re-pinning)")
    p_dump = sub.add_parser("dump", help="write the generated scenarios to a folder")
    p_dump.add_argument("split", choices=CORPUS_SPLITS)
    p_dump.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            scenarios = load_corpus_split(args.split)
            print(f"{args.split}: {len(scenarios)} scenarios, pinned digest matches")
        elif args.command == "digest":
            for split in CORPUS_SPLITS:
                scenarios = generate(split)
                print(f"{split} {split_digest(scenarios)} ({len(scenarios)} scenarios)")
        else:
            args.out.mkdir(parents=True, exist_ok=True)
            for s in generate(args.split):
                text = json.dumps(scenario_to_dict(s), ensure_ascii=False, indent=2)
                (args.out / f"{s.id}.json").write_text(text + "\n", encoding="utf-8")
    except CorpusUnavailable as e:
        print(f"skipped: {e}", file=sys.stderr)
        return 3
    except (CorpusMismatch, CorpusError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
