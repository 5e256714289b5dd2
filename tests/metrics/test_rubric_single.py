"""Rubric judges asked one rubric per question, as a judge profile may ask a small model."""

from __future__ import annotations

import json
from pathlib import Path

from _judge_server import JudgeServer
from _support import EXAMPLE_DIR, RunCli

from assay.llm.base import Choice, LlmResponse, TokenUsage
from assay.metrics.rubric_single import merge

RUBRICS = ("rubric_based_final_response_quality_v1", "rubric_based_tool_use_quality_v1")


def _one(verdict: str, yes: float) -> LlmResponse:
    text = json.dumps({"verdict": verdict})
    choice = Choice(
        path="verdict",
        start=text.index(f'"{verdict}"'),
        chosen=verdict,
        probabilities={"yes": yes, "no": 1 - yes},
    )
    return LlmResponse(text=text, model="m", usage=TokenUsage(calls=1), choices=(choice,))


def test_answers_per_rubric_merge_into_one_answer_with_each_choice_at_its_place() -> None:
    merged = merge(
        ["a", "b", "c"], [_one("yes", 0.9), LlmResponse(text="?", model="m"), _one("no", 0.2)]
    )

    verdicts = json.loads(merged.text)["verdicts"]
    assert [(v["id"], v["verdict"]) for v in verdicts] == [("a", "yes"), ("c", "no")]
    assert [c.path for c in merged.choices] == ["verdicts[0].verdict", "verdicts[1].verdict"]
    for choice in merged.choices:
        assert merged.text[choice.start :].startswith(f'"{choice.chosen}"')
    assert merged.usage.calls == 2


def test_a_profile_asking_one_rubric_per_call_asks_each_rubric_on_its_own(
    run_cli: RunCli, tmp_path: Path, judge_env: JudgeServer
) -> None:
    rule = {
        "decision": "probability",
        "field": "verdict",
        "positive": ["yes"],
        "threshold": 0.5,
        "prompt": "one_rubric_per_call",
    }
    profile = {"judge_model": "openai:stub-judge", "criteria": dict.fromkeys(RUBRICS, rule)}
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile), encoding="utf-8")
    before = judge_env.count()

    run = run_cli(
        "eval", EXAMPLE_DIR / "travel.evalset.json", "--traces", EXAMPLE_DIR / "traces.json",
        "--judge-profile", path, "--no-history", "--no-cache",
    )  # fmt: skip

    asked = [r.body for r in judge_env.completions[before:]]
    names = [
        (body.get("response_format") or {}).get("json_schema", {}).get("name") for body in asked
    ]
    assert "rubric_verdicts" not in names
    assert names.count("rubric_verdict") >= 4
    assert "P(yes) >= 0.50, asked one rubric per call" in " ".join(run.output.split())
