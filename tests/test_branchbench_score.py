"""Scoring and reporting from synthetic rows: what a rate reads, its intervals and counts,
the pipeline and arrival groupings, edited results, truncated runs, terminal output."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from bench_results import probe_row, write_results
from branchbench.charts import PALETTE
from branchbench.cli import main
from branchbench.errors import BenchError, ResultsError
from branchbench.manifest import code_sha256, scored_files
from branchbench.report import console_tables, markdown
from branchbench.score import context_rates, scenario_bootstrap, summarize, wilson

LONG_NAME = "extract_retrieve_rawfilter_lineage_labels"


row = probe_row


def results(tmp_path: Path, rows: Iterable[dict[str, Any]], **meta: Any) -> Path:
    """A results directory as `branchbench run` writes it, hashes and split included."""
    return write_results(tmp_path, rows, systems=["branchmem", LONG_NAME], **meta)


def test_stale_is_read_from_the_rendered_memory_not_the_self_report() -> None:
    # a system that declares nothing "asserted" while its memory shows the old value
    rows = [row("s", "x", "stale", memory="搬去成都 (earlier)", asserted="")]
    assert context_rates(rows)["context_stale_rate"] == 1.0
    rows = [row("s", "x", "retracted", memory="成都", asserted="")]
    assert context_rates(rows)["context_retracted_rate"] == 1.0


def test_rates_carry_probe_and_scenario_counts() -> None:
    rows = [row("s", f"sc{i % 3}", "leak", memory="杭州", probe=f"p{i}") for i in range(7)]
    rates = context_rates(rows)
    assert rates["n"]["memory_leak_rate"] == 7
    assert rates["scenarios"]["memory_leak_rate"] == 3


def test_bootstrap_resamples_scenarios_and_is_deterministic() -> None:
    # one scenario holds every hit: probes are not independent, so the interval is wider
    cells = [(10, 10)] + [(0, 1)] * 9
    first = scenario_bootstrap(cells)
    assert first == scenario_bootstrap(list(reversed(cells)))  # same cells, same interval
    assert first is not None
    wide, narrow = first, wilson(10, 19)
    assert narrow is not None
    assert wide[0] < narrow[0] and wide[1] > narrow[1]
    assert scenario_bootstrap([]) is None
    assert scenario_bootstrap([(0, 5), (0, 3)]) == [0.0, 0.0]


def pipeline_rows() -> list[dict[str, Any]]:
    out = []
    for i in range(4):
        sc = f"sc{i}"
        arrival = "abandoned_first" if i < 2 else "abandoned_last"
        for system in ("branchmem", LONG_NAME):
            leaks = system == LONG_NAME and arrival == "abandoned_last"
            # rows written before pipelines existed: they count as one_message
            out.append(row(system, sc, "leak", memory="成都" if leaks else "杭州", arrival=arrival))
            out.append(row(system, sc, "leak", memory="成都", pipeline="window", arrival=arrival))
    return out


def test_summary_groups_by_pipeline_and_arrival(tmp_path: Path) -> None:
    summary = summarize(results(tmp_path, pipeline_rows()))
    assert summary["pipelines"] == ["one_message", "window"]
    by_pipeline = summary["by_pipeline"]
    assert summary["systems"] == by_pipeline["one_message"]["oracle"]["systems"]
    assert summary["by_extractor"]["oracle"] == summary["systems"]
    assert by_pipeline["window"]["oracle"]["systems"]["branchmem"]["memory_leak_rate"] == 1.0
    assert summary["systems"]["branchmem"]["memory_leak_rate"] == 0.0
    assert summary["systems"][LONG_NAME]["memory_leak_rate"] == 0.5
    arrival = summary["by_arrival"]
    assert list(arrival) == ["abandoned_first", "abandoned_last"]
    assert arrival["abandoned_last"]["oracle"]["systems"][LONG_NAME]["memory_leak_rate"] == 1.0
    assert arrival["abandoned_first"]["oracle"]["systems"][LONG_NAME]["memory_leak_rate"] == 0.0
    text = markdown(summary)
    assert "## Memory leak by pipeline, extractor `oracle`" in text
    assert "## Memory retain by pipeline, extractor `oracle`" in text
    assert "| system | one_message (n=4/4) | window (n=4/4) |" in text
    assert "## Memory leak by arrival order (pipeline `one_message`)" in text
    assert "abandoned_last (n=2/2)" in text


def test_no_arrival_grouping_without_arrival_orders(tmp_path: Path) -> None:
    rows = [r for r in pipeline_rows() if "pipeline" not in r]
    for r in rows:
        r.pop("arrival")
    summary = summarize(results(tmp_path, rows))
    assert "by_arrival" not in summary and "by arrival order" not in markdown(summary)


def test_score_refuses_a_contexts_file_edited_after_the_run(tmp_path: Path) -> None:
    out = results(tmp_path, pipeline_rows())
    path = out / "contexts.jsonl"
    path.write_text(path.read_text(encoding="utf-8").replace("成都", "杭州"), encoding="utf-8")
    with pytest.raises(ResultsError, match=r"contexts\.jsonl was edited after the run"):
        summarize(out)


def test_score_refuses_an_answers_file_added_after_the_run(tmp_path: Path) -> None:
    out = results(tmp_path, pipeline_rows())
    (out / "answers.jsonl").write_text("{}\n", encoding="utf-8")
    with pytest.raises(ResultsError, match=r"answers\.jsonl was added"):
        summarize(out)


def test_cli_score_names_the_edited_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = results(tmp_path, pipeline_rows())
    with (out / "contexts.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(row("branchmem", "sc9", "leak", memory="杭州")) + "\n")
    assert main(["score", str(out)]) == 2
    assert "contexts.jsonl" in capsys.readouterr().err


def test_a_run_without_recorded_hashes_is_scored_and_says_so(tmp_path: Path) -> None:
    out = results(tmp_path, pipeline_rows(), files=None)
    summary = summarize(out)
    assert summary["files_verified"] is False
    assert "recorded no file hashes" in markdown(summary)


def test_truncated_run_is_labelled_everywhere(tmp_path: Path) -> None:
    out = results(tmp_path, pipeline_rows(), limit=2, truncated=True, scenarios_in_split=10)
    summary = summarize(out)
    assert summary["truncated"] is True
    assert "TRUNCATED: --limit 2 ran 4 of 10 scenarios" in markdown(summary)
    assert all("TRUNCATED" in str(t.title) for t in console_tables(summary))


def test_limit_run_records_truncation_and_file_hashes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "limited"
    args = ["run", "--split", "dev", "--limit", "1", "--systems", "branchmem", "--quiet"]
    assert main([*args, "--extractor", "oracle", "--out", str(out)]) == 0
    meta = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert meta["truncated"] is True and meta["scenarios"] == 1 < meta["scenarios_in_split"]
    digest = hashlib.sha256((out / "contexts.jsonl").read_bytes()).hexdigest()
    assert meta["files"] == {"contexts.jsonl": digest}
    assert "TRUNCATED" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["truncated"] and summary["files_verified"]
    assert "(truncated)" in (out / "summary.md").read_text(encoding="utf-8")


def test_piped_tables_print_full_system_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = results(tmp_path, pipeline_rows())
    assert main(["score", str(out)]) == 0
    printed = capsys.readouterr().out  # captured: not a terminal, like `| cat`
    table_lines = [line for line in printed.splitlines() if line.startswith("│")]
    assert any(LONG_NAME in line for line in table_lines)
    assert not any("…" in line for line in table_lines)


def test_code_hash_covers_every_module_that_decides_a_number() -> None:
    names = {p.name for p in scored_files()}
    assert {"validate.py", "runner.py", "report.py", "score.py", "keywords.py"} <= names
    assert "cli.py" not in names
    assert len(code_sha256()) == 64


def test_chart_palette_is_qualitative() -> None:
    assert len(set(PALETTE)) == len(PALETTE) >= 12


def test_a_limit_above_the_split_size_does_not_truncate() -> None:
    from branchbench.manifest import results_record
    from branchbench.scenario import load_split

    size = len(load_split("dev"))
    assert results_record({}, size, "dev", limit=size + 5)["truncated"] is False
    assert results_record({}, size - 1, "dev", limit=size - 1)["truncated"] is True
    assert results_record({}, size, "dev")["truncated"] is False


def test_without_matplotlib_no_chart_of_an_earlier_scoring_survives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    out = results(tmp_path, pipeline_rows())
    for name in ("leak_by_operation.png", "measured_by_pipeline.png"):
        (out / name).write_bytes(b"old chart")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    assert main(["score", str(out)]) == 0
    assert not (out / "leak_by_operation.png").exists()
    assert not (out / "measured_by_pipeline.png").exists()


def test_a_declared_memory_that_is_empty_is_measured_not_na() -> None:
    # label_based on one arrival order: its memory section held nothing at any probe
    empty = [row("label_based", f"s{i}", "retain", has_memory=True) for i in range(3)]
    rates = context_rates(empty)
    assert rates["has_memory"] and rates["memory_retain_rate"] == 0.0
    raw = [row("raw_current_branch", f"s{i}", "retain", has_memory=False) for i in range(3)]
    assert context_rates(raw)["memory_retain_rate"] is None


def test_keywords_edited_in_the_results_are_refused_even_with_a_fresh_hash(
    tmp_path: Path,
) -> None:
    """The forger's path: change what a probe forbids in contexts.jsonl and write the new
    SHA-256 into run.json. The hashes agree; the split does not."""
    out = results(tmp_path, pipeline_rows())
    rows = [json.loads(line) for line in (out / "contexts.jsonl").read_text().splitlines()]
    rows[0]["forbidden"] = ["重庆"]  # a value this system's memory does not show: 0% leak
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    (out / "contexts.jsonl").write_text(text, encoding="utf-8")
    meta = json.loads((out / "run.json").read_text())
    meta["files"]["contexts.jsonl"] = hashlib.sha256(text.encode()).hexdigest()
    (out / "run.json").write_text(json.dumps(meta))
    with pytest.raises(ResultsError, match=r"sc0/p1: the results' 'forbidden' is not the split's"):
        summarize(out)


def test_a_row_whose_probe_the_split_lacks_is_refused(tmp_path: Path) -> None:
    out = results(tmp_path, pipeline_rows())
    (out / "scenarios" / "dev" / "sc3.json").unlink()
    with pytest.raises(ResultsError, match="split 'dev' has no probe sc3/p1"):
        summarize(out)


def test_the_frozen_split_is_scored_from_its_manifest(tmp_path: Path) -> None:
    """A run of the test split is scored from the split; a run.json that names another copy
    of the frozen split is refused unless that copy matches the pinned manifest (here it
    does not exist), so edited keywords cannot come in through a copy of the split."""
    out = tmp_path / "t"
    assert main(["run", "--split", "test", "--out", str(out), "--quiet", "--limit", "1",
                 "--systems", "branchmem", "--pipeline", "one_message",
                 "--extractor", "oracle"]) == 0  # fmt: skip
    assert summarize(out)["probes"] > 0
    meta = json.loads((out / "run.json").read_text())
    meta["scenarios_root"] = str(tmp_path / "elsewhere")  # an edited copy of the split
    (out / "run.json").write_text(json.dumps(meta))
    with pytest.raises(BenchError, match="cannot score: the split 'test'"):
        summarize(out)


def test_a_forged_context_with_a_fresh_hash_is_caught_by_running_it_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The audit's forgery: Mem0's leak rewritten to 0% in contexts.jsonl, its SHA-256
    written into run.json. ``score`` accepts the files (they agree with each other);
    ``score --reproduce`` runs the recorded configuration again and refuses them."""
    from branchbench.systems import registry

    systems = ["branchmem", *(["mem0"] if "mem0" in registry() else ["extract_retrieve"])]
    out = tmp_path / "r"
    assert main(["run", "--split", "dev", "--out", str(out), "--quiet", "--limit", "2",
                 "--pipeline", "one_message", "--extractor", "oracle",
                 "--systems", *systems]) == 0  # fmt: skip
    assert main(["score", str(out), "--reproduce"]) == 0
    assert "identical, reproduced" in capsys.readouterr().out
    rows = [json.loads(line) for line in (out / "contexts.jsonl").read_text().splitlines()]
    forged = 0
    for r in rows:
        if r["system"] == systems[1] and r["type"] == "leak":
            for word in r["forbidden"]:
                for field in ("memory", "context", "transcript"):
                    forged += word in r[field]
                    r[field] = r[field].replace(word, "")
    assert forged  # there was a leak to hide
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    (out / "contexts.jsonl").write_text(text, encoding="utf-8")
    meta = json.loads((out / "run.json").read_text())
    meta["files"]["contexts.jsonl"] = hashlib.sha256(text.encode()).hexdigest()
    (out / "run.json").write_text(json.dumps(meta))
    assert main(["score", str(out)]) == 0  # the files agree with each other
    assert main(["score", str(out), "--reproduce"]) == 1
    assert "DIFFERENT: not reproduced" in capsys.readouterr().out


