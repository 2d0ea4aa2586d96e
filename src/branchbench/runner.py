"""Run a split: every system ingests every message in arrival order, then builds the
context for each probe at its anchor; optionally a model answers from that context.

Everything the scorer needs is written to the results directory: ``run.json`` (the
configuration, the code and versions that ran), ``contexts.jsonl`` (one row per
extractor, system and probe) and, with a model, ``answers.jsonl`` (one row per
extractor, system, probe, prompt and run). Files are written only once everything has
been computed, each atomically and ``run.json`` last: a run that fails half-way (an
endpoint down) leaves the directory as it was.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from branchbench.artifacts import (
    Artifacts,
    current_values,
    digests,
    parts_of,
    raw_path_lines,
    stored,
)
from branchbench.context import DEFAULT_BUDGET
from branchbench.errors import BenchError, ScenarioError
from branchbench.extract import Extractor, LLMExtractor, OracleExtractor, RuleExtractor
from branchbench.llm import PROMPTS, ChatModel, answer_messages
from branchbench.manifest import FROZEN_SPLIT, results_record, run_record, verify_manifest
from branchbench.pipeline import (
    ONE_MESSAGE,
    PIPELINES,
    PROFILE_EVERY,
    READ_POLICIES,
    SUMMARY_EVERY,
    WINDOW,
    Cadence,
    InputExtractor,
    Pipeline,
    describe,
    integration_of,
    pipeline_label,
)
from branchbench.scenario import Fact, Message, Probe, Scenario, Tree, load_split
from branchbench.systems import default_systems, registry
from branchbench.systems.base import Setup, SystemFactory
from branchbench.validate import validate_split

DEFAULT_RUNS = 3
DEFAULT_EXTRACTORS = ("oracle", "rules")
EXTRACTORS = ("oracle", "rules", "llm")
RESULT_FILES = (
    "contexts.jsonl",
    "answers.jsonl",
    "run.json",
    "summary.json",
    "summary.md",
    "leak_by_operation.png",
)

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
    extractors: list[str] = field(default_factory=lambda: list(DEFAULT_EXTRACTORS))
    scenarios_root: str | None = None
    cache: str | None = None
    limit: int | None = None
    pipelines: list[str] = field(default_factory=lambda: list(PIPELINES))
    read_policies: list[str] = field(default_factory=lambda: list(READ_POLICIES))
    window: int = WINDOW
    summary_every: int = SUMMARY_EVERY
    profile_every: int = PROFILE_EVERY
    repair: bool = False  # before each probe, a system with a repair mechanism runs it

    def cadence(self) -> Cadence:
        """The pipeline's cadence constants for this run."""
        try:
            return Cadence(self.window, self.summary_every, self.profile_every)
        except ValueError as error:
            raise BenchError(str(error)) from error


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
    if config.limit is not None:
        if config.limit < 1:
            raise BenchError(f"--limit must be at least 1, got {config.limit}")
        scenarios = scenarios[: config.limit]
    return scenarios, manifest_sha


def _systems(names: Sequence[str]) -> dict[str, SystemFactory]:
    available = registry()
    chosen = list(names) or default_systems()
    unknown = [n for n in chosen if n not in available]
    if unknown:
        raise BenchError(f"unknown system {unknown[0]!r}; available: {', '.join(available)}")
    return {n: available[n] for n in chosen}


def _extractors(names: Sequence[str], chat: ChatModel | None) -> dict[str, Extractor]:
    chosen = list(dict.fromkeys(names)) or list(DEFAULT_EXTRACTORS)
    out: dict[str, Extractor] = {}
    for name in chosen:
        if name == "oracle":
            out[name] = OracleExtractor()
        elif name == "rules":
            out[name] = RuleExtractor()
        elif name == "llm":
            if chat is None:
                raise BenchError("the llm extractor needs --endpoint and --model")
            out[name] = LLMExtractor(chat)
        else:
            raise BenchError(f"unknown extractor {name!r}; choose from {', '.join(EXTRACTORS)}")
    return out


def _pipelines(names: Sequence[str]) -> list[str]:
    chosen = list(dict.fromkeys(names)) or list(PIPELINES)
    unknown = [n for n in chosen if n not in PIPELINES]
    if unknown:
        raise BenchError(f"unknown pipeline {unknown[0]!r}; choose from {', '.join(PIPELINES)}")
    return chosen


def _read_policies(names: Sequence[str]) -> list[str]:
    chosen = list(dict.fromkeys(names)) or list(READ_POLICIES)
    unknown = [n for n in chosen if n not in READ_POLICIES]
    if unknown:
        raise BenchError(
            f"unknown read policy {unknown[0]!r}; choose from {', '.join(READ_POLICIES)}"
        )
    return chosen


