"""Seeded generator of the ``long`` split: 150-400 turn dialogues.

Early facts fall outside a raw-history budget, so raw-only memory loses them and derived
memory is needed; a mid-conversation edit leaves an abandoned branch, and a job change
supersedes an early fact. The output is committed as data (``scenarios/long``) so the
validator and the scorer read files, not this code; rerun with
``python -m branchbench.longgen`` after changing it.
"""

from __future__ import annotations

import random
from pathlib import Path

from branchbench.keywords import contains
from branchbench.scenario import Fact, Message, Probe, Scenario, dump_scenario, scenarios_root

SEED = 20240611
COUNT = 10

PETS = ["团子", "芝麻", "布丁", "年年", "球球", "阿福", "豌豆", "可颂"]
ALLERGIES = ["芒果", "青霉素", "花粉", "尘螨", "猕猴桃", "菠萝"]
HOMETOWNS = ["大理", "洛阳", "泉州", "桂林", "延吉", "敦煌", "景德镇", "乐山"]
CARS = ["白色的比亚迪", "灰色的大众", "红色的马自达", "黑色的丰田", "蓝色的本田"]
KIDS = ["乐乐", "朵朵", "安安", "小满", "悠悠", "糖糖"]
JOBS = ["会计", "护士", "中学老师", "律师", "建筑师", "药剂师", "摄影师", "导游"]
DESTINATIONS = ["冰岛", "新西兰", "摩洛哥", "秘鲁", "挪威", "智利", "埃及", "葡萄牙"]

FILLER_USER = [
    "今天{w}，{a}。",
    "刚{a}，感觉{f}。",
    "这周工作有点多，{t}。",
    "晚上想{e}，你觉得怎么样？",
    "最近在读一本关于{b}的书，挺有意思。",
    "周末打算{e}，顺便{a}。",
    "今天开了三个会，{t}。",
    "早上{w}，路上堵了半小时。",
]
FILLER_ASSISTANT = [
    "听起来不错，记得{tip}。",
    "辛苦了，{tip}。",
    "可以的，{tip}。",
    "好主意，{tip}。",
    "明白，{tip}。",
]
SLOTS = {
    "w": ["下了点小雨", "天气很晴朗", "风特别大", "有点闷热", "降温了"],
    "a": ["整理了一下书桌", "去楼下走了走", "把衣服洗了", "给植物浇了水", "收拾了厨房"],
    "f": ["轻松多了", "有点累", "心情不错", "挺充实的"],
    "t": ["报告还没写完", "表格改了好几版", "项目进度有点紧", "需求又变了"],
    "e": ["看一部老电影", "早点睡觉", "做个简单的晚饭", "听听播客", "出门散散步"],
    "b": ["城市规划", "宋代历史", "深海生物", "天文观测", "古典音乐"],
    "tip": ["多喝水", "早点休息", "劳逸结合", "别熬夜", "注意保暖", "适当活动一下"],
}


