"""Seeded generator of the ``cascade`` split: facts corrected after summaries and profiles
were built over them.

Each dialogue (Chinese and English) states four facts early on the kept path (a cat's
name, a hometown, a job, a trip), runs on long enough for a pipeline's summaries and
profiles to restate them, then corrects two (the job and the trip) and runs on a little.
One abandoned sibling (a regenerated first reply, no facts) makes the path pass a fork.
The filler lengths are drawn per dialogue, so the corrections land at different points
of any summary or profile cadence. Probes, at the end and right after the corrections:
the two corrected values (stale), and the two facts nobody corrected (retain).

Run it with ``branchbench cascade``. The output is committed as data
(``scenarios/cascade``); rerun with ``python -m branchbench.cascadegen`` after changing
this file.
"""

from __future__ import annotations

import random
from pathlib import Path

from branchbench.scenario import Fact, Probe, Scenario
from branchbench.spreadgen import EN, ZH, Language, ScenarioTree, write_split

SEED = 20261205
DRAWS = 6  # per language
LANGUAGES = (ZH, EN)
TRIP_NEW = {
    "zh": "计划有变，下个月改去{x}旅行了。",
    "en": "Change of plans: next month I'm going to {x} instead.",
}
REGENERATED = {"zh": "好的，我在。", "en": "Sure, I'm here."}


class _Cascade(ScenarioTree):
    def say(self, tip: str, turns: int, facts: list[tuple[str, str, str]]) -> str:
        """``turns`` filler pairs from ``tip``; each (key, sentence, value) of ``facts`` is
        said inside one of them, at drawn positions."""
        slots = sorted(self.rng.sample(range(turns), len(facts)))
        placed = dict(zip(slots, facts, strict=True))
        for i in range(turns):
            user, reply = self.filler()
            derived: list[Fact] = []
            if i in placed:
                key, sentence, value = placed[i]
                user = f"{user}{' ' if self.lang.code == 'en' else ''}{sentence}"
                derived.append(Fact(key, value))
                reply = self.lang.ack
            tip = self.add(tip, "user", user, *derived)
            tip = self.add(tip, "assistant", reply)
        return tip


def _fact(lang: Language, key: str, value: str, said: str | None = None) -> tuple[str, str, str]:
    sentence = (said or lang.said[key]).format(x=value)
    return (key, sentence, lang.values[key].format(x=value))


def generate(lang: Language, draw: int, seed: int = SEED) -> Scenario:
    """One scenario; the same language, draw and seed give the same dialogue."""
    rng = random.Random(f"{seed}/cascade/{lang.code}/{draw}")
    pet, home = rng.choice(lang.pets), rng.choice(lang.hometowns)
    job_old, job_new = rng.sample(lang.jobs, 2)
    trip_old, trip_new = rng.sample(lang.destinations, 2)
    t = _Cascade(lang, rng, [pet, home, job_old, job_new, trip_old, trip_new])
    root = t.add(None, "user", lang.opening[0])
    t.add(root, "assistant", REGENERATED[lang.code])  # regenerated away: the fork
    tip = t.add(root, "assistant", lang.opening[1])
    early = [
        _fact(lang, "pet", pet),
        _fact(lang, "hometown", home),
        _fact(lang, "job", job_old),
        _fact(lang, "trip", trip_old),
    ]
    tip = t.say(tip, rng.randint(4, 7), early)
    tip = t.say(tip, rng.randint(2, 8), [])  # summaries and profiles restate the facts
    corrected = t.say(
        tip,
        rng.randint(2, 4),
        [
            _fact(lang, "job", job_new, lang.said["job_new"]),
            _fact(lang, "trip", trip_new, TRIP_NEW[lang.code]),
        ],
    )
    anchor = t.say(corrected, rng.randint(1, 6), [])
    q = lang.questions
    asked = [
        ("stale", q["job"][0], job_new, job_old, "job corrected"),
        ("stale", q["trip"][0], trip_new, trip_old, "trip corrected"),
        ("retain", q["pet"][0], pet, None, "never corrected"),
        ("retain", q["hometown"][0], home, None, "never corrected"),
    ]
    probes: list[Probe] = []
    for point in (None, corrected):  # at the end, and right after the corrections
        note = " (right after the corrections)" if point else ""
        for kind, question, answer, old in ((a, b, c, d) for a, b, c, d, _ in asked):
            probes.append(
                Probe(
                    f"p{len(probes) + 1}",
                    kind,
                    question,
                    (answer,),
                    (old,) if old else (),
                    notes=asked[len(probes) % len(asked)][4] + note,
                    anchor=point,
                    asked_after=point,
                )
            )
    return Scenario(
        id=f"{lang.code}-cascade-{draw + 1}",
        language=lang.code,
        operation="cascade",
        split="cascade",
        title=f"correction cascade {lang.code} {draw + 1}",
        messages=tuple(t.messages),
        anchor=anchor,
        probes=tuple(probes),
    )


def write(root: Path | None = None) -> list[Path]:
    """Regenerate every scenario file of the split."""
    return write_split(
        "cascade", (generate(lang, draw) for lang in LANGUAGES for draw in range(DRAWS)), root
    )


if __name__ == "__main__":
    for written in write():
        print(written)