def _runs_of(pipelines: Sequence[str], policies: Sequence[str]) -> list[tuple[str, str]]:
    """(mode, read policy) pairs a run measures: one message reads no more than itself,
    so it runs once, under the first policy."""
    return [
        (mode, policy)
        for mode in pipelines
        for policy in (policies[:1] if mode == ONE_MESSAGE else policies)
    ]


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
    extractor: str = "oracle",
    pipeline: str = "one_message",
    reads_input: InputExtractor | None = None,
    read_policy: str = "path",
    cadence: Cadence | None = None,
    repair: bool = False,
) -> list[dict[str, Any]]:
    """Feed one scenario to one fresh system through the run's pipeline and record the
    context of each probe.

    ``extracted`` holds the run's extractor on each message alone; the pipeline
    (``branchbench.pipeline``) reads what ``read_policy`` says, the same for every system,
    and its output cites what the system's attribution says. ``reads_input`` is a model
    that reads a whole pipeline input itself (the llm extractor) instead of the carrier
    over ``extracted``.
    Besides the context, a row records the transcript and memory apart, what the memory
    asserts as current, and whether the whole anchor path fit the budget: the scorer
    needs them to tell measurements from what holds by construction, and what the
    system did with the pipeline's summaries and profiles (``branchbench.artifacts``):
    stale ones shown, ones missing at the anchor, ones it dropped when given them, and
    the work of its repair mechanism when ``repair`` is set (None: it has none).
    """
    points = _probe_points(scenario)
    tree = Tree(scenario.messages)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="branchbench-") as scratch:
        system = factory(Setup(scenario.language, Path(scratch), endpoint, model))
        integration = integration_of(system)
        feed = Pipeline(
            pipeline,
            READ_POLICIES[read_policy],
            integration.attribution,
            lambda m: extracted[m.id],
            scenario.language,
            reads_input if pipeline != ONE_MESSAGE else None,
            cadence,
        )
        label = pipeline_label(pipeline, read_policy)
        made = Artifacts()
        dropped: list[str] = []
        repairer = getattr(system, "repair", None) if repair else None
        by_id = {m.id: m for m in scenario.messages}

        def facts_of(m: Message) -> tuple[Fact, ...]:
            return extracted[m.id]

        try:
            for message in scenario.messages:
                derived = feed.derive(message)
                system.ingest(message, derived)
                for fact in digests(derived):
                    made.add(fact.value, parts_of(fact, feed.components), message.id, fact.kind)
                    if integration.gate != "none" and not stored(system, message, fact):
                        dropped.append(fact.id or "")
                for probe in points.get(message.id, []):
                    anchor = scenario.probe_anchor(probe)
                    work = repairer(anchor) if callable(repairer) else None
                    for text, parts in work.texts if work is not None else ():
                        made.add(text, parts)
                    ctx = system.context(anchor, probe.question, budget)
                    path = [by_id[i] for i in tree.path(anchor)]
                    shown = {t.event_id for t in ctx.transcript}
                    rows.append(
                        {
                            "split": scenario.split,
                            "scenario": scenario.id,
                            "language": scenario.language,
                            "operation": scenario.operation,
                            "arrival": scenario.probe_arrival(probe),
                            "unit": scenario.probe_unit(probe),
                            "extractor": extractor,
                            "pipeline": label,
                            "mode": pipeline,
                            "read_policy": None if pipeline == ONE_MESSAGE else read_policy,
                            "system": name,
                            "has_memory": integration.gate != "none",
                            "probe": probe.id,
                            "type": probe.type,
                            "anchor": anchor,
                            "question": probe.question,
                            "answer": list(probe.answer),
                            "forbidden": list(probe.forbidden),
                            "aliases": {k: list(v) for k, v in probe.aliases.items()},
                            "unless": {k: list(v) for k, v in probe.unless.items()},
                            "forbidden_in_question": any(
                                probe.hit(probe.question, k) for k in probe.forbidden
                            ),
                            "path_in_transcript": all(i in shown for i in tree.path(anchor)),
                            "memory": ctx.memory_text(),
                            "asserted": ctx.asserted_text(),
                            "transcript": ctx.transcript_text(),
                            "context": ctx.render(),
                            "tokens": ctx.tokens(),
                            "artifacts": made.observe(
                                ctx.memory, [m.id for m in path], current_values(path, facts_of)
                            ),
                            "dropped": list(dropped),
                            "repair": None
                            if work is None
                            else {"rebuilt": work.rebuilt, "read": work.read},
                            "memory_raw_path": raw_path_lines(ctx.memory, path, facts_of),
                        }
                    )
        finally:
            system.close()
    return rows


