"""How easy a split's leak probes are to game by vocabulary alone.

A memory could flag a sibling's value without any provenance by asking "does this word
occur on the kept path?". The validator puts every forbidden keyword itself off the kept
path (so the whole value is never on it, by construction); what varies is whether its
*words* are: "8 series" next to a kept path that says "7 series" and "8 weeks" is not
spotted word by word, "Reykjavik" in a conversation that never names it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from branchbench.keywords import contains, normalize
from branchbench.scenario import Scenario, Tree

_WORD = re.compile(r"[^\W_]+")


def words(keyword: str) -> list[str]:
    """The words of a keyword once normalised ("$7,800" is one word, "7800")."""
    return _WORD.findall(normalize(keyword))


def sibling_words(scenarios: Iterable[Scenario]) -> dict[str, Any]:
    """Over every leak probe's forbidden values: how many have some word, and every word,
    on the probe's kept path (the anchor's ancestors), and how many words in all."""
    values = some = every = total = on_path = 0
    for s in scenarios:
        tree = Tree(s.messages)
        by_id = {m.id: m for m in s.messages}
        for p in s.probes:
            if p.type != "leak":
                continue
            path = "\n".join(by_id[i].content for i in tree.path(s.probe_anchor(p)))
            for keyword in p.forbidden:
                found = [contains(path, w) for w in words(keyword)]
                values += 1
                total += len(found)
                on_path += sum(found)
                some += any(found)
                every += bool(found) and all(found)
    return {
        "values": values,
        "some_word_on_path": some,
        "every_word_on_path": every,
        "words": total,
        "words_on_path": on_path,
    }


def note(figures: dict[str, Any]) -> str:
    """The figure as a sentence of the report."""
    values, total = figures["values"], figures["words"]
    if not values:
        return "No leak probe: no sibling value to look for on the kept path."

    def share(n: int, of: int) -> str:
        return f"{n} of {of} ({100 * n / of:.0f}%)" if of else "0 of 0"

    return (
        "Sibling values on the kept path (lexical detection difficulty): of the "
        f"{values} values the leak probes forbid, {share(figures['some_word_on_path'], values)}"
        f" have a word that also occurs on the probe's kept path, "
        f"{share(figures['every_word_on_path'], values)} every word; "
        f"{share(figures['words_on_path'], total)} words in all. The value as a whole is "
        "never on the kept path: the validator puts it off the path (by construction)."
    )
