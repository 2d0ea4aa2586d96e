"""A revision's sources and a frontiers-only gate are written without the JSON encoder when no
name needs escaping (``codec.sources_text``, ``codec.gate_json``): the text must be what
``json.dumps`` writes, character for character, whatever the names hold, or stored rows would
differ by the path that wrote them."""

from __future__ import annotations

import json
import random

import pytest

from branchmem._core.provenance import Gate, TreeFrontier
from branchmem.store import codec

# plain letters, the characters JSON escapes, and some it leaves as they are
ALPHABET = ["a", "b", "7", "@", '"', "\\", "\x00", "\x1f", "\n", "é", "\u2028", "\x7f", " "]


def name(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 4)))


def dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("seed", range(4))
def test_sources_text_is_what_json_writes(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(2000):
        sources = [name(rng) for _ in range(rng.randint(0, 4))]
        assert codec.sources_text(sources) == dumps(sources), sources


@pytest.mark.parametrize("seed", range(4))
def test_frontiers_only_gate_is_what_json_writes(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(2000):
        sources = [name(rng) for _ in range(rng.randint(0, 3))]
        frontiers = tuple(
            TreeFrontier(
                name(rng),
                rng.choice([*sources, name(rng)]),
                rng.randint(0, 99),
                rng.choice([None, name(rng)]),
            )
            for _ in range(rng.randint(0, 3))
        )
        places = {source: index for index, source in enumerate(sources)}
        expected = dumps(
            [
                [f.tree, places.get(f.event, f.event), f.depth]
                + ([] if f.conflict is None else [f.conflict])
                for f in frontiers
            ]
        )
        text = codec.gate_json(Gate(frontiers=frontiers), sources)
        assert text == expected, (frontiers, sources)
        assert codec.gate_value(text, sources) == Gate(frontiers=frontiers)
