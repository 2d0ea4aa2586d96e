"""The model path against a real OpenAI-compatible HTTP server on loopback.

The fake model is an echo: it answers with everything it was given. Its answers then
leak exactly when the context does, which ties the model scores to the model-free ones.
For extraction requests it returns one fact per message, so the LLM extractor path is
exercised end to end.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from branchbench.cli import main
from branchbench.errors import LLMError
from branchbench.llm import EXTRACT_PROMPT, INPUT_EXTRACT_PROMPT, ChatModel, parse_facts
from branchbench.pipeline import PIPELINES, READ_POLICIES, pipeline_labels
from branchbench.runner import RunConfig, run
from branchbench.scenario import scenarios_root
from branchbench.score import summarize


class FakeModel(BaseHTTPRequestHandler):
    """Chat completions: echo for answers, a JSON fact list for extraction."""

    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
    disable_nagle_algorithm = True  # headers and body go out at once
    calls: list[dict[str, Any]]
    fail: bool
    fail_after: int | None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append(body)
        late = type(self).fail_after is not None and len(type(self).calls) > type(self).fail_after
        if type(self).fail or late or not self.path.endswith("/chat/completions"):
            self._reply(400, {"error": {"message": "bad request", "type": "invalid"}})
            return
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if system == EXTRACT_PROMPT:
            text = user.split(": ", 1)[1]
            key = "m" + hashlib.sha1(text.encode()).hexdigest()[:8]
            content = json.dumps([{"key": key, "value": text, "scope": None}], ensure_ascii=False)
        elif system == INPUT_EXTRACT_PROMPT:  # a pipeline step: one fact per line it read
            lines = [line.split(": ", 1)[-1].removeprefix("- ") for line in user.splitlines()]
            said = [t for t in lines if t and not t.endswith(":")]
            facts = [
                {"key": "m" + hashlib.sha1(t.encode()).hexdigest()[:8], "value": t, "scope": None}
                for t in said
            ]
            content = json.dumps(facts, ensure_ascii=False)
        else:
            content = user
        self._reply(200, {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })  # fmt: skip

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[type[FakeModel]]:
    handler = type("Handler", (FakeModel,), {"calls": [], "fail": False, "fail_after": None})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{server.server_address[1]}/v1"  # type: ignore[attr-defined]
    yield handler
    server.shutdown()
    server.server_close()


def _url(handler: type[FakeModel]) -> str:
    return str(handler.url)  # type: ignore[attr-defined]


SYSTEMS = ["full_history", "branchmem"]


@pytest.fixture
def small_root(tmp_path: Path) -> Path:
    """Three dev scenarios: enough to leak, few enough requests to stay fast."""
    root = tmp_path / "scenarios"
    (root / "dev").mkdir(parents=True)
    for path in sorted((scenarios_root() / "dev").glob("*.json"))[:3]:
        shutil.copy(path, root / "dev" / path.name)
    return root


def test_answers_are_saved_cached_and_rescored_without_the_endpoint(
    endpoint: type[FakeModel], tmp_path: Path, small_root: Path
) -> None:
    out, cache = tmp_path / "run", tmp_path / "cache.jsonl"
    args = ["run", "--split", "dev", "--scenarios", str(small_root), "--systems", *SYSTEMS,
            "--endpoint", _url(endpoint),
            "--model", "echo", "--runs", "2", "--extractor", "oracle", "--quiet",
            "--cache", str(cache)]  # fmt: skip
    assert main([*args, "--out", str(out)]) == 0
    answers = (out / "answers.jsonl").read_text(encoding="utf-8").splitlines()
    contexts = [
        json.loads(line)
        for line in (out / "contexts.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    # the model answers the first pipeline's contexts: two prompts, two runs each
    answered = [c for c in contexts if c["pipeline"] == "one_message"]
    assert answered and len(answered) < len(contexts)
    assert len(answers) == len(answered) * 2 * 2
    assert len(endpoint.calls) == len(answers)
    assert all(c["temperature"] == 0 for c in endpoint.calls)
    prompts = {c["messages"][0]["content"] for c in endpoint.calls}
    assert any("If the information conflicts" in p for p in prompts) and len(prompts) == 2

    assert main([*args, "--out", str(tmp_path / "again")]) == 0
    assert len(endpoint.calls) == len(answers)  # every request answered from the cache

    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    for prompt in ("neutral", "conflict"):
        for name in SYSTEMS:
            model = summary["model"]["prompts"][prompt][name]
            assert model["leak_rate"] == summary["systems"][name]["context_leak_rate"]
    assert summary["model"]["prompts"]["neutral"]["full_history"]["leak_rate"] > 0
    assert summary["model"]["prompts"]["neutral"]["branchmem"]["leak_rate"] == 0
    assert summarize(out) == summary  # recomputed from saved answers alone


def test_llm_extractor_feeds_every_system_the_model_facts(
    endpoint: type[FakeModel], tmp_path: Path, small_root: Path
) -> None:
    config = RunConfig(split="dev", systems=["branchmem"], endpoint=_url(endpoint),
                       model="echo", runs=1, extractors=["llm"],
                       scenarios_root=str(small_root))  # fmt: skip
    out = run(config, tmp_path / "run")
    extraction = [c for c in endpoint.calls if c["messages"][0]["content"] == EXTRACT_PROMPT]
    assert extraction
    # the windowed, consulting, summary and profile pipelines ask the model with the whole
    # input they read (several messages, or memories it is shown)
    inputs = [c for c in endpoint.calls if c["messages"][0]["content"] == INPUT_EXTRACT_PROMPT]
    assert any("Existing memories:" in c["messages"][-1]["content"] for c in inputs)
    assert any(c["messages"][-1]["content"].count("\n") > 2 for c in inputs)
    rows = [json.loads(line) for line in (out / "contexts.jsonl").read_text().splitlines()]
    assert {r["pipeline"] for r in rows} == set(pipeline_labels(PIPELINES, list(READ_POLICIES)))
    assert all(r["memory"] for r in rows)  # the model's facts became visible records
    assert summarize(out)["systems"]["branchmem"]["context_leak_rate"] == 0.0


def test_endpoint_error_is_reported_with_the_endpoint(
    endpoint: type[FakeModel],
    tmp_path: Path,
    small_root: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    endpoint.fail = True
    status = main(["run", "--split", "dev", "--scenarios", str(small_root), "--systems",
                   "branchmem", "--endpoint", _url(endpoint), "--model", "echo", "--out",
                   str(tmp_path / "out"), "--quiet"])  # fmt: skip
    assert status == 2
    assert _url(endpoint) in capsys.readouterr().err


def test_cache_key_depends_on_the_run_index(endpoint: type[FakeModel], tmp_path: Path) -> None:
    chat = ChatModel(_url(endpoint), "echo", tmp_path / "c.jsonl")
    messages = [{"role": "user", "content": "hi"}]
    first, _ = chat.complete(messages, run=0)
    second, _ = chat.complete(messages, run=1)
    again, _ = chat.complete(messages, run=0)
    assert first != second and first == again
    assert len(endpoint.calls) == 2
    endpoint.fail = True
    with pytest.raises(LLMError, match="echo"):
        chat.complete(messages, run=2)


def test_unparsable_extraction_reply_yields_no_facts() -> None:
    assert parse_facts("sorry, no JSON here") == []
    assert parse_facts('[{"key": "city", "value": ""}, {"key": 3, "value": "x"}]') == []
    assert parse_facts('facts: [{"key": "city", "value": "杭州"}]') == [
        {"key": "city", "value": "杭州"}
    ]


def test_cache_key_includes_the_endpoint(endpoint: type[FakeModel], tmp_path: Path) -> None:
    cache = tmp_path / "c.jsonl"
    messages = [{"role": "user", "content": "hi"}]
    first, _ = ChatModel(_url(endpoint), "echo", cache).complete(messages)
    slash = ChatModel(_url(endpoint) + "/", "echo", cache).complete(messages)[0]
    assert slash == first and len(endpoint.calls) == 1  # the same endpoint, cached
    # the same model name behind another base URL is asked, not read from the cache
    other = ChatModel(_url(endpoint).replace("/v1", "/v2"), "echo", cache).complete(messages)[0]
    assert other != first and len(endpoint.calls) == 2


def test_limit_runs_only_the_first_scenarios(
    endpoint: type[FakeModel], tmp_path: Path, small_root: Path
) -> None:
    out = tmp_path / "run"
    assert main(["run", "--split", "dev", "--scenarios", str(small_root), "--systems",
                 "branchmem", "--endpoint", _url(endpoint), "--model", "echo", "--runs", "1",
                 "--extractor", "oracle", "--limit", "1", "--quiet",
                 "--out", str(out)]) == 0  # fmt: skip
    rows = [json.loads(line) for line in (out / "contexts.jsonl").read_text().splitlines()]
    first = sorted(small_root.joinpath("dev").glob("*.json"))[0].stem
    assert {r["scenario"] for r in rows} == {first}
    assert json.loads((out / "run.json").read_text())["limit"] == 1
    answered = [r for r in rows if r["pipeline"] == rows[0]["pipeline"]]
    assert len(endpoint.calls) == len(answered) * 2


def test_endpoint_down_half_way_leaves_no_results(
    endpoint: type[FakeModel], tmp_path: Path, small_root: Path
) -> None:
    out = tmp_path / "run"
    args = ["run", "--split", "dev", "--scenarios", str(small_root), "--systems", "branchmem",
            "--endpoint", _url(endpoint), "--model", "echo", "--runs", "1", "--extractor",
            "oracle", "--quiet", "--out", str(out)]  # fmt: skip
    endpoint.fail_after = 5
    assert main(args) == 2
    assert not any((out / name).exists() for name in ("contexts.jsonl", "answers.jsonl",
                                                        "run.json", "summary.json"))  # fmt: skip
    endpoint.fail_after = None
    assert main(args) == 0  # resumes: the five cached answers are not asked again
    answers = (out / "answers.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(endpoint.calls) == 6 + len(answers) - 5
