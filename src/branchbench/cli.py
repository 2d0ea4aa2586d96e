"""`branchbench` command line: run, validate, score, manifest.

Errors from the library become one-line messages here and nowhere else; exit status 0
is success, 1 a failed validation, 2 any other error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from branchbench.charts import CHART_FILES, charts, has_matplotlib
from branchbench.context import DEFAULT_BUDGET
from branchbench.curve import CURVE_BUDGETS, curve_charts, curves_markdown, run_curve
from branchbench.errors import BenchError, ManifestError
from branchbench.manifest import FROZEN_SPLIT, file_sha256, verify_manifest, write_manifest
from branchbench.pipeline import PIPELINES, READ_POLICIES
from branchbench.report import console_tables, model_table, print_table, write_outputs
from branchbench.runner import (
    DEFAULT_RUNS,
    EXTRACTORS,
    RunConfig,
    progress_steps,
    reproduce,
    run,
)
from branchbench.scenario import CORPUS_SPLITS, SPLITS, load_file, load_split, split_files
from branchbench.score import summarize
from branchbench.systems import NAMED_ONLY, registry
from branchbench.validate import Problem, keyword_warnings, validate_scenario, validate_split
from branchmem import __version__


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="branchbench",
        description="How much each kind of memory leaks an abandoned conversation branch.",
    )
    parser.add_argument("--version", action="version", version=f"branchbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p_run = sub.add_parser(
        "run",
        help="run a split and print the table",
        description="Run every system on a split and score it.",
    )
    p_run.add_argument(
        "--split", default="test", choices=SPLITS + CORPUS_SPLITS, help="split to run"
    )
    p_run.add_argument("--out", required=True, type=Path, help="results directory")
    p_run.add_argument(
        "--systems",
        nargs="+",
        default=[],
        metavar="NAME",
        help=(
            f"systems to run (default: all but {', '.join(sorted(NAMED_ONLY))}; "
            f"{', '.join(registry())})"
        ),
    )
    p_run.add_argument(
        "--budget", type=int, default=DEFAULT_BUDGET, help="token budget of every context"
    )
    p_run.add_argument("--endpoint", help="OpenAI-compatible base URL for the answer model")
    p_run.add_argument("--model", help="model name at the endpoint")
    p_run.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="runs per prompt")
    p_run.add_argument(
        "--extractor",
        action="append",
        choices=EXTRACTORS,
        default=None,
        help="fact extractor, repeatable (default: oracle and rules; llm needs --endpoint)",
    )
    p_run.add_argument(
        "--limit", type=int, help="only the first N scenarios of the split (cost control)"
    )
    p_run.add_argument(
        "--pipeline",
        action="append",
        choices=PIPELINES,
        default=None,
        help="pipeline mode, repeatable (default: all of them)",
    )
    p_run.add_argument(
        "--read-policy",
        action="append",
        choices=list(READ_POLICIES),
        default=None,
        help="what every system's pipeline step reads, repeatable (default: all of them):"
        " path (the message's path and the memories written on it), arrival (the last"
        " arrivals and every memory), ungated (the path and every memory)",
    )
    p_run.add_argument("--scenarios", type=Path, help="scenario root (default: packaged)")
    p_run.add_argument("--cache", type=Path, help="LLM cache file (default: OUT/llm_cache.jsonl)")
    p_run.add_argument("--quiet", action="store_true", help="no progress bar")

    p_curve = sub.add_parser(
        "curve",
        help="run a split at several budgets: retain and leak curves",
        description="Run a split at each budget and write curves.json, curves.md and charts.",
    )
    p_curve.add_argument(
        "--split", default="spread", choices=SPLITS + CORPUS_SPLITS, help="split to run"
    )
    p_curve.add_argument("--out", required=True, type=Path, help="results directory")
    p_curve.add_argument(
        "--budgets", type=int, nargs="+", default=list(CURVE_BUDGETS), help="token budgets"
    )
    p_curve.add_argument("--systems", nargs="+", default=[], metavar="NAME", help="systems")
    p_curve.add_argument(
        "--extractor", action="append", choices=EXTRACTORS, default=None, help="repeatable"
    )
    p_curve.add_argument(
        "--pipeline", action="append", choices=PIPELINES, default=None, help="repeatable"
    )
    p_curve.add_argument(
        "--read-policy", action="append", choices=list(READ_POLICIES), default=None,
        help="repeatable",
    )  # fmt: skip
    p_curve.add_argument("--scenarios", type=Path, help="scenario root (default: packaged)")
    p_curve.add_argument("--quiet", action="store_true", help="no progress bar")

    p_cas = sub.add_parser(
        "cascade",
        help="the correction cascade: stale summaries/profiles over cadences, repair on/off",
        description="Run the cascade split over each cadence constant, with and without "
        "each system's repair mechanism; write cascade.json and cascade.md.",
    )
    p_cas.add_argument("--split", default="cascade", choices=SPLITS, help="split to run")
    p_cas.add_argument("--out", required=True, type=Path, help="results directory")
    p_cas.add_argument("--systems", nargs="+", default=[], metavar="NAME", help="systems")
    p_cas.add_argument("--scenarios", type=Path, help="scenario root (default: packaged)")
    p_cas.add_argument(
        "--constant", action="append", choices=["summary_every", "profile_every", "window"],
        default=None, help="cadence constant to sweep (repeatable; default: all three)",
    )  # fmt: skip

    p_val = sub.add_parser(
        "validate",
        help="check that every probe tests what it claims",
        description="Validate scenario splits or files.",
    )
    p_val.add_argument(
        "--split",
        action="append",
        choices=SPLITS + CORPUS_SPLITS,
        help="split to check (repeatable; default: every packaged split)",
    )
    p_val.add_argument("--scenarios", type=Path, help="scenario root (default: packaged)")
    p_val.add_argument("files", nargs="*", type=Path, help="scenario files to check instead")

    p_score = sub.add_parser(
        "score",
        help="recompute every table from saved results",
        description="Recompute summary.md/json/png from a results dir.",
    )
    p_score.add_argument("results", type=Path, help="results directory of a run")
    p_score.add_argument(
        "--reproduce",
        action="store_true",
        help="run the recorded configuration again (model-free runs) and fail unless every"
        " context comes out byte for byte the same",
    )

    p_man = sub.add_parser(
        "manifest",
        help="regenerate the frozen test manifest (maintainers)",
        description="Regenerate (or --check) the test split manifest.",
    )
    p_man.add_argument("--check", action="store_true", help="verify only")
    p_man.add_argument("--scenarios", type=Path, help="scenario root (default: packaged)")

    p_prop = sub.add_parser(
        "propagation-report",
        help="measure how a correction reaches every copy and write the report",
        description="Run the five propagation experiments on a store and write a markdown report.",
    )
    p_prop.add_argument("out_path", type=Path, help="where to write the report")
    p_prop.add_argument("--url", help="store URL (default: a new SQLite file, deleted after)")

    p_ret = sub.add_parser(
        "retrieval",
        help="retrieval recall on the LoCoMo and BEAM corpora, every retriever side by side",
        description=(
            "Rank the raw turns of the public corpora with branchmem search and context, BM25, "
            "RRF and a dense embedder; print LoCoMo evidence Recall@5/@10 and BEAM updated@k, "
            "stale-above-update and contradiction-both, held-out questions first, with "
            "bootstrap intervals, and write retrieval.json and retrieval.md to --out."
        ),
    )
    p_ret.add_argument("--out", required=True, type=Path, help="results directory")
    p_ret.add_argument(
        "--corpora", type=Path, help="corpora folder (default: $BRANCHBENCH_CORPORA or ../shared)"
    )
    p_ret.add_argument(
        "--retrievers",
        nargs="+",
        default=None,
        metavar="NAME",
        help="retrievers to run, in order (default: all but dense-minilm; "
        "known: search, search-hashing, search-paraphrase, search-paraphrase-noroles, "
        "search-wordllama, context, context-paraphrase, bm25-plain, rrf-paraphrase, "
        "rrf-wordllama, bm25s, dense-paraphrase, dense-wordllama, dense-minilm)",
    )
    p_ret.add_argument(
        "--split",
        choices=("all", "tuning", "held-out"),
        default="all",
        help="only the tuning or the held-out conversations (default: all, both reported)",
    )
    p_ret.add_argument("--budget", type=int, default=2000, help="token budget of context()")
    p_ret.add_argument("--conversations", type=int, help="only the first N of each corpus")
    p_ret.add_argument("--questions", type=int, help="only the first N questions of each one")
    return parser


def _print_problems(console: Console, problems: Sequence[Problem]) -> int:
    for problem in problems:
        console.print(f"[red]✗[/red] {escape(str(problem))}", highlight=False, soft_wrap=True)
    return 1 if problems else 0


def cmd_validate(args: argparse.Namespace, console: Console) -> int:
    """Validate files or splits; the file name must match the scenario id."""
    problems: list[Problem] = []
    warnings: list[Problem] = []
    if args.files:
        for path in args.files:
            scenario = load_file(path)
            problems.extend(validate_scenario(scenario))
            warnings.extend(keyword_warnings(scenario))
        checked = f"{len(args.files)} file(s)"
    else:
        splits = args.split or list(SPLITS)
        for split in splits:
            scenarios = load_split(split, args.scenarios)
            problems.extend(validate_split(scenarios, split))
            for scenario in scenarios:
                warnings.extend(keyword_warnings(scenario))
            # a corpus split is generated, not read from files: nothing to name-check
            files = scenarios if split in CORPUS_SPLITS else split_files(split, args.scenarios)
            for path, s in zip(files, scenarios, strict=True):
                if isinstance(path, Path) and path.stem != s.id:
                    problems.append(Problem(s.id, "split", f"file {path.name} holds id {s.id!r}"))
            console.print(
                f"{split}: {len(scenarios)} scenarios, "
                f"{sum(len(s.probes) for s in scenarios)} probes"
            )
        if FROZEN_SPLIT in splits:
            try:
                verify_manifest(args.scenarios)
            except ManifestError as e:
                problems.append(Problem(FROZEN_SPLIT, "manifest", str(e)))
        checked = ", ".join(splits)
    for warning in warnings:
        console.print(f"[yellow]![/yellow] {escape(str(warning))}", highlight=False, soft_wrap=True)
    if warnings:
        console.print(f"{len(warnings)} risky keyword(s): warnings, not failures")
    status = _print_problems(console, problems)
    if not status:
        console.print(f"[green]✓[/green] {checked}: every check passed")
    return status


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    """Run, score, write outputs, print the table."""
    config = RunConfig(
        split=args.split,
        systems=list(args.systems),
        budget=args.budget,
        endpoint=args.endpoint,
        model=args.model,
        runs=args.runs,
        extractors=list(args.extractor or ["oracle", "rules"]),
        limit=args.limit,
        scenarios_root=str(args.scenarios) if args.scenarios else None,
        cache=str(args.cache) if args.cache else None,
        pipelines=list(args.pipeline or PIPELINES),
        read_policies=list(args.read_policy or READ_POLICIES),
    )
    if args.quiet:
        run(config, args.out)
    else:
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console, transient=True) as bar:
            task = bar.add_task(f"branchbench {args.split}", total=progress_steps(config))
            run(config, args.out, progress=lambda _: bar.advance(task))
    return _report(args.out, console)


def _report(results: Path, console: Console) -> int:
    """Tables first; the chart is optional and comes last (it needs the [bench] extra)."""
    summary = summarize(results)
    written = write_outputs(summary, results)
    for table in console_tables(summary):
        print_table(console, table)
    for prompt in summary.get("model", {}).get("prompts", {}):
        print_table(console, model_table(summary, prompt))
    if has_matplotlib():
        written.extend(charts(summary, results))
    else:
        for name in CHART_FILES:  # a chart of an earlier run must not pass for this one's
            (results / name).unlink(missing_ok=True)
        console.print(
            'chart skipped: matplotlib is not installed (pip install "branchmem[bench]")',
            highlight=False,
            soft_wrap=True,
            markup=False,
        )
    console.print(f"wrote {', '.join(str(p) for p in written)}", highlight=False)
    return 0


def _reproduce(results: Path, console: Console) -> int:
    """Exit 1 unless running the recorded configuration again gives the same contexts."""
    same, what = reproduce(results)
    console.print(
        f"{what}: {'identical, reproduced' if same else 'DIFFERENT: not reproduced'}",
        highlight=False,
        markup=False,
    )
    return 0 if same else 1


def cmd_curve(args: argparse.Namespace, console: Console) -> int:
    """Run at every budget, print the curves' tables, then the optional charts."""
    config = RunConfig(
        split=args.split,
        systems=list(args.systems),
        extractors=list(args.extractor or ["oracle", "rules"]),
        scenarios_root=str(args.scenarios) if args.scenarios else None,
        pipelines=list(args.pipeline or PIPELINES),
        read_policies=list(args.read_policy or READ_POLICIES),
    )
    budgets = sorted(set(args.budgets))
    if not budgets or budgets[0] < 1:
        raise BenchError("--budgets must be positive token counts")
    if args.quiet:
        curves = run_curve(config, args.out, budgets)
    else:
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with Progress(*columns, console=console, transient=True) as bar:
            total = progress_steps(config) * len(budgets)
            task = bar.add_task(f"branchbench curve {args.split}", total=total)
            curves = run_curve(config, args.out, budgets, lambda _: bar.advance(task))
    console.print(curves_markdown(curves), highlight=False, markup=False, soft_wrap=True)
    charts = curve_charts(curves, args.out)
    if not charts:
        console.print(
            'charts skipped: matplotlib is not installed (pip install "branchmem[bench]")',
            highlight=False,
            soft_wrap=True,
            markup=False,
        )
    written = [args.out / "curves.json", args.out / "curves.md", *charts]
    console.print(f"wrote {', '.join(str(p) for p in written)}", highlight=False)
    return 0


