"""The corpus-built splits ``locomo`` and ``beam``: real conversations forked where the
corpus annotates a fact, the sibling branches carrying other values the corpus says.

Authored scenarios measure what their author wrote; these are built from conversations
written by other people (LoCoMo, Maharana et al., ACL 2024; BEAM 100K and 500K, Tavakoli
et al., ICLR 2026) and probed with the corpus's own questions:

- ``locomo``: each of the 10 conversations gives up to ``SCENARIOS["locomo"]`` scenarios;
  a fact is a QA item whose gold answer occurs verbatim in one of its evidence turns and
  whose kind is known (a date or a number with its unit, or what the question asks: a
  place, a person, "what book" ...). Sibling values: answers to other questions of the
  same kind, dates and numbers of the same unit said in the turns.
- ``beam``: each chat of ``beam-100k/`` and ``beam-500k/`` gives one scenario; a fact is a
  value BEAM's rubric names in a question's source turn (``knowledge_update``: the
  updated value, the original kept on the path for a stale probe;
  ``information_extraction``; ``temporal_reasoning``, ``multi_session_reasoning`` and a
  contradiction's first statement, asked as a fill-in-the-blank since their question
  asks for something else). Sibling values: dates, times and numbers of the same unit
  said in the chats.

A scenario forks one conversation at ``FACTS`` annotated turns drawn from all of it (so
at every depth of the excerpt), and keeps a scenario only with at least ``MIN_FACTS``
forks that pass the validator (``branchbench.corpus_forks`` lays it out: siblings,
arrival orders drawn per fork, probes). Values this conversation says are preferred to
the rest of the corpus; none is invented.

The corpora are read at run time and nothing generated is written into the
repository; instead the canonical JSON of each generated split is pinned by SHA-256
together with the upstream commits, and ``load_corpus_split`` refuses a mismatch.
``python -m branchbench.corpusgen digest`` prints the digests after a deliberate change,
``stats`` what the generator drew.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from branchbench import corpus_beam, corpus_locomo
from branchbench.corpora import (
    BEAM_500K_DIR,
    BEAM_DIR,
    BEAM_UPSTREAM,
    LOCOMO_DIR,
    LOCOMO_UPSTREAM,
    CorpusError,
    CorpusUnavailable,
    corpora_root,
    load_beam,
    load_locomo,
)
from branchbench.corpus_forks import (
    AnnotatedFact,
    Candidate,
    Conversation,
    Drawn,
    Layout,
    build_valid,
)
from branchbench.errors import ManifestError
from branchbench.keywords import contains
from branchbench.scenario import CORPUS_SPLITS, Scenario, scenario_to_dict

SEED = 20260424
FACTS = 8  # annotated facts drawn per scenario
MIN_FACTS = 5  # forks a scenario keeps after validation, at least
SCENARIOS = {"locomo": 2, "beam": 1}  # per conversation
LAYOUTS = {
    "locomo": Layout(before=3, after=1),  # LoCoMo turns are one or two sentences
    "beam": Layout(before=1, after=1),  # BEAM turns are cut to 400 characters
}


@dataclass(frozen=True)
class Pin:
    """What a generated split is frozen to."""

    sha256: str
    folders: tuple[str, ...]
    upstream: tuple[str, str]  # repository, commit


# SHA-256 of the canonical JSON of each generated split (``split_digest``), valid for the
# upstream commits named; a change to the generator or the corpora means changing these.
PINNED = {
    "locomo": Pin(
        "7b5680d0ee93e07a1c484998161c3bcda86bc942552038ae54bd5dbba04a78ac",
        (LOCOMO_DIR,),
        LOCOMO_UPSTREAM,
    ),
    "beam": Pin(
        "54289f1ee57b2c8368c0ce7acc6af26ed87b325acbab70d6720205f90bc34ce5",
        (BEAM_DIR, BEAM_500K_DIR),
        BEAM_UPSTREAM,
    ),
}


class CorpusMismatch(ManifestError):
    """A generated corpus split differs from its pinned digest, or the corpora are not
    the pinned upstream commits; the message names the split and both values."""


def _spaced(
    facts: Sequence[AnnotatedFact], layout: Layout, rng: random.Random
) -> list[AnnotatedFact]:
    """Up to ``FACTS`` facts in a seeded order, each annotated turn beyond the reach of
    another's sibling copies and no value inside another's."""
    order = list(facts)
    rng.shuffle(order)
    chosen: list[AnnotatedFact] = []
    for f in order:
        if len(chosen) == FACTS:
            break
        if any(abs(f.at - c.at) <= layout.after for c in chosen):
            continue
        if any(
            contains(f.value.text, c.value.text) or contains(c.value.text, f.value.text)
            for c in chosen
        ):
            continue
        chosen.append(f)
    return sorted(chosen, key=lambda f: f.at)


def _corpus_pool(convs: Sequence[Conversation]) -> dict[str, list[Candidate]]:
    pool: dict[str, list[Candidate]] = {}
    for conv in convs:
        for c in conv.pool:
            pool.setdefault(c.value.kind, []).append(c)
    return pool


def scenarios_of(split: str, convs: Sequence[Conversation]) -> list[tuple[Scenario, list[Drawn]]]:
    """Every scenario of the split with what was drawn for it (deterministic)."""
    layout = LAYOUTS[split]
    pool = _corpus_pool(convs)
    out: list[tuple[Scenario, list[Drawn]]] = []
    for conv in convs:
        rng = random.Random(f"{SEED}-{split}-{conv.id}")
        left = list(conv.facts)
        for n in range(1, SCENARIOS[split] + 1):
            facts = _spaced(left, layout, rng)
            if len(facts) < MIN_FACTS:
                break
            used = {f.source for f in facts}
            left = [f for f in left if f.source not in used]
            key = f"{split}-{conv.id}" + (f"-{n}" if SCENARIOS[split] > 1 else "")
            built = build_valid(
                conv,
                facts,
                pool,
                key=key,
                split=split,
                title=f"{split} {conv.id}: {len(facts)} annotated facts",
                layout=layout,
                seed=f"{SEED}-{key}",
                minimum=MIN_FACTS,
            )
            if built is not None:
                scenario, drawn = built
                title = f"{conv.id}: forked at {len(drawn)} annotated turns"
                out.append((_retitled(scenario, title), drawn))
    return out


def _retitled(s: Scenario, title: str) -> Scenario:
    return Scenario(
        id=s.id,
        language=s.language,
        operation=s.operation,
        split=s.split,
        title=title,
        messages=s.messages,
        anchor=s.anchor,
        probes=s.probes,
    )


def conversations(split: str, root: Path | None = None) -> list[Conversation]:
    """The split's conversations read for forking."""
    if split == "locomo":
        return corpus_locomo.conversations(load_locomo(root))
    if split == "beam":
        return [
            corpus_beam.conversation(chat, folder.removeprefix("beam-"))
            for folder in (BEAM_DIR, BEAM_500K_DIR)
            for chat in load_beam(root, folder)
        ]
    raise CorpusError(f"unknown corpus split {split!r}; choose from {', '.join(CORPUS_SPLITS)}")


