"""The validator: every probe must test what it claims.

The original benchmark's validator only checked that forbidden words live on a sibling
branch; two probes then had the forbidden word in the question, so a correct "no" was
scored as a leak. Each check below has a test with a scenario built to fail it.

Checks read keywords with the scorer's ``contains``; a forbidden keyword must also be
stated by the abandoned branch's facts (what a memory stores of it), a retain answer by
a fact on the kept path, and a bare number must not be one the scenario's own ids carry.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from branchbench.context import DEFAULT_BUDGET, HEADINGS, Turn, fit
from branchbench.keywords import contains, figure, normalize, risk
from branchbench.scenario import Fact, Message, Probe, Scenario, Tree


@dataclass(frozen=True)
class Problem:
    """One failed check: which scenario, which check, what exactly."""

    scenario: str
    check: str
    message: str

    def __str__(self) -> str:
        return f"{self.scenario}: [{self.check}] {self.message}"


def _tree_problems(s: Scenario) -> list[Problem]:
    out: list[Problem] = []
    seen: set[str] = set()
    roots = 0
    for m in s.messages:
        if m.id in seen:
            out.append(Problem(s.id, "tree", f"event id {m.id!r} appears twice"))
        if m.parent is None:
            roots += 1
        elif m.parent == m.id:
            out.append(Problem(s.id, "tree", f"event {m.id!r} is its own parent"))
        elif m.parent not in seen:
            out.append(
                Problem(s.id, "tree", f"event {m.id!r} arrives before its parent {m.parent!r}")
            )
        seen.add(m.id)
    if roots != 1:
        out.append(Problem(s.id, "tree", f"expected one root event, found {roots}"))
    anchors = {s.anchor} | {p.anchor for p in s.probes if p.anchor}
    for anchor in sorted(anchors):
        if anchor not in seen:
            out.append(Problem(s.id, "tree", f"anchor {anchor!r} is not an event"))
    for p in s.probes:
        if p.asked_after and p.asked_after not in seen:
            out.append(
                Problem(
                    s.id, "tree", f"probe {p.id!r}: asked_after {p.asked_after!r} is not an event"
                )
            )
    return out


def _fork_problems(s: Scenario, tree: Tree) -> list[Problem]:
    """A scenario without an abandoned branch cannot measure a leak. Events below the
    anchor of a linear chain lie off its path too, but nothing forked: the path must pass
    an event with two children."""
    children: dict[str, int] = {}
    for m in s.messages:
        if m.parent is not None:
            children[m.parent] = children.get(m.parent, 0) + 1

    def forked(anchor: str) -> bool:
        return any(children.get(i, 0) >= 2 for i in tree.path(anchor))

    out: list[Problem] = []
    if not forked(s.anchor):
        words = ", ".join(repr(k) for p in s.probes if p.type == "leak" for k in p.forbidden)
        out.append(
            Problem(
                s.id,
                "fork",
                f"the path to anchor {s.anchor!r} passes no fork point"
                + (
                    f"; forbidden {words} lie below it, not on an abandoned branch" if words else ""
                ),
            )
        )
    for p in s.probes:
        anchor = s.probe_anchor(p)
        if p.type == "leak" and anchor != s.anchor and not forked(anchor):
            words = ", ".join(repr(k) for k in p.forbidden)
            out.append(
                Problem(
                    s.id,
                    "fork",
                    f"probe {p.id!r}: the path to anchor {anchor!r} passes no fork point;"
                    f" forbidden {words} lie below it, not on an abandoned branch",
                )
            )
    return out


def _labels(language: str) -> list[str]:
    """Words every rendered context contains whatever the memory holds."""
    mem_head, conv_head, roles = HEADINGS.get(language, HEADINGS["en"])
    return [mem_head, conv_head, *roles.values()]


def _texts(messages: Iterable[Message]) -> list[tuple[str, str]]:
    return [(m.id, m.content) for m in messages]


def _where(probe: Probe, keyword: str, texts: list[tuple[str, str]]) -> list[str]:
    return [mid for mid, text in texts if probe.hit(text, keyword)]


def _facts_on(path: list[Message]) -> list[tuple[int, Fact]]:
    return [(depth, f) for depth, m in enumerate(path) for f in m.facts]


def _current_facts(path: list[Message]) -> list[Fact]:
    """Facts on the path still current at its end: not superseded deeper on it (same
    key and scope, or explicitly) and not retracted below them."""
    facts = _facts_on(path)
    current = []
    for d, f in facts:
        if f.op != "assert":
            continue
        replaced = any(
            d2 > d
            and (
                (f2.op == "assert" and f2.key == f.key and f2.scope == f.scope)
                or (f.id is not None and f.id in f2.supersedes)
                or (f2.op == "retract" and f2.key == f.key and f2.scope in (None, f.scope))
            )
            for d2, f2 in facts
        )
        if not replaced:
            current.append(f)
    return current


def _metadata(f: Fact) -> str:
    """A fact's text besides its value: key, scope, id and the ids it supersedes. A
    system or an extractor may render any of it next to the value."""
    return " ".join(x for x in (f.key, f.scope or "", f.id or "", *f.supersedes) if x)


def _number_in(text: str, number: str) -> bool:
    """The figure at digit boundaries, even inside an id or a time ("u12", "budget_12"),
    where the scorer no longer reads it but a system may render the id as prose."""
    pattern = rf"(?<![\d.]){re.escape(number)}(?!\d|\.\d)"
    return re.search(pattern, normalize(text)) is not None


def _numbers(probe: Probe, keyword: str) -> list[str]:
    """The bare-number spellings of a keyword (itself and its aliases)."""
    spellings = (keyword, *probe.aliases.get(keyword, ()))
    return [n for n in (figure(w) for w in spellings) if n is not None]


def _in_metadata(probe: Probe, text: str, keyword: str) -> bool:
    """Whether a keyword is in a fact's key, scope or ids, a bare number counted even
    where it is glued into an id (see ``_number_in``)."""
    return probe.hit(text, keyword) or any(_number_in(text, n) for n in _numbers(probe, keyword))


def _machine_names(s: Scenario) -> list[tuple[str, str]]:
    """Every id, key and scope of a scenario, with where it is: what a system may show
    next to a memory (Mem0 renders ids and timestamps) besides the text itself."""
    out = [("the scenario id", s.id)]
    for m in s.messages:
        out.append(("an event id", m.id))
        for f in m.facts:
            named = (("key", f.key), ("scope", f.scope or ""), ("id", f.id or ""))
            out += [(f"the fact {what} in {m.id!r}", text) for what, text in named if text]
            out += [(f"a superseded id in {m.id!r}", text) for text in f.supersedes]
    return out


# Splits where ``ids`` only warns: ``beam`` is generated with this validator choosing the
# forks and pinned by digest (corpusgen), and its event ids are bare turn numbers; one
# pinned fork (beam-1-u1) has the answer 165 and an event "165". Rejecting it changes the
# split, so it waits for a generator change and a re-pin.
IDS_WARN_ONLY = ("beam",)


def _id_number_problems(s: Scenario) -> list[Problem]:
    """A keyword that is a bare number the scenario's own ids or keys carry ("12" and
    event "u12"): the matcher does not read a figure inside an id or a time, but a
    system that renders them its own way ("message 12", "00:12") scores nonsense."""
    names = _machine_names(s)
    out: list[Problem] = []
    for probe in s.probes:
        for role, keywords in (("answer", probe.answer), ("forbidden", probe.forbidden)):
            for kw in keywords:
                for number in _numbers(probe, kw):
                    hits = [(where, text) for where, text in names if _number_in(text, number)]
                    if hits:
                        where, text = hits[0]
                        out.append(
                            Problem(
                                s.id,
                                "ids",
                                f"probe {probe.id!r}: {role} keyword {kw!r} is a bare number"
                                f" that {where} carries ({text!r}); give it a unit or a word",
                            )
                        )
                        break
    return out


# Words that carry no fact: an alias or keyword made of one of them is satisfied by any
# text in the language, so it scores nonsense (a retain probe answered by "的").
_STOP_TEXT = (
    "的 了 是 在 和 与 或 我 你 他 她 它 们 有 没 不 也 就 都 这 那 吗 呢 啊 吧 个 "
    "a an the and or of to in on at by for is are was were be been it its i me my you your "
    "he she we they them this that these those with not no yes do does did so as if"
)
STOP_WORDS = frozenset(_STOP_TEXT.split())


def meaningless(word: str) -> str | None:
    """Why a keyword or alias means nothing (None when it can mean something): empty or
    punctuation only after normalisation, a single Latin letter, a stop-word. A single
    digit can be a value ("7" for an IELTS 7.0): it is only warned about, as a bare number."""
    norm = normalize(word)
    if not any(ch.isalnum() for ch in norm):
        return "it has no letter or digit after normalisation"
    if norm in STOP_WORDS:
        return "it is a stop-word"
    if len(norm) == 1 and norm.isascii() and norm.isalpha():
        return "a single letter matches almost any text"
    return None


def _keyword_text_problems(probe: Probe, fail: Callable[[str, str], None]) -> None:
    """Keywords and aliases that mean nothing, and duplicate nothing else."""
    for role, keywords in (("answer", probe.answer), ("forbidden", probe.forbidden)):
        for kw in keywords:
            if normalize(kw) and (why := meaningless(kw)):
                fail("keywords", f"{role} keyword {kw!r} is refused: {why}")
    for kw, spellings in probe.aliases.items():
        for alias in spellings:
            if why := meaningless(alias):
                fail("aliases", f"alias {alias!r} of keyword {kw!r} is refused: {why}")


def _mask_problems(
    probe: Probe, facts: Iterable[tuple[str, Fact]], fail: Callable[[str, str], None]
) -> None:
    """An ``unless`` mask must not hide a forbidden keyword inside the very fact that
    states the value: a memory showing that fact would then not count as showing it."""
    for kw in probe.forbidden:
        masks = probe.unless.get(kw, ())
        if not masks:
            continue
        for mid, f in facts:
            if contains(f.value, kw, probe.aliases) and not probe.hit(f.value, kw):
                hiding = [u for u in masks if normalize(u) in normalize(f.value)]
                fail(
                    "unless",
                    f"unless mask {hiding[0] if hiding else masks[0]!r} hides forbidden keyword"
                    f" {kw!r} in the fact {f.value!r} of {mid!r} that states it",
                )


def _probe_problems(s: Scenario, tree: Tree, probe: Probe) -> list[Problem]:
    out: list[Problem] = []

    def fail(check: str, message: str) -> None:
        out.append(Problem(s.id, check, f"probe {probe.id!r}: {message}"))

    anchor = s.probe_anchor(probe)
    asked_after = s.asked_after(probe)
    if anchor not in tree.arrival or asked_after not in tree.arrival:
        return out  # reported by the tree check
    cutoff = tree.arrival[asked_after]
    if tree.arrival[anchor] > cutoff:
        fail("arrival", f"anchor {anchor!r} arrives after the question")
        return out
    arrived = [m for m in s.messages if tree.arrival[m.id] <= cutoff]
    by_id = {m.id: m for m in s.messages}
    path_ids = tree.path(anchor)
    path = [by_id[i] for i in path_ids]
    on_path = _texts(path)
    off_path = _texts(m for m in arrived if m.id not in set(path_ids))

    for kw in (*probe.answer, *probe.forbidden):
        if not normalize(kw):
            fail("keywords", "a keyword is empty after normalisation")
    _keyword_text_problems(probe, fail)
    if not probe.answer:
        fail("keywords", "no answer keywords")
    for kw in probe.forbidden:
        if probe.hit(probe.question, kw):
            fail("question", f"forbidden keyword {kw!r} occurs in the question")
        for ans in probe.answer:
            if probe.hit(ans, kw):
                fail("answer", f"forbidden keyword {kw!r} occurs in answer keyword {ans!r}")
    for kw in probe.answer:
        if probe.hit(probe.question, kw):
            # echoing the question would score as correct
            fail("question", f"answer keyword {kw!r} occurs in the question")
        if not _where(probe, kw, on_path):
            fail("answer-on-path", f"answer keyword {kw!r} is not on the anchor path")
    for label in _labels(s.language):
        for kw in probe.forbidden:
            if probe.hit(label, kw):
                fail("labels", f"forbidden keyword {kw!r} matches the context label {label!r}")
        for kw in probe.answer:
            if probe.hit(label, kw):
                fail("labels", f"answer keyword {kw!r} is satisfied by the label {label!r}")

    if probe.type == "leak":
        if not probe.forbidden:
            fail("leak", "a leak probe needs forbidden keywords")
        path_facts = [(m.id, f.value) for m in path for f in m.facts if f.op == "assert"]
        path_metadata = [(m.id, _metadata(f)) for m in path for f in m.facts]
        path_set = set(path_ids)
        off_arrived = [m for m in arrived if m.id not in path_set]
        for kw in probe.forbidden:
            if hits := _where(probe, kw, on_path):
                fail("leak", f"forbidden keyword {kw!r} is on the anchor path (in {hits[0]!r})")
            elif hits := _where(probe, kw, path_facts):
                fail(
                    "leak",
                    f"forbidden keyword {kw!r} is in a fact derived on the anchor path"
                    f" (from {hits[0]!r})",
                )
            elif hits := [mid for mid, text in path_metadata if _in_metadata(probe, text, kw)]:
                fail(
                    "metadata",
                    f"forbidden keyword {kw!r} is in the key, scope or id of a fact derived on"
                    f" the anchor path (from {hits[0]!r})",
                )
            if not _where(probe, kw, off_path):
                fail(
                    "leak",
                    f"forbidden keyword {kw!r} occurs in no off-path event arriving"
                    " before the question",
                )
        off_facts = [(m.id, f) for m in off_arrived for f in m.facts]
        _mask_problems(probe, off_facts, fail)
        if any(m.facts for m in s.messages):
            _sibling_fact_problems(s, probe, path, off_arrived, fail)
    elif probe.type == "stale":
        out.extend(_stale_problems(s, probe, path))
    elif probe.type == "retracted":
        out.extend(_retracted_problems(s, probe, path, arrived))
    elif probe.type == "retain":
        _provenance_problems(probe, path, fail)
        _superseded_answer_problems(probe, path, fail)
    if probe.type in ("stale", "retracted"):
        current = _current_facts(path)
        for kw in probe.forbidden:
            for f in current:
                if _in_metadata(probe, _metadata(f), kw):
                    fail(
                        "metadata",
                        f"forbidden keyword {kw!r} is in the key, scope or id of the current fact"
                        f" {f.value!r}, so a correct memory may show it",
                    )
        stated = [
            (m.id, f) for m in arrived for f in m.facts if f.op == "assert" and f not in current
        ]
        _mask_problems(probe, stated, fail)
    return out


def _sibling_fact_problems(
    s: Scenario,
    probe: Probe,
    path: list[Message],
    off_path: list[Message],
    fail: Callable[[str, str], None],
) -> None:
    """A leak is what a memory stores of the abandoned branch: its facts. A forbidden
    keyword that no off-path fact states, or an off-path fact of the answer's key that
    states its value in other words ("搬去蓉城" where "成都" is forbidden, no alias),
    lets a system store the abandoned value and score 0%; a fact that another probe
    forbids is measured there. (A scenario that declares no facts at all is scored on
    text alone and skips this check.)"""
    off_facts = [(m.id, f) for m in off_path for f in m.facts if f.op == "assert"]
    for kw in probe.forbidden:
        if any(probe.hit(f.value, kw) for _, f in off_facts):
            continue
        told = [m for m in off_path if probe.hit(m.content, kw) and m.facts]
        derived = ", ".join(repr(f.value) for f in told[0].facts if f.value) if told else ""
        where = (
            f"; {told[0].id!r} says it but derives only {derived}: the value in other words"
            " or not at all (add an alias, or state it in a fact)"
            if told
            else "; the events that say it derive no fact a memory could store"
        )
        fail("sibling-fact", f"forbidden keyword {kw!r} is stated by no off-path fact{where}")
    keys = {
        (f.key, f.scope)
        for m in path
        for f in m.facts
        if f.op == "assert" and any(probe.hit(f.value, a) for a in probe.answer)
    }
    for mid, f in off_facts:
        if (f.key, f.scope) not in keys or any(probe.hit(f.value, k) for k in probe.answer):
            continue
        if not any(p.hit(f.value, k) for p in s.probes for k in p.forbidden):
            fail(
                "sibling-fact",
                f"the off-path fact {f.value!r} of {mid!r} (key {f.key!r}) states the"
                f" abandoned value in words no forbidden keyword or alias matches (this"
                f" probe forbids {', '.join(repr(k) for k in probe.forbidden)})",
            )


def _provenance_problems(
    probe: Probe, path: list[Message], fail: Callable[[str, str], None]
) -> None:
    """A retain answer must come from a fact on the kept path: a word found only in the
    dialogue text, or not at all, may be answerable from world knowledge or the question,
    so a system that remembers nothing would score as retaining it."""
    stated = [f.value for m in path for f in m.facts if f.op == "assert"]
    for kw in probe.answer:
        if not any(probe.hit(value, kw) for value in stated):
            fail(
                "provenance",
                f"answer keyword {kw!r} is stated by no fact on the anchor path: only the"
                " dialogue text or world knowledge supplies it",
            )


def _superseded_answer_problems(
    probe: Probe, path: list[Message], fail: Callable[[str, str], None]
) -> None:
    """A retain answer must still be current at the anchor: a value stated on the path
    and replaced (or retracted) deeper on it is what a correct memory drops."""
    stating = [(m.id, f) for m in path for f in m.facts if f.op == "assert"]
    current = _current_facts(path)
    for kw in probe.answer:
        old = [(mid, f) for mid, f in stating if probe.hit(f.value, kw)]
        if old and not any(probe.hit(f.value, kw) for f in current):
            mid, f = old[-1]
            fail(
                "retain",
                f"answer keyword {kw!r} is only in facts superseded later on the anchor path"
                f" (key {f.key!r}, stated in {mid!r}): a correct memory no longer shows it",
            )


def _stale_problems(s: Scenario, probe: Probe, path: list[Message]) -> list[Problem]:
    """The forbidden value must be stated on the path and superseded deeper on it."""
    out: list[Problem] = []
    facts = _facts_on(path)
    if not probe.forbidden:
        out.append(Problem(s.id, "stale", f"probe {probe.id!r}: needs forbidden keywords"))
    for kw in probe.forbidden:
        stated = [(d, f) for d, f in facts if f.op == "assert" and probe.hit(f.value, kw)]
        superseded = any(
            d2 > d
            and f2.op == "assert"
            and not probe.hit(f2.value, kw)
            and ((f2.key == f.key and f2.scope == f.scope) or (f.id and f.id in f2.supersedes))
            for d, f in stated
            for d2, f2 in facts
        )
        if not stated:
            out.append(
                Problem(
                    s.id,
                    "stale",
                    f"probe {probe.id!r}: forbidden value {kw!r} is"
                    " not stated by a fact on the anchor path",
                )
            )
        elif not superseded:
            out.append(
                Problem(
                    s.id,
                    "stale",
                    f"probe {probe.id!r}: forbidden value {kw!r} is"
                    " not superseded later on the anchor path",
                )
            )
        for f in _current_facts(path):
            if probe.hit(f.value, kw):
                out.append(
                    Problem(
                        s.id,
                        "stale",
                        f"probe {probe.id!r}: forbidden value {kw!r} is also in the current"
                        f" fact {f.value!r} (key {f.key!r}), so a correct memory shows it",
                    )
                )
    return out


def _retracted_problems(
    s: Scenario, probe: Probe, path: list[Message], arrived: list[Message]
) -> list[Problem]:
    """The value must be stated and a retraction of its key must reach the anchor."""
    out: list[Problem] = []
    path_ids = {m.id for m in path}
    depth = {m.id: i for i, m in enumerate(path)}
    if not probe.forbidden:
        out.append(Problem(s.id, "retracted", f"probe {probe.id!r}: needs forbidden keywords"))
    for kw in probe.forbidden:
        stated = [
            (m, f) for m in arrived for f in m.facts if f.op == "assert" and probe.hit(f.value, kw)
        ]
        if not stated:
            out.append(
                Problem(
                    s.id,
                    "retracted",
                    f"probe {probe.id!r}: forbidden value {kw!r} is not stated by any fact",
                )
            )
            continue
        order = {m.id: i for i, m in enumerate(arrived)}
        reached = False
        for m in arrived:
            for f in m.facts:
                if f.op != "retract":
                    continue
                targets = [
                    sm
                    for sm, sf in stated
                    if sf.key == f.key and (f.scope is None or f.scope == sf.scope)
                ]
                if f.retract_scope == "tree":
                    # tree scope: hides what was written before it, wherever it lives
                    reached |= any(order[sm.id] <= order[m.id] for sm in targets)
                elif m.id in path_ids:
                    # branch scope: only on this path, at or below the stated value
                    reached |= any(
                        sm.id in path_ids and depth[sm.id] <= depth[m.id] for sm in targets
                    )
        if not reached:
            out.append(
                Problem(
                    s.id,
                    "retracted",
                    f"probe {probe.id!r}: no retraction of the key"
                    f" stating {kw!r} reaches the anchor",
                )
            )
    return out


def _long_problems(s: Scenario, tree: Tree, budget: int) -> list[Problem]:
    """A long scenario must need derived memory: some retain probe's answer has fallen
    out of the most recent ``budget`` tokens of raw history on its path."""
    by_id = {m.id: m for m in s.messages}
    for probe in s.probes:
        if probe.type != "retain":
            continue
        turns = [Turn(i, by_id[i].role, by_id[i].content) for i in tree.path(s.probe_anchor(probe))]
        window = fit([], turns, budget, s.language).render()
        if not all(probe.hit(window, k) for k in probe.answer):
            return []
    return [
        Problem(s.id, "long", f"every retain probe is answerable from the last {budget} tokens")
    ]


def _duplicate_probes(s: Scenario) -> list[Problem]:
    """Two probes on the same fact (same answer and forbidden keywords, after
    normalisation) at the same anchor count one measurement twice."""
    first: dict[tuple[str, frozenset[str], frozenset[str]], str] = {}
    out: list[Problem] = []
    for p in s.probes:
        fact = (
            s.probe_anchor(p),
            frozenset(normalize(k) for k in p.answer),
            frozenset(normalize(k) for k in p.forbidden),
        )
        if fact in first and first[fact] != p.id:
            out.append(
                Problem(
                    s.id,
                    "duplicate",
                    f"probe {p.id!r} repeats probe {first[fact]!r}: same answer and forbidden"
                    f" keywords at anchor {fact[0]!r}",
                )
            )
        first.setdefault(fact, p.id)
    return out


def validate_scenario(s: Scenario, budget: int = DEFAULT_BUDGET) -> list[Problem]:
    """Every problem with one scenario (empty when it passes); ``budget`` is the raw
    window a ``long`` scenario must outgrow."""
    problems = _tree_problems(s)
    if problems:
        return problems
    tree = Tree(s.messages)
    problems.extend(_fork_problems(s, tree))
    ids = [p.id for p in s.probes]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(Problem(s.id, "probes", f"probe id {dup!r} appears twice"))
    problems.extend(_duplicate_probes(s))
    if s.split not in IDS_WARN_ONLY:
        problems.extend(_id_number_problems(s))
    if not s.probes:
        problems.append(Problem(s.id, "probes", "no probes"))
    for probe in s.probes:
        problems.extend(_probe_problems(s, tree, probe))
    if s.split == "long":
        problems.extend(_long_problems(s, tree, budget))
    return problems


def keyword_warnings(s: Scenario) -> list[Problem]:
    """Keywords likely to match where they should not: a single CJK character, a Latin
    word of four letters or fewer, a bare number. Warnings, not failures: the matcher's
    boundaries and a probe's ``unless`` words may make them safe. On the splits of
    ``IDS_WARN_ONLY`` the ``ids`` check is reported here too, as a warning."""
    out: list[Problem] = []
    for probe in s.probes:
        for role, keywords in (("answer", probe.answer), ("forbidden", probe.forbidden)):
            for kw in keywords:
                why = risk(kw)
                if why and kw not in probe.unless:
                    out.append(
                        Problem(s.id, "risky", f"probe {probe.id!r}: {role} keyword {kw!r}: {why}")
                    )
    if s.split in IDS_WARN_ONLY:
        out.extend(_id_number_problems(s))
    return out


def validate_split(scenarios: Iterable[Scenario], split: str | None = None) -> list[Problem]:
    """Problems across a split, including ids that collide or sit in the wrong split."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for s in scenarios:
        if s.id in seen:
            problems.append(Problem(s.id, "split", f"scenario id {s.id!r} appears twice"))
        seen.add(s.id)
        if split is not None and s.split != split:
            problems.append(
                Problem(s.id, "split", f"declares split {s.split!r}, filed under {split!r}")
            )
        problems.extend(validate_scenario(s))
    return problems