def cmd_manifest(args: argparse.Namespace, console: Console) -> int:
    """Regenerate or check the manifest."""
    if args.check:
        digest = verify_manifest(args.scenarios)
        console.print(f"[green]✓[/green] test split matches the manifest (sha256 {digest})")
        return 0
    path = write_manifest(args.scenarios)
    console.print(
        f"wrote {path} (sha256 {file_sha256(path)}); `run --split test` accepts it only "
        "once FROZEN_MANIFEST_SHA256 in branchbench/manifest.py says so",
        highlight=False,
    )
    return 0


def cmd_propagation_report(args: argparse.Namespace, console: Console) -> int:
    """The propagation experiments are an experiment harness: they live beside the benchmark."""
    from branchbench.propagation import write_report

    written = write_report(str(args.out_path), url=args.url)
    console.print(f"wrote {written if written is not None else args.out_path}", highlight=False)
    return 0


def cmd_retrieval(args: argparse.Namespace, console: Console) -> int:
    """Every retriever on both corpora: one table, then retrieval.json and retrieval.md."""
    from branchbench.retrieval import (
        DEFAULT_RETRIEVERS,
        load_tasks,
        make_retrievers,
    )
    from branchbench.retrieval_report import (
        run_retrieval,
        write_report,
    )

    for name in ("budget", "conversations", "questions"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise BenchError(f"--{name} must be at least 1, got {value}")
    retrievers = make_retrievers(args.retrievers or DEFAULT_RETRIEVERS, args.budget)
    tasks, skipped = load_tasks(
        args.corpora,
        conversations_limit=args.conversations,
        questions_limit=args.questions,
        split=args.split,
    )
    status = Console(stderr=True)
    report = run_retrieval(
        tasks,
        retrievers,
        skipped=skipped,
        progress=lambda what: status.print(f"running {what}", highlight=False, markup=False),
    )
    console.print(report.main_table(), highlight=False, markup=False, soft_wrap=True)
    for note in report.notes():
        console.print(note, highlight=False, markup=False, soft_wrap=True)
    written = write_report(report, args.out)
    console.print(f"wrote {', '.join(str(p) for p in written)}", highlight=False)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `branchbench` console script."""
    args = _parser().parse_args(argv)
    console = Console()
    try:
        if args.command == "run":
            return cmd_run(args, console)
        if args.command == "curve":
            return cmd_curve(args, console)
        if args.command == "cascade":
            from branchbench.cascade import CADENCES, cascade_charts, cascade_markdown, run_cascade

            config = RunConfig(
                split=args.split,
                systems=list(args.systems),
                extractors=["oracle"],
                scenarios_root=str(args.scenarios) if args.scenarios else None,
            )
            chosen = {c: CADENCES[c] for c in CADENCES if c in (args.constant or CADENCES)}
            result = run_cascade(config, args.out, chosen)
            console.print(cascade_markdown(result), highlight=False, markup=False, soft_wrap=True)
            drawn = cascade_charts(result, args.out)
            if not drawn:
                console.print(
                    'charts skipped: matplotlib is not installed (pip install "branchmem[bench]")'
                )
            for path in drawn:
                console.print(f"wrote {path}", highlight=False)
            return 0
        if args.command == "validate":
            return cmd_validate(args, console)
        if args.command == "score":
            status = _report(args.results, console)
            return _reproduce(args.results, console) if args.reproduce else status
        if args.command == "propagation-report":
            return cmd_propagation_report(args, console)
        if args.command == "retrieval":
            return cmd_retrieval(args, console)
        return cmd_manifest(args, console)
    except BenchError as e:
        Console(stderr=True).print(
            f"[red]branchbench: {escape(str(e))}[/red]", highlight=False, soft_wrap=True
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