class _Builder:
    """Appends messages to a chain and remembers where the path currently ends."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.tip: str | None = None

    def add(self, role: str, content: str, *facts: Fact, parent: str | None = "") -> str:
        mid = f"m{len(self.messages) + 1:03d}"
        self.messages.append(
            Message(
                id=mid,
                parent=self.tip if parent == "" else parent,
                role=role,
                content=content,
                facts=facts,
            )
        )
        self.tip = mid
        return mid


def _filler(rng: random.Random, forbidden: list[str]) -> tuple[str, str]:
    while True:
        user = rng.choice(FILLER_USER).format(**{k: rng.choice(v) for k, v in SLOTS.items()})
        reply = rng.choice(FILLER_ASSISTANT).format(tip=rng.choice(SLOTS["tip"]))
        if not any(contains(user + reply, k) for k in forbidden):
            return user, reply


def generate(index: int, seed: int = SEED) -> Scenario:
    """One long scenario; the same index and seed always give the same dialogue."""
    rng = random.Random(seed * 1000 + index)
    total = rng.randint(150, 400)
    pet, allergy, home = rng.choice(PETS), rng.choice(ALLERGIES), rng.choice(HOMETOWNS)
    car, kid = rng.choice(CARS), rng.choice(KIDS)
    job_old, job_new = rng.sample(JOBS, 2)
    dest_old, dest_new = rng.sample(DESTINATIONS, 2)
    keywords = [pet, allergy, home, car, kid, job_old, job_new, dest_old, dest_new]
    b = _Builder()

    def chat(n: int) -> None:
        for _ in range(n):
            user, reply = _filler(rng, keywords)
            b.add("user", user)
            b.add("assistant", reply)

    b.add("user", "你好，以后我们就在这个对话里随便聊聊吧。", parent=None)
    b.add("assistant", "好的，随时都在。")
    early = [
        (f"我家的猫叫{pet}，三岁了。", Fact("pet", f"家里的猫叫{pet}")),
        (f"提醒一下，我对{allergy}过敏。", Fact("allergy", f"对{allergy}过敏")),
        (f"我老家是{home}的。", Fact("hometown", f"老家是{home}")),
        (f"我开的是一辆{car}。", Fact("car", f"开一辆{car}")),
        (f"我女儿叫{kid}，今年上小学。", Fact("child", f"女儿叫{kid}")),
    ]
    for text, fact in early:
        b.add("user", text, fact)
        b.add("assistant", "好的，记住了。")
    b.add("user", f"我现在的工作是{job_old}。", Fact("job", f"工作是{job_old}"))
    b.add("assistant", "了解。")
    remaining = total - len(b.messages) - 10
    chat(remaining // 4)
    fork_parent = b.tip
    b.add("user", f"我打算下个月去{dest_old}旅行。", Fact("trip", f"下个月去{dest_old}旅行"))
    b.add("assistant", "好的，到时候可以帮你做攻略。")
    chat(rng.randint(1, 3))
    b.add(
        "user",
        f"我打算下个月去{dest_new}旅行。",
        Fact("trip", f"下个月去{dest_new}旅行"),
        parent=fork_parent,
    )
    b.add("assistant", "好的，到时候可以帮你做攻略。")
    chat(max(0, (total - len(b.messages) - 4) // 2 // 2))
    b.add("user", f"跟你说一声，我换工作了，现在做{job_new}。", Fact("job", f"工作是{job_new}"))
    b.add("assistant", "恭喜换了新工作！")
    chat(max(0, (total - len(b.messages)) // 2))
    probes = (
        Probe("p1", "retain", "我家的猫叫什么名字？", (pet,), notes="early fact"),
        Probe("p2", "retain", "我对什么过敏？", (allergy,), notes="early fact"),
        Probe("p3", "retain", "我老家是哪里的？", (home,), notes="early fact"),
        Probe("p4", "retain", "我女儿叫什么名字？", (kid,), notes="early fact"),
        Probe(
            "p5",
            "stale",
            "我现在做什么工作？",
            (job_new,),
            (job_old,),
            notes="early job superseded late on the same path",
        ),
        Probe(
            "p6",
            "leak",
            "我下个月去哪里旅行？",
            (dest_new,),
            (dest_old,),
            notes="edited-away destination",
        ),
    )
    return Scenario(
        id=f"zh-long-{index + 1:02d}",
        language="zh",
        operation="long_history",
        split="long",
        title=f"长对话 {index + 1}",
        messages=tuple(b.messages),
        anchor=b.messages[-1].id,
        probes=probes,
    )


def write(root: Path | None = None) -> list[Path]:
    """Regenerate every long scenario file."""
    out = (root or scenarios_root()) / "long"
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(COUNT):
        path = out / f"zh-long-{i + 1:02d}.json"
        dump_scenario(generate(i), path)
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in write():
        print(written)