def _jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def write_atomic(path: Path, text: str) -> None:
    """Write a file so that a reader sees the old content or the new, never a part."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def run(config: RunConfig, out_dir: Path, progress: Progress | None = None) -> Path:
    """Run the benchmark into ``out_dir`` and return it; scoring is separate (score.py).

    Refuses to start when the frozen split differs from its manifest or any scenario
    fails validation. Nothing is written to ``out_dir`` unless the whole run succeeds.
    """
    scenarios, manifest_sha = _check_inputs(config)
    systems = _systems(config.systems)
    config.systems = list(systems)
    chat: ChatModel | None = None
    if config.endpoint:
        if not config.model:
            raise BenchError("--endpoint needs --model")
        cache = Path(config.cache) if config.cache else out_dir / "llm_cache.jsonl"
        chat = ChatModel(config.endpoint, config.model, cache)
    extractors = _extractors(config.extractors, chat)
    config.extractors = list(extractors)

    config.pipelines = _pipelines(config.pipelines)
    config.read_policies = _read_policies(config.read_policies)
    runs = _runs_of(config.pipelines, config.read_policies)
    rows: list[dict[str, Any]] = []
    for scenario in scenarios:
        for ex_name, extractor in extractors.items():
            extracted = {m.id: extractor.extract(m) for m in scenario.messages}
            reads_input = _input_reader(extractor)
            for pipeline, policy in runs:
                for name, factory in systems.items():
                    rows.extend(
                        context_rows(
                            scenario,
                            name,
                            factory,
                            extracted,
                            config.budget,
                            config.endpoint,
                            config.model,
                            extractor=ex_name,
                            pipeline=pipeline,
                            reads_input=reads_input,
                            read_policy=policy,
                            cadence=config.cadence(),
                            repair=config.repair,
                        )
                    )
                    if progress:
                        label = pipeline_label(pipeline, policy)
                        progress(f"{scenario.id} / {ex_name} / {label} / {name}")

    answers: list[dict[str, Any]] = []
    if chat is not None:
        # the model answers from the first extractor's and first pipeline's contexts only:
        # the cost of a run should not multiply because more are measured model-free
        first = (config.extractors[0], pipeline_label(*runs[0]))
        for row in (r for r in rows if (r["extractor"], r["pipeline"]) == first):
            for prompt_name, prompt in PROMPTS.items():
                messages = answer_messages(prompt, row["context"], row["question"], row["language"])
                for i in range(config.runs):
                    key, text = chat.complete(messages, run=i)
                    answers.append(
                        {
                            "scenario": row["scenario"],
                            "extractor": row["extractor"],
                            "pipeline": row["pipeline"],
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

    texts = {"contexts.jsonl": _jsonl(rows)}
    if answers:
        texts["answers.jsonl"] = _jsonl(answers)
    meta = {
        **asdict(config),
        "integrations": describe({n: integration_of(f) for n, f in systems.items()}),
        "manifest_sha256": manifest_sha,
        "scenarios": len(scenarios),
        "probes": sum(len(s.probes) for s in scenarios),
        # SHA-256 of each file (`score` refuses edited ones) and whether --limit truncated
        **results_record(texts, len(scenarios), config.split, config.scenarios_root, config.limit),
        **run_record(),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in RESULT_FILES:
        (out_dir / name).unlink(missing_ok=True)  # no file of an earlier run survives
    for name, text in texts.items():
        write_atomic(out_dir / name, text)
    write_atomic(out_dir / "run.json", json.dumps(meta, ensure_ascii=False, indent=2) + "\n")
    return out_dir


def reproduce(results_dir: Path) -> tuple[bool, str]:
    """Run again what ``results_dir``'s run.json says was run and compare the contexts,
    byte for byte: (whether they are identical, what was compared). Hashes in run.json only
    catch an accidental edit (anyone can write a new one); a model-free run is
    deterministic, so running it again is what shows its results are what the code gives.
    A run with a model is refused (its answers came from the endpoint)."""
    meta_path = results_dir / "run.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise BenchError(f"cannot read {meta_path}: {error}") from error
    if meta.get("endpoint"):
        raise BenchError(f"{results_dir} was run with a model: only model-free runs reproduce")
    fields = {f for f in RunConfig.__dataclass_fields__ if f in meta}
    config = RunConfig(**{f: meta[f] for f in fields})
    saved = results_dir / "contexts.jsonl"
    if not saved.exists():
        raise BenchError(f"{saved} is missing")
    with tempfile.TemporaryDirectory(prefix="branchbench-reproduce-") as scratch:
        again = run(config, Path(scratch) / "again") / "contexts.jsonl"
        same = again.read_bytes() == saved.read_bytes()
    code = meta.get("code_sha256")
    note = "" if code == run_record()["code_sha256"] else " (run.json records other code)"
    return same, f"{config.split}: contexts.jsonl run again{note}"


def _input_reader(extractor: Extractor) -> InputExtractor | None:
    reader = getattr(extractor, "extract_input", None)
    return reader if callable(reader) else None


def progress_steps(config: RunConfig) -> int:
    """How many progress ticks a run makes (for a progress bar)."""
    root = Path(config.scenarios_root) if config.scenarios_root else None
    scenarios = load_split(config.split, root)[: config.limit]
    pipelines = len(_runs_of(_pipelines(config.pipelines), _read_policies(config.read_policies)))
    per_system = len(scenarios) * max(1, len(config.extractors)) * pipelines
    steps = per_system * len(_systems(config.systems))
    if config.endpoint:
        steps += sum(len(s.probes) for s in scenarios) * len(_systems(config.systems))
    return steps