def generate(split: str, root: Path | None = None) -> list[Scenario]:
    """Generate a corpus split from the corpora (no digest check)."""
    return [s for s, _ in scenarios_of(split, conversations(split, root))]


def draw_stats(split: str, root: Path | None = None) -> dict[str, object]:
    """What the generator drew: forks, sibling values, where the values came from, the
    arrival orders and the number of branches per fork."""
    convs = {c.id: c for c in conversations(split, root)}
    built = scenarios_of(split, list(convs.values()))
    drawn = [d for _, ds in built for d in ds]
    siblings = [(d, c) for d in drawn for c in d.siblings]
    orders: dict[str, int] = {}
    branches: dict[str, int] = {}
    for d in drawn:
        orders[d.order] = orders.get(d.order, 0) + 1
        branches[str(len(d.siblings) + 1)] = branches.get(str(len(d.siblings) + 1), 0) + 1
    return {
        "split": split,
        "scenarios": len(built),
        "conversations": len(
            {s.id.rsplit("-", 1)[0] if SCENARIOS[split] > 1 else s.id for s, _ in built}
        ),
        "forks": len(drawn),
        "forks_per_scenario": sorted({len(ds) for _, ds in built}),
        "asked_by_the_corpus": sum(d.fact.asked for d in drawn),
        "stale_probes": sum(d.fact.original is not None for d in drawn),
        "sibling_values": len(siblings),
        "from_the_same_conversation": sum(
            1
            for s, ds in built
            for d in ds
            for c in d.siblings
            if s.id.startswith(f"{split}-{c.conversation}")
        ),
        "arrival_orders": orders,
        "branches_per_fork": branches,
    }


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
    for folder in pin.folders:
        if not (base / folder).is_dir():
            raise CorpusUnavailable(f"split {split} needs {base / folder}, which is absent")
        recorded = readme_commits(base).get(folder)
        if recorded != pin.upstream:
            raise CorpusMismatch(
                f"split {split}: {base / 'README.md'} names {folder} at {recorded},"
                f" the split is pinned to {pin.upstream}"
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
    sub.add_parser("stats", help="print what the generator drew for each split (JSON)")
    p_dump = sub.add_parser("dump", help="write the generated scenarios to a folder")
    p_dump.add_argument("split", choices=CORPUS_SPLITS)
    p_dump.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            scenarios = load_corpus_split(args.split)
            print(f"{args.split}: {len(scenarios)} scenarios, pinned digest matches")
        elif args.command == "stats":
            for split in CORPUS_SPLITS:
                print(json.dumps(draw_stats(split), sort_keys=True))
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