def test_retain_beyond_window_leaves_out_answers_the_recent_turns_hold() -> None:
    """Beyond the window, an answer still in the transcript kept (the recent turns) is
    retained by construction; only one the transcript lost measures the memory."""
    recent = row("s", "a", "retain", memory="", transcript="搬去杭州", context="搬去杭州",
                 path_in_transcript=False)  # fmt: skip
    remembered = row("s", "b", "retain", memory="杭州", transcript="别的", context="杭州 别的",
                     path_in_transcript=False)  # fmt: skip
    forgotten = row("s", "c", "retain", memory="", transcript="别的", context="别的",
                    path_in_transcript=False)  # fmt: skip
    rates = context_rates([recent, remembered, forgotten])
    assert rates["retain_beyond_window_rate"] == 0.5  # b of b and c; a is structural
    assert context_rates([recent])["retain_beyond_window_rate"] is None


def test_the_bootstrap_resamples_forks_when_probes_name_one() -> None:
    from branchbench.score import context_rates

    def row(n: int, unit: str) -> dict[str, object]:
        text = "Porto" if n % 2 else "Galway"  # every other fork leaks its sibling's value
        return {
            "scenario": "one-conversation", "unit": unit, "type": "leak", "answer": ["Galway"],
            "forbidden": ["Porto"], "memory": text, "context": text, "transcript": "",
            "tokens": 1, "has_memory": True,
        }  # fmt: skip

    by_fork = context_rates([row(n, f"one-conversation/f{n}") for n in range(8)])
    assert by_fork["units"]["memory_leak_rate"] == 8
    lo, hi = by_fork["bootstrap"]["memory_leak_rate"]
    assert lo < 0.5 < hi  # forks vary, so the interval has width
    one_unit = context_rates([row(n, "") for n in range(8)])
    assert one_unit["units"]["memory_leak_rate"] == 1  # the scenario alone: a point
    assert one_unit["bootstrap"]["memory_leak_rate"] == [0.5, 0.5]
