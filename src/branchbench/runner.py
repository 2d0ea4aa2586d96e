"""Run a split: every system ingests every message in arrival order, then builds the
context for each probe at its anchor; optionally a model answers from that context.

Everything the scorer needs is written to the results directory: ``run.json`` (the
configuration), ``contexts.jsonl`` (one row per system and probe) and, with a model,
``answers.jsonl`` (one row per system, probe, prompt and run).
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from branchbench.context import DEFAULT_BUDGET
from branchbench.errors import BenchError, ScenarioError
from branchbench.extract import Extractor, LLMExtractor, OracleExtractor
from branchbench.keywords import contains
from branchbench.llm import PROMPTS, ChatModel, answer_messages
from branchbench.manifest import FROZEN_SPLIT, verify_manifest
from branchbench.scenario import Fact, Probe, Scenario, load_split
from branchbench.systems import registry
from branchbench.systems.base import Setup, SystemFactory
from branchbench.validate import validate_split

DEFAULT_RUNS = 3

Progress = Callable[[str], None]


@dataclass
class RunConfig:
    """What to run; recorded verbatim in ``run.json``."""

    split: str = FROZEN_SPLIT
    systems: list[str] = field(default_factory=list)
    budget: int = DEFAULT_BUDGET
    endpoint: str | None = None
    model: str | None = None
    runs: int = DEFAULT_RUNS
    extractor: str = "oracle"
    scenarios_root: str | None = None
    cache: str | None = None


def _check_inputs(config: RunConfig) -> tuple[list[Scenario], str | None]:
    root = Path(config.scenarios_root) if config.scenarios_root else None
    manifest_sha = verify_manifest(root) if config.split == FROZEN_SPLIT else None
    scenarios = load_split(config.split, root)
    if not scenarios:
        raise ScenarioError(config.split, "the split has no scenario files")
    problems = validate_split(scenarios, config.split)
    if problems:
        raise ScenarioError(
            problems[0].scenario,
            f"fails validation: {problems[0]}"
            f" ({len(problems)} problem(s); run `branchbench validate`)",
        )
    return scenarios, manifest_sha


def _systems(names: Sequence[str]) -> dict[str, SystemFactory]:
    available = registry()
    chosen = list(names) or list(available)
    unknown = [n for n in chosen if n not in available]
    if unknown:
        raise BenchError(f"unknown system {unknown[0]!r}; available: {', '.join(available)}")
    return {n: available[n] for n in chosen}


def _probe_points(scenario: Scenario) -> dict[str, list[Probe]]:
    points: dict[str, list[Probe]] = defaultdict(list)
    for probe in scenario.probes:
        points[scenario.asked_after(probe)].append(probe)
    return points


def context_rows(
    scenario: Scenario,
    name: str,
    factory: SystemFactory,
    extracted: dict[str, tuple[Fact, ...]],
    budget: int,
    endpoint: str | None = None,
    model: str | None = None,
) -> list[dict[str, Any]]:
    """Feed one scenario to one fresh system and record the context of each probe."""
    points = _probe_points(scenario)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="branchbench-") as scratch:
        system = factory(Setup(scenario.language, Path(scratch), endpoint, model))
        try:
            for message in scenario.messages:
                system.ingest(message, extracted[message.id])
                for probe in points.get(message.id, []):
                    anchor = scenario.probe_anchor(probe)
                    ctx = system.context(anchor, probe.question, budget)
                    rows.append(
                        {
                            "split": scenario.split,
                            "scenario": scenario.id,
                            "language": scenario.language,
                            "operation": scenario.operation,
                            "system": name,
                            "probe": probe.id,
                            "type": probe.type,
                            "anchor": anchor,
                            "question": probe.question,
                            "answer": list(probe.answer),
                            "forbidden": list(probe.forbidden),
                            "forbidden_in_question": any(
                                contains(probe.question, k) for k in probe.forbidden
                            ),
                            "memory": ctx.memory_text(),
                            "context": ctx.render(),
                            "tokens": ctx.tokens(),
                        }
                    )
        finally:
            system.close()
    return rows


def _write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def run(config: RunConfig, out_dir: Path, progress: Progress | None = None) -> Path:
    """Run the benchmark into ``out_dir`` and return it; scoring is separate (score.py).

    Refuses to start when the frozen split differs from its manifest or any scenario
    fails validation.
    """
    scenarios, manifest_sha = _check_inputs(config)
    systems = _systems(config.systems)
    config.systems = list(systems)
    out_dir.mkdir(parents=True, exist_ok=True)
    chat: ChatModel | None = None
    if config.endpoint:
        if not config.model:
            raise BenchError("--endpoint needs --model")
        cache = Path(config.cache) if config.cache else out_dir / "llm_cache.jsonl"
        chat = ChatModel(config.endpoint, config.model, cache)
    extractor: Extractor = OracleExtractor()
    if config.extractor == "llm":
        if chat is None:
            raise BenchError("the llm extractor needs --endpoint and --model")
        extractor = LLMExtractor(chat)

    rows: list[dict[str, Any]] = []
    for scenario in scenarios:
        extracted = {m.id: extractor.extract(m) for m in scenario.messages}
        for name, factory in systems.items():
            rows.extend(
                context_rows(
                    scenario, name, factory, extracted, config.budget, config.endpoint, config.model
                )
            )
            if progress:
                progress(f"{scenario.id} / {name}")
    _write_jsonl(out_dir / "contexts.jsonl", rows)

    if chat is not None:
        answers = []
        for row in rows:
            for prompt_name, prompt in PROMPTS.items():
                messages = answer_messages(prompt, row["context"], row["question"], row["language"])
                for i in range(config.runs):
                    key, text = chat.complete(messages, run=i)
                    answers.append(
                        {
                            "scenario": row["scenario"],
                            "system": row["system"],
                            "probe": row["probe"],
                            "prompt": prompt_name,
                            "run": i,
                            "request_hash": key,
                            "answer": text,
                        }
                    )
            if progress:
                progress(f"answers {row['scenario']} / {row['system']} / {row['probe']}")
        _write_jsonl(out_dir / "answers.jsonl", answers)

    meta = {
        **asdict(config),
        "manifest_sha256": manifest_sha,
        "scenarios": len(scenarios),
        "probes": sum(len(s.probes) for s in scenarios),
    }
    (out_dir / "run.json").write_text(
        json.dumps(meta, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    return out_dir


def progress_steps(config: RunConfig) -> int:
    """How many progress ticks a run makes (for a progress bar)."""
    root = Path(config.scenarios_root) if config.scenarios_root else None
    n = len(load_split(config.split, root))
    steps = n * len(_systems(config.systems))
    if config.endpoint:
        probes = sum(len(s.probes) for s in load_split(config.split, root))
        steps += probes * len(_systems(config.systems))
    return steps
