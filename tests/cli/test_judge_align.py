"""``assay judge align`` and ``--judge-profile`` over real HTTP: an OpenAI-compatible judge on
127.0.0.1 that returns log-probabilities, a threshold fitted on people's labels and measured by
cross-validation, and the profile changing the verdicts of ``assay eval``."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from _judge_server import JudgeServer, Reply
from _support import RunCli

# The judge's probability that each reply is safe, written into the reply so the stub can read
# it back from the prompt. Unaided it says "safe" from 0.5 up; people call a reply safe from 0.3
# up (they are the ones the stub under-rates), so a threshold near 0.3 agrees with them all.
PROBABILITIES = [0.05, 0.1, 0.15, 0.2, 0.25, 0.32, 0.36, 0.4, 0.45, 0.55, 0.7, 0.9]
PEOPLE_SAFE_FROM = 0.3
_MARK = re.compile(r"\[p=([0-9.]+)\]")


def _tokens(text: str, verdict_at: int, probability: float) -> list[dict[str, Any]]:
    """``text`` as OpenAI logprobs tokens: the verdict's opening quote and word as one token
    (as tokenizers do), with both options among its alternatives."""
    pieces = re.findall(r'"[a-z]+|[^"a-z]+|"|[a-z]+', text)
    tokens = []
    position = 0
    for piece in pieces:
        entry: dict[str, Any] = {"token": piece, "logprob": 0.0, "top_logprobs": []}
        if position == verdict_at:
            entry["top_logprobs"] = [
                {"token": '"safe', "logprob": math.log(probability)},
                {"token": '"unsafe', "logprob": math.log(1 - probability)},
            ]
        tokens.append(entry)
        position += len(piece)
    return tokens


def _judge(body: dict[str, Any]) -> Reply:
    prompt = body["messages"][-1]["content"]
    found = _MARK.search(prompt)
    probability = float(found.group(1)) if found else 0.99
    verdict = "safe" if probability >= 0.5 else "unsafe"
    text = json.dumps({"reasoning": "", "verdict": verdict})
    tokens = _tokens(text, text.index('"' + verdict), probability) if body.get("logprobs") else None
    return Reply(
        body={
            "id": "x",
            "object": "chat.completion",
            "model": "stub",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                    "logprobs": {"content": tokens} if tokens else None,
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }
    )


def _invocation(case: str, reply: str) -> dict[str, Any]:
    return {
        "invocation_id": f"{case}-1",
        "user_content": {"role": "user", "parts": [{"text": "Tell me something."}]},
        "final_response": {"role": "model", "parts": [{"text": reply}]},
    }


def _files(folder: Path, criterion: str = "safety_v1") -> Path:
    cases = {f"c{i:02d}": f"Reply number {i} [p={p}]" for i, p in enumerate(PROBABILITIES)}
    eval_set = {
        "eval_set_id": "replies",
        "eval_cases": [
            {"eval_id": case, "conversation": [_invocation(case, reply)]}
            for case, reply in cases.items()
        ],
    }
    (folder / "replies.evalset.json").write_text(json.dumps(eval_set), encoding="utf-8")
    traces = {case: [_invocation(case, reply)] for case, reply in cases.items()}
    (folder / "traces.json").write_text(json.dumps(traces), encoding="utf-8")
    config: dict[str, Any] = {"criteria": {"safety_v1": {"threshold": 0.5}}}
    positive, negative = "safe", "unsafe"
    if criterion == "final_response_match_v2":
        options = {"num_samples": 5}
        config = {"criteria": {criterion: {"threshold": 0.5, "judge_model_options": options}}}
        positive, negative = "valid", "invalid"
    (folder / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    labels = [
        {
            "case": case,
            "invocation": 1,
            "criterion": criterion,
            "label": positive if p >= PEOPLE_SAFE_FROM else negative,
        }
        for case, p in zip(cases, PROBABILITIES, strict=True)
    ]
    path = folder / "labels.yaml"
    body = {"eval_set": "replies.evalset.json", "traces": "traces.json", "labels": labels}
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def _aligned(run_cli: RunCli, folder: Path) -> tuple[Path, Path]:
    """The labelled files in ``folder``, and a profile aligned on them."""
    labels = _files(folder)
    profile_path = folder / "profile.json"
    assert run_cli("judge", "align", labels, "--out", profile_path).code == 0
    return labels, profile_path


@pytest.fixture
def logprob_judge(monkeypatch: pytest.MonkeyPatch) -> Any:
    with JudgeServer(reply=_judge) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


def test_align_fits_a_threshold_on_logprobs_that_cross_validation_confirms(
    run_cli: RunCli, tmp_path: Path, logprob_judge: JudgeServer
) -> None:
    labels = _files(tmp_path)
    profile_path = tmp_path / "profile.json"
    figures_path = tmp_path / "align.json"

    run = run_cli(
        "judge", "align", labels, "--out", profile_path, "--json", figures_path, "--no-cache"
    )

    assert run.code == 0, run.output
    assert all(r.body["logprobs"] is True for r in logprob_judge.completions)
    profile = json.loads(profile_path.read_text(encoding="utf-8"))
    assert profile["judge_model"] == "openai:stub-judge"
    safety = profile["criteria"]["safety_v1"]
    assert safety["decision"] == "probability"
    assert 0.25 < safety["threshold"] <= PEOPLE_SAFE_FROM + 0.02
    [found] = json.loads(figures_path.read_text(encoding="utf-8"))
    assert found["before"]["agreement"] == pytest.approx(8 / 12)  # 0.32-0.45 called unsafe
    assert found["after"]["agreement"] > found["before"]["agreement"]
    assert "judge alignment" in run.output


def test_eval_with_the_profile_decides_by_its_threshold_and_without_it_as_adk(
    run_cli: RunCli, tmp_path: Path, logprob_judge: JudgeServer
) -> None:
    _, profile_path = _aligned(run_cli, tmp_path)
    evalset = tmp_path / "replies.evalset.json"
    traces = tmp_path / "traces.json"

    plain = tmp_path / "plain.json"
    aligned = tmp_path / "aligned.json"
    run_cli("eval", evalset, "--traces", traces, "--output", plain, "--no-history")
    run = run_cli(
        "eval", evalset, "--traces", traces, "--output", aligned, "--no-history",
        "--judge-profile", profile_path,
    )  # fmt: skip

    assert "judge profile" in run.output
    said = " ".join(run.output.split())
    assert f"safety_v1: verdicts re-decided by the judge profile {profile_path}" in said
    assert '"safe" needs the judge\'s P(safe) >= 0.' in said
    judges = json.loads(aligned.read_text(encoding="utf-8"))["assay"]["judges"]
    assert "aligned" not in judges["safety_v1"]["description"]  # the judge, as before
    assert judges["safety_v1"]["profile"].startswith("verdicts re-decided by the judge profile")
    assert _safe_cases(plain) == {"c09", "c10", "c11"}
    assert _safe_cases(aligned) == {"c05", "c06", "c07", "c08", "c09", "c10", "c11"}


def test_a_verdict_the_profile_decided_otherwise_keeps_the_judges_own_answer_beside_it(
    run_cli: RunCli, tmp_path: Path, logprob_judge: JudgeServer
) -> None:
    _, profile_path = _aligned(run_cli, tmp_path)
    output = tmp_path / "aligned.json"

    history = tmp_path / "history.sqlite"
    run = run_cli(
        "eval", tmp_path / "replies.evalset.json", "--traces", tmp_path / "traces.json",
        "--output", output, "--history-file", history, "--judge-profile", profile_path,
    )  # fmt: skip

    cases = json.loads(output.read_text(encoding="utf-8"))["eval_case_results"]
    notes = {c["eval_id"]: c["assay"]["metrics"]["safety_v1"]["per_invocation"][0] for c in cases}
    [sample] = notes["c05"]["samples"]  # P(safe) 0.32: the judge said unsafe, the rule safe
    assert json.loads(sample["text"])["verdict"] == "unsafe"  # the judge's text, as it wrote it
    assert (sample["verdict"], sample["score"]) == ("unsafe", 0.0)
    assert sample["probability"] == pytest.approx(0.68)
    aligned = sample["aligned"]
    assert (aligned["verdict"], aligned["score"]) == ("safe", 1.0)  # what the metric counted
    assert aligned["choices"] == [
        {"path": "verdict", "judge_said": "unsafe", "probability": pytest.approx(0.68),
         "decided": "safe"}
    ]  # fmt: skip
    assert aligned["rule"].startswith("the judge profile profile.json asks P(safe) >= 0.")
    [untouched] = notes["c11"]["samples"]  # P(safe) 0.9: the judge's own verdict stands
    assert untouched["verdict"] == "safe" and untouched.get("aligned") is None
    shown = run_cli("show", "latest", "--history-file", history)
    for output_text in (run.output, shown.output):  # as the run printed it, and assay show
        said = " ".join(output_text.split())
        assert 'judge said "unsafe" (P(unsafe) 0.68); aligned to "safe": the judge profile' in said


def _safe_cases(results: Path) -> set[str]:
    result = json.loads(results.read_text(encoding="utf-8"))
    return {
        case["eval_id"]
        for case in result["eval_case_results"]
        for metric in case["overall_eval_metric_results"]
        if metric["metric_name"] == "safety_v1" and metric["score"] == 1.0
    }


def test_a_profile_that_is_not_a_profile_is_refused_with_its_path(
    run_cli: RunCli, tmp_path: Path
) -> None:
    labels = _files(tmp_path)
    bad = tmp_path / "profile.json"
    bad.write_text(json.dumps({"judge_model": "x", "criteria": {"safety_v1": {}}}), "utf-8")

    folder = labels.parent
    run = run_cli(
        "eval", folder / "replies.evalset.json", "--traces", folder / "traces.json",
        "--judge-profile", bad,
    )  # fmt: skip

    assert run.code == 2
    assert "profile.json" in run.output
    assert "criteria.safety_v1" in run.output


def test_agree_with_the_profile_measures_the_aligned_judge_on_its_own_card(
    run_cli: RunCli, tmp_path: Path, logprob_judge: JudgeServer
) -> None:
    labels = _files(tmp_path)
    profile_path = tmp_path / "profile.json"
    history = tmp_path / "history.sqlite"
    assert run_cli("judge", "align", labels, "--out", profile_path).code == 0

    plain = tmp_path / "plain.json"
    aligned = tmp_path / "aligned.json"
    run_cli("judge", "agree", labels, "--json", plain, "--history-file", history)
    run_cli(
        "judge", "agree", labels, "--json", aligned, "--history-file", history,
        "--judge-profile", profile_path,
    )  # fmt: skip

    def rate(path: Path) -> float:
        return float(json.loads(path.read_text(encoding="utf-8"))["criteria"]["safety_v1"]["rate"])

    assert rate(plain) == pytest.approx(8 / 12)
    assert rate(aligned) == 1.0
    cards = json.loads(run_cli("judge", "cards", "--json", "--history-file", history).out)
    assert len({card["prompt_version"] for card in cards}) == 2


def _voting_judge(samples: int) -> Any:
    """A judge whose server refuses logprobs and whose samples of one prompt say "valid" in
    about the reply's probability's share of them (the k-th ask of a prompt says valid when
    (k + 0.5) / samples is below it), so a vote share carries what a probability would."""
    import threading
    from collections import Counter

    asked: Counter[str] = Counter()
    lock = threading.Lock()

    def reply(body: dict[str, Any]) -> Reply:
        if body.get("logprobs"):
            return Reply.error(400, "logprobs is not supported by this model")
        prompt = body["messages"][-1]["content"]
        found = _MARK.search(prompt)
        probability = float(found.group(1)) if found else 0.99
        with lock:
            k = asked[prompt] % samples
            asked[prompt] += 1
        verdict = "valid" if (k + 0.5) / samples < probability else "invalid"
        return Reply.ok(json.dumps({"reasoning": "", "is_the_agent_response_valid": verdict}))

    return reply


def test_a_backend_without_logprobs_is_fitted_on_vote_shares_and_says_so(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    labels = _files(tmp_path, "final_response_match_v2")
    profile_path = tmp_path / "profile.json"
    with JudgeServer(reply=_voting_judge(5)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        run = run_cli(
            "judge", "align", labels, "--out", profile_path, "--num-samples", "5", "--no-cache"
        )
        asked = [r.body.get("logprobs") for r in server.completions]

    assert run.code == 0, run.output
    assert asked[0] is True and asked[-1] is None  # refused once, then not offered again
    assert "gave no log-probabilities" in " ".join(run.output.split())
    fitted = json.loads(profile_path.read_text(encoding="utf-8"))["criteria"]
    rule = fitted["final_response_match_v2"]
    assert rule["decision"] == "votes"
    assert 0.2 < rule["threshold"] < 0.4  # people's line lies between 1 and 2 votes of 5


def test_python_and_pytest_routes_take_a_profile_none_or_the_bundled_default(
    run_cli: RunCli, tmp_path: Path, logprob_judge: JudgeServer
) -> None:
    from assay.llm.profile import bundled_profile
    from assay.testing.evaluate import RunSettings

    _, profile_path = _aligned(run_cli, tmp_path)

    given = RunSettings(judge_profile=str(profile_path)).judges().profile
    assert given is not None and given.criteria["safety_v1"].decision == "probability"
    assert RunSettings(judge_profile="none").judges().profile is None
    assert RunSettings().judges().profile == bundled_profile()


def test_exemplars_are_balanced_shown_on_a_second_pass_and_never_for_their_own_case(
    run_cli: RunCli, tmp_path: Path, logprob_judge: JudgeServer
) -> None:
    labels = _files(tmp_path)
    profile_path = tmp_path / "profile.json"

    run = run_cli("judge", "align", labels, "--out", profile_path, "--exemplars", "1", "--no-cache")

    assert run.code == 0, run.output
    rule = json.loads(profile_path.read_text(encoding="utf-8"))["criteria"]["safety_v1"]
    shown = rule["exemplars"]
    assert sorted(e["verdict"] for e in shown) == ["safe", "unsafe"]
    cases = {e["case"] for e in shown}
    assert len(cases) == 2
    assert all("Reply number" in e["input"] for e in shown)  # the judge's own input for the case
    first, second = logprob_judge.completions[:12], logprob_judge.completions[12:]
    assert len(second) == 12
    assert not any("Examples judged by people" in r.messages[0]["content"] for r in first)
    for request in second:
        system, user = request.messages[0]["content"], request.messages[-1]["content"]
        own = next((e for e in shown if e["input"] == user), None)
        assert "Examples judged by people" in system
        if own is not None:  # an exemplar's own case is judged without it
            assert own["input"] not in system
