"""Seeded generator of the ``spread`` split: where derived memory and provenance both matter.

The ``long`` split needs derived memory but its abandoned branch always arrives first,
so an arrival-order memory ties branchmem; the short splits fit any budget, so raw
history alone retains everything. Here each dialogue (Chinese and English, 120-300
turns) states its facts inside ordinary messages spread through filler, on the shared
prefix and deep in the kept branch, and abandons branches that arrive before the kept
one, after it, or in between (a switch-back), under four templates:

- ``edit_user``: an early edit; the abandoned version arrives first;
- ``late_sibling``: an alternative explored after the kept branch was under way, then
  dropped (the abandoned branch arrives last but one);
- ``switch_back``: a long excursion on a sibling, then back to the first branch;
- ``two_forks``: one branch abandoned before the kept one and another forked off its
  middle, arriving after.

Probes: early facts (retain), the abandoned branches' values (leak), a job changed late
on the path (stale). Run it over budgets with ``branchbench curve --split spread``. The
output is committed as data (``scenarios/spread``); rerun with
``python -m branchbench.spreadgen`` after changing this file.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from branchbench import longgen
from branchbench.keywords import contains
from branchbench.scenario import Fact, Message, Probe, Scenario, dump_scenario, scenarios_root

SEED = 20261130
DRAWS = 2  # per template and language
TEMPLATES = ("edit_user", "late_sibling", "switch_back", "two_forks")


@dataclass(frozen=True)
class Language:
    """Everything language-specific: values, fact sentences, filler, questions."""

    code: str
    pets: tuple[str, ...]
    allergies: tuple[str, ...]
    hometowns: tuple[str, ...]
    kids: tuple[str, ...]
    jobs: tuple[str, ...]
    destinations: tuple[str, ...]
    budgets: tuple[str, ...]
    said: dict[str, str]  # fact key -> sentence with {x}
    values: dict[str, str]  # fact key -> fact value with {x}
    questions: dict[str, tuple[str, ...]]
    user_filler: tuple[str, ...]
    assistant_filler: tuple[str, ...]
    slots: dict[str, tuple[str, ...]]
    opening: tuple[str, str]
    ack: str


ZH = Language(
    code="zh",
    pets=("团子", "芝麻", "布丁", "年年", "球球", "阿福", "豌豆", "可颂"),
    allergies=("芒果", "青霉素", "花粉", "尘螨", "猕猴桃", "菠萝"),
    hometowns=("大理", "洛阳", "泉州", "桂林", "延吉", "敦煌", "景德镇", "乐山"),
    kids=("乐乐", "朵朵", "安安", "小满", "悠悠", "糖糖"),
    jobs=("会计", "护士", "中学老师", "律师", "建筑师", "药剂师", "摄影师", "导游"),
    destinations=("冰岛", "新西兰", "摩洛哥", "秘鲁", "挪威", "智利", "埃及", "葡萄牙"),
    budgets=("八万六千元", "九万三千元", "十二万五千元", "七万八千元", "十五万四千元"),
    said={
        "pet": "对了，我家的猫叫{x}，特别黏人。",
        "allergy": "顺便说一句，我对{x}过敏，吃东西得注意。",
        "hometown": "我老家在{x}，过年才回去。",
        "child": "我女儿叫{x}，今年上二年级。",
        "job": "我现在的工作是{x}。",
        "job_new": "跟你说一声，我换工作了，现在做{x}。",
        "trip": "我打算下个月去{x}旅行，帮我留意一下。",
        "renovation": "家里装修的预算定了，一共{x}。",
    },
    values={
        "pet": "家里的猫叫{x}",
        "allergy": "对{x}过敏",
        "hometown": "老家在{x}",
        "child": "女儿叫{x}",
        "job": "工作是{x}",
        "trip": "下个月去{x}旅行",
        "renovation": "装修预算{x}",
    },
    questions={
        "pet": ("我家的猫叫什么名字？", "你还记得我家猫的名字吗？"),
        "allergy": ("我对什么过敏？", "吃饭时我需要避开什么？"),
        "hometown": ("我老家是哪里的？", "我过年回哪儿？"),
        "child": ("我女儿叫什么名字？", "你记得我女儿的名字吗？"),
        "job": ("我现在做什么工作？",),
        "trip": ("我下个月去哪里旅行？",),
        "renovation": ("装修预算一共多少？",),
    },
    # the Chinese filler of the long split (longgen), so both splits talk about the same days
    user_filler=tuple(longgen.FILLER_USER),
    assistant_filler=tuple(longgen.FILLER_ASSISTANT),
    slots={name: tuple(words) for name, words in longgen.SLOTS.items()},
    opening=("你好，以后我们就在这个对话里随便聊聊吧。", "好的，随时都在。"),
    ack="好的，记住了。",
)

EN = Language(
    code="en",
    pets=("Biscuit", "Pepper", "Mochi", "Juniper", "Waffles", "Clementine", "Pistachio"),
    allergies=("penicillin", "kiwi fruit", "pollen", "dust mites", "pineapple", "mango"),
    hometowns=("Aberdeen", "Valparaiso", "Tromso", "Galway", "Ljubljana", "Cordoba"),
    kids=("Matilda", "Rosalind", "Imogen", "Beatrix", "Henrietta", "Wilhelmina"),
    jobs=("accountant", "nurse", "architect", "pharmacist", "photographer", "tour guide"),
    destinations=("Iceland", "New Zealand", "Morocco", "Peru", "Norway", "Chile", "Portugal"),
    budgets=("86,000 yuan", "93,000 yuan", "125,000 yuan", "78,000 yuan", "154,000 yuan"),
    said={
        "pet": "Oh, and my cat is called {x}, very clingy.",
        "allergy": "By the way, I'm allergic to {x}, so food needs care.",
        "hometown": "My hometown is {x}; I only go back for the holidays.",
        "child": "My daughter is called {x}, she's in second grade.",
        "job": "Right now I work as a {x}.",
        "job_new": "Quick update: I changed jobs, I'm now a {x}.",
        "trip": "I'm planning a trip to {x} next month, keep an eye out for me.",
        "renovation": "We settled the renovation budget at {x} in total.",
    },
    values={
        "pet": "Cat is called {x}",
        "allergy": "Allergic to {x}",
        "hometown": "Hometown is {x}",
        "child": "Daughter is called {x}",
        "job": "Works as a {x}",
        "trip": "Trip to {x} next month",
        "renovation": "Renovation budget {x}",
    },
    questions={
        "pet": ("What is my cat's name?", "Do you remember what my cat is called?"),
        "allergy": ("What am I allergic to?", "What do I have to avoid when eating?"),
        "hometown": ("Where am I from originally?", "Where do I go back to for the holidays?"),
        "child": ("What is my daughter's name?", "Do you remember my daughter's name?"),
        "job": ("What do I do for a living now?",),
        "trip": ("Where am I travelling next month?",),
        "renovation": ("What is the total renovation budget?",),
    },
    user_filler=(
        "Today {w}, so I {a}.",
        "Just {a}; I feel {f}.",
        "Busy week at work, {t}.",
        "Tonight I might {e}, what do you think?",
        "I'm reading a book about {b}, it's quite good.",
        "This weekend I plan to {e} and maybe {a}.",
        "Three meetings today, {t}.",
        "This morning {w}, traffic was slow.",
    ),
    assistant_filler=(
        "Sounds good, remember to {tip}.",
        "That's a lot, {tip}.",
        "Sure, {tip}.",
        "Good idea, {tip}.",
        "Got it, {tip}.",
    ),
    slots={
        "w": ("it drizzled", "it was sunny", "it was windy", "it was humid", "it got colder"),
        "a": ("tidied my desk", "went for a walk", "did the laundry", "watered the plants"),
        "f": ("relaxed", "a bit tired", "in a good mood", "productive"),
        "t": ("the report is unfinished", "the spreadsheet changed again", "deadlines loom"),
        "e": ("watch an old film", "sleep early", "cook something simple", "listen to podcasts"),
        "b": ("urban planning", "medieval history", "deep-sea creatures", "astronomy"),
        "tip": ("drink water", "rest early", "take breaks", "stay warm", "stretch a little"),
    },
    opening=("Hi, let's just chat in this conversation from now on.", "Sure, any time."),
    ack="Okay, noted.",
)
LANGUAGES = (ZH, EN)


class ScenarioTree:
    """Appends messages; each branch is a chain continued from its own tip."""

    def __init__(self, lang: Language, rng: random.Random, avoid: list[str]) -> None:
        self.lang, self.rng, self.avoid = lang, rng, avoid
        self.messages: list[Message] = []

    def add(self, parent: str | None, role: str, content: str, *facts: Fact) -> str:
        mid = f"m{len(self.messages) + 1:03d}"
        self.messages.append(Message(mid, parent, role, content, facts))
        return mid

    def filler(self) -> tuple[str, str]:
        lang = self.lang
        while True:
            slots = {k: self.rng.choice(v) for k, v in lang.slots.items()}
            user = self.rng.choice(lang.user_filler).format(**slots)
            reply = self.rng.choice(lang.assistant_filler).format(tip=slots["tip"])
            if not any(contains(user + reply, k) for k in self.avoid):
                return user, reply

    def chat(self, tip: str, turns: int, facts: list[tuple[str, str]] | None = None) -> str:
        """``turns`` user/assistant pairs of filler from ``tip``; each (key, value) of
        ``facts`` is said inside one of them, at spread-out positions."""
        facts = list(facts or [])
        slots = sorted(self.rng.sample(range(turns), min(len(facts), turns))) if turns else []
        placed = dict(zip(slots, facts, strict=False))
        for i in range(turns):
            user, reply = self.filler()
            derived: list[Fact] = []
            if i in placed:
                key, value = placed[i]
                said_key = "job_new" if key == "job_new" else key
                fact_key = "job" if key == "job_new" else key
                sentence = self.lang.said[said_key].format(x=value)
                # the fact sits between two ordinary sentences, not in a message of its own
                user = f"{user}{' ' if self.lang.code == 'en' else ''}{sentence}"
                derived.append(Fact(fact_key, self.lang.values[fact_key].format(x=value)))
                reply = self.lang.ack if self.rng.random() < 0.3 else reply
            tip = self.add(tip, "user", user, *derived)
            tip = self.add(tip, "assistant", reply)
        return tip


def generate(template: str, lang: Language, draw: int, seed: int = SEED) -> Scenario:
    """One scenario; the same template, language, draw and seed give the same dialogue."""
    rng = random.Random(f"{seed}/{template}/{lang.code}/{draw}")
    pet, allergy, home, kid = (
        rng.choice(lang.pets),
        rng.choice(lang.allergies),
        rng.choice(lang.hometowns),
        rng.choice(lang.kids),
    )
    job_old, job_new = rng.sample(lang.jobs, 2)
    trip_kept, trip_gone = rng.sample(lang.destinations, 2)
    budget_kept, budget_gone = rng.sample(lang.budgets, 2)
    avoid = [pet, allergy, home, kid, job_old, job_new, trip_kept, trip_gone]
    avoid += [budget_kept, budget_gone]
    t = ScenarioTree(lang, rng, avoid)
    n = rng.randint(70, 170)  # user/assistant pairs on the kept path, roughly

    root = t.add(None, "user", lang.opening[0])
    tip = t.add(root, "assistant", lang.opening[1])
    prefix_facts = [("pet", pet), ("allergy", allergy), ("job", job_old)]
    rng.shuffle(prefix_facts)
    fork = t.chat(tip, n // 4, prefix_facts)
    kept_facts = [("hometown", home), ("child", kid)]
    leaks = [("trip", trip_kept, trip_gone)]

    def branch(start: str, turns: int, trip: str, facts: list[tuple[str, str]]) -> str:
        first = t.add(start, "user", lang.said["trip"].format(x=trip), Fact(
            "trip", lang.values["trip"].format(x=trip)))  # fmt: skip
        tip = t.add(first, "assistant", lang.ack)
        return t.chat(tip, turns, facts)

    if template == "edit_user":
        branch(fork, rng.randint(5, 15), trip_gone, [])
        kept = branch(fork, n // 2, trip_kept, kept_facts)
        anchor = t.chat(kept, n // 4, [("job_new", job_new)])
    elif template == "late_sibling":
        kept = branch(fork, n // 2, trip_kept, kept_facts)
        branch(fork, rng.randint(5, 15), trip_gone, [])
        anchor = t.chat(kept, n // 4, [("job_new", job_new)])
    elif template == "switch_back":
        kept = branch(fork, n // 4, trip_kept, kept_facts[:1])
        branch(fork, n // 3, trip_gone, [])  # the long excursion
        anchor = t.chat(kept, n // 2, [*kept_facts[1:], ("job_new", job_new)])
    elif template == "two_forks":
        branch(fork, rng.randint(5, 15), trip_gone, [])
        kept = branch(fork, n // 3, trip_kept, kept_facts)
        middle = t.chat(kept, n // 6, [("renovation", budget_kept)])
        side = t.add(middle, "user", lang.said["renovation"].format(x=budget_gone), Fact(
            "renovation", lang.values["renovation"].format(x=budget_gone)))  # fmt: skip
        t.chat(t.add(side, "assistant", lang.ack), rng.randint(5, 15))
        anchor = t.chat(middle, n // 4, [("job_new", job_new)])
        leaks.append(("renovation", budget_kept, budget_gone))
    else:
        raise ValueError(f"unknown template {template!r}")

    q = lang.questions
    probes = [
        Probe("p1", "retain", rng.choice(q["pet"]), (pet,), notes="prefix fact"),
        Probe("p2", "retain", rng.choice(q["allergy"]), (allergy,), notes="prefix fact"),
        Probe("p3", "retain", rng.choice(q["hometown"]), (home,), notes="kept-branch fact"),
        Probe("p4", "retain", rng.choice(q["child"]), (kid,), notes="kept-branch fact"),
        Probe("p5", "stale", q["job"][0], (job_new,), (job_old,), notes="job changed late on path"),
    ]
    for i, (key, kept_value, gone_value) in enumerate(leaks):
        probes.append(
            Probe(
                f"p{6 + i}",
                "leak",
                q[key][0],
                (kept_value,),
                (gone_value,),
                notes=f"{key} of an abandoned branch",
            )
        )
    return Scenario(
        id=f"{lang.code}-spread-{template.replace('_', '-')}-{draw + 1}",
        language=lang.code,
        operation=template,
        split="spread",
        title=f"{template} {lang.code} {draw + 1}",
        messages=tuple(t.messages),
        anchor=anchor,
        probes=tuple(probes),
    )


def write_split(split: str, scenarios: Iterable[Scenario], root: Path | None = None) -> list[Path]:
    """Write a generated split's scenario files, one ``<id>.json`` each, under ``split/``."""
    out = (root or scenarios_root()) / split
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for scenario in scenarios:
        path = out / f"{scenario.id}.json"
        dump_scenario(scenario, path)
        paths.append(path)
    return paths


def write(root: Path | None = None) -> list[Path]:
    """Regenerate every scenario file of the split."""
    return write_split(
        "spread",
        (
            generate(template, lang, draw)
            for template in TEMPLATES
            for lang in LANGUAGES
            for draw in range(DRAWS)
        ),
        root,
    )


if __name__ == "__main__":
    for written in write():
        print(written)
