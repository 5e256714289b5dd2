"""The judge benchmarks run: the agreement script scores labelled items with a scripted judge and
reports the agreement it should, and the throughput script times assay (and ADK) on a stub."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _support import BENCHMARKS, load_script


@pytest.fixture(scope="module")
def agreement() -> ModuleType:
    return load_script("judge_agreement_run", BENCHMARKS / "judge_agreement" / "run.py")


@pytest.fixture(scope="module")
def throughput() -> ModuleType:
    return load_script("bench_judge_throughput", BENCHMARKS / "bench_judge_throughput.py")


# --------------------------------------------------------------------------- the labelled items


def test_items_cover_every_criterion_with_balanced_labels(agreement: ModuleType) -> None:
    data = agreement.load_items()
    total = 0
    for name, criterion in agreement.CRITERIA.items():
        items = data.items(name)
        total += len(items)
        assert len(items) >= 12, name
        if criterion.rubric:
            labels = [r.verdict for item in items for r in item.rubrics]
            assert all(1 <= len(item.rubrics) <= 3 for item in items), name
        else:
            labels = [item.label == criterion.positive for item in items]
        share = sum(labels) / len(labels)
        assert 0.4 <= share <= 0.6, f"{name}: {share:.2f} positive"
    assert total >= 60


def test_every_item_becomes_a_case_the_metrics_accept(agreement: ModuleType) -> None:
    data = agreement.load_items()
    for name in agreement.CRITERIA:
        for item in data.items(name):
            actual, expected, case = agreement.to_case(item)
            assert actual.user_content.parts[0].text == item.prompt
            assert len(actual.tool_calls()) == len(actual.tool_responses()) == len(item.tool_calls)
            assert (expected is not None) == (name == agreement.V2)
            assert case.eval_id == item.id


def test_undeclared_tools_are_declared_from_their_calls(agreement: ModuleType) -> None:
    item = agreement.Item(
        id="x",
        prompt="weather?",
        answer="Sunny.",
        label="grounded",
        tool_calls=[{"name": "get_weather", "args": {"city": "Oslo", "days": 2}, "response": 1}],
    )
    actual, _, _ = agreement.to_case(item)
    (agent,) = actual.app_details.agent_details.values()
    (declaration,) = agent.tool_declarations[0]["function_declarations"]
    assert declaration["name"] == "get_weather"
    assert declaration["parameters"]["properties"] == {
        "city": {"type": "STRING"},
        "days": {"type": "INTEGER"},
    }
    assert actual.tool_responses()[0].response == {"result": 1}


def test_an_item_missing_its_label_is_rejected(agreement: ModuleType, tmp_path: Path) -> None:
    bad = tmp_path / "items.yaml"
    bad.write_text("safety_v1:\n  - {id: s1, prompt: hi, answer: hello}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="label must be safe or unsafe"):
        agreement.load_items(bad)
    assert agreement.main(["--items", str(bad), "--judge-model", "scripted:x"]) == 2


def test_each_row_carries_kappas_interval_and_both_positive_rates(agreement: ModuleType) -> None:
    verdicts = [
        agreement.Verdict("safety_v1", f"i{n}", f"i{n}", human=human, judge=judge)
        for n, (human, judge) in enumerate(
            [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10 + [(False, False)] * 15
        )
    ]
    row = agreement.make_row("safety_v1", 50, verdicts, 1.0, agreement.TokenUsage())
    assert row.kappa == pytest.approx(0.4)  # kappa itself: tests/agreement/test_stats.py
    assert row.kappa_interval is not None and row.kappa_interval[0] < 0.4 < row.kappa_interval[1]
    assert (row.human_yes, row.judge_yes) == (pytest.approx(0.5), pytest.approx(0.6))
    assert json.loads(json.dumps(row.as_json()))["kappa_interval"] == list(row.kappa_interval)


# --------------------------------------------------------------------------- a scripted run

_ITEMS = """
final_response_match_v2:
  - {id: t-frm-1, prompt: PELICAN count, answer: Three., reference: "3", label: valid}
  - {id: t-frm-2, prompt: OSPREY count, answer: Four., reference: "7", label: invalid}
rubric_based_final_response_quality_v1:
  - id: t-rfq-1
    prompt: HERON colour?
    answer: Grey.
    rubrics: [{text: Names a colour., verdict: yes}, {text: Is in French., verdict: no}]
rubric_based_tool_use_quality_v1:
  - id: t-rtu-1
    prompt: EGRET weather?
    tool_calls: [{name: get_weather, args: {city: Oslo}, response: {temp: 4}}]
    rubrics: [{text: Calls get_weather for Bergen., verdict: no}]
  - id: t-rtu-2
    prompt: IBIS weather?
    rubrics: [{text: Calls no tool., verdict: yes}]
hallucinations_v1:
  - id: t-hal-1
    prompt: CRANE temperature?
    tool_calls: [{name: get_temp, args: {}, response: {celsius: 5}}]
    answer: CRANE reads 5 degrees.
    label: grounded
  - id: t-hal-2
    prompt: STORK temperature?
    tool_calls: [{name: get_temp, args: {}, response: {celsius: 5}}]
    answer: STORK reads 9 degrees.
    label: ungrounded
safety_v1:
  - {id: t-saf-1, prompt: KESTREL question, answer: A safe answer., label: safe}
  - {id: t-saf-2, prompt: FALCON question, answer: An unsafe answer., label: unsafe}
"""


def _sentences(sentence: str, label: str) -> dict[str, Any]:
    entry = {
        "sentence": sentence,
        "label": label,
        "rationale": "scripted",
        "supporting_excerpt": None,
        "contradicting_excerpt": None,
    }
    return {"sentences": [entry]}


def _rule(match: str, reply: Any) -> dict[str, Any]:
    return {"match": match, "reply": reply}


_V2_VALID = {"reasoning": "scripted", "is_the_agent_response_valid": "valid"}
_RULES = [
    _rule("PELICAN", _V2_VALID),  # agrees
    _rule("OSPREY", _V2_VALID),  # disagrees
    _rule("HERON", {"verdicts": [{"id": "r1", "verdict": "yes"}, {"id": "r2", "verdict": "no"}]}),
    _rule("EGRET", {"verdicts": [{"id": "r1", "verdict": "yes"}]}),  # disagrees
    _rule("IBIS", "I would rather not say."),  # no verdict: not judged
    _rule("<context>[\\s\\S]*CRANE", _sentences("CRANE reads 5 degrees.", "supported")),
    _rule("CRANE", {"sentences": ["CRANE reads 5 degrees."]}),
    _rule("<context>[\\s\\S]*STORK", _sentences("STORK reads 9 degrees.", "contradictory")),
    _rule("STORK", {"sentences": ["STORK reads 9 degrees."]}),
    _rule("KESTREL", {"verdict": "safe"}),
    _rule("FALCON", {"verdict": "unsafe"}),
]


def _scripted_run(agreement: ModuleType, tmp_path: Path, *extra: str) -> tuple[int, Any, str]:
    items = tmp_path / "items.yaml"
    items.write_text(_ITEMS, encoding="utf-8")
    script = tmp_path / "judge.json"
    script.write_text(json.dumps({"rules": _RULES}), encoding="utf-8")
    out = tmp_path / "out.json"
    argv = ["--items", str(items), "--judge-model", f"scripted:{script}", "--json", str(out)]
    code = agreement.main([*argv, "--no-cache", *extra])
    return code, json.loads(out.read_text(encoding="utf-8")), str(script)


def test_agreement_run_reports_what_the_scripted_judge_said(
    agreement: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, script = _scripted_run(agreement, tmp_path)
    assert code == 0
    assert report["judge_model"] == f"scripted:{script}"
    rows = {row["criterion"]: row for row in report["criteria"]}
    figures = {
        name: (r["items"], r["verdicts"], r["judged"], r["agree"]) for name, r in rows.items()
    }
    assert figures == {
        "final_response_match_v2": (2, 2, 2, 1),
        "rubric_based_final_response_quality_v1": (1, 2, 2, 2),
        "rubric_based_tool_use_quality_v1": (2, 2, 1, 0),
        "hallucinations_v1": (2, 2, 2, 2),
        "safety_v1": (2, 2, 2, 2),
    }
    v2 = rows["final_response_match_v2"]
    assert (v2["accuracy_judged"], v2["kappa"]) == (0.5, 0.0)
    assert rows["safety_v1"]["kappa"] == 1.0
    tools = rows["rubric_based_tool_use_quality_v1"]
    assert (tools["accuracy_judged"], tools["accuracy_all"]) == (0.0, 0.0)
    overall = report["overall"]
    assert (overall["verdicts"], overall["judged"], overall["agree"]) == (10, 9, 7)
    assert overall["accuracy_all"] == pytest.approx(0.7)
    assert overall["accuracy_judged"] == pytest.approx(7 / 9)
    assert overall["total_tokens"] > 0 and overall["usage"]["calls"] == 11
    for row in report["criteria"]:  # the wall time of a criterion, shared out over its items
        assert row["seconds"] > 0
        assert row["seconds_per_item"] == pytest.approx(row["seconds"] / row["items"])

    out = capsys.readouterr().out
    assert "3 verdicts differ from the human label" in out
    assert "t-frm-2" in out and "human invalid" in out and "judge valid" in out
    assert "t-rtu-2/r1" in out and "not judged" in out
    assert "overall" in out


def test_agreement_run_filters_criteria_and_limits_items(
    agreement: ModuleType, tmp_path: Path
) -> None:
    code, report, _ = _scripted_run(
        agreement, tmp_path, "--criteria", "safety_v1,final_response_match_v2", "--limit", "1"
    )
    assert code == 0
    assert [(r["criterion"], r["items"]) for r in report["criteria"]] == [
        ("safety_v1", 1),
        ("final_response_match_v2", 1),
    ]
    assert [v["item"] for v in report["verdicts"]] == ["t-saf-1", "t-frm-1"]


def test_a_judge_that_cannot_be_made_leaves_every_verdict_unjudged(
    agreement: ModuleType, tmp_path: Path
) -> None:
    items = tmp_path / "items.yaml"
    items.write_text(_ITEMS, encoding="utf-8")
    out = tmp_path / "out.json"
    missing = tmp_path / "no-such-script.json"
    argv = ["--items", str(items), "--judge-model", f"scripted:{missing}", "--no-cache"]
    assert agreement.main([*argv, "--json", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["overall"]["judged"] == 0
    assert report["overall"]["accuracy_all"] == 0.0
    assert all(v["judge"] is None and v["reason"] for v in report["verdicts"])


# --------------------------------------------------------------------------- throughput


def test_throughput_is_bounded_by_the_ideal_and_counts_every_call(
    throughput: ModuleType,
) -> None:
    report = throughput.run(invocations=12, samples=3, latency_ms=40, concurrency=4, adk=False)
    assert report.ok, report.mismatches
    assert report.calls == report.assay.calls == 36
    assert 2 <= report.assay.max_in_flight <= 4  # calls overlap, within the limit
    assert report.ideal_s == pytest.approx(36 * 0.04 / 4)
    # no call is faster than the stub's latency, so the wall time cannot beat the ideal (how
    # close it comes is measured by the benchmark itself, not here: a slow machine is slower)
    assert report.ideal_s * 0.95 <= report.assay.wall_s
    assert len(report.assay.scores) == 12
    assert set(report.assay.scores) <= {0.0, 1.0}


def test_throughput_votes_like_the_stub_scripted_them(throughput: ModuleType) -> None:
    pairs = throughput.generate(50, 5, seed=3)
    assert pairs == throughput.generate(50, 5, seed=3)
    assert {p.valid_samples for p in pairs} == set(range(6))
    report = throughput.run(invocations=50, samples=5, latency_ms=0, concurrency=8, adk=False)
    majority = [1.0 if 2 * p.valid_samples > 5 else 0.0 for p in throughput.generate(50, 5, 0)]
    assert report.assay.scores == majority


def test_throughput_agrees_with_adk_on_the_same_stub(
    throughput: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--invocations", "6", "--samples", "3", "--latency-ms", "10", "--concurrency", "4"]
    assert throughput.main(argv) == 0
    out = capsys.readouterr().out
    assert "6 invocations x 3 samples = 18 judge calls per side" in out
    assert "agreement: all 6 per-invocation scores agree with ADK" in out
    assert "assay/ADK:" in out
    assert "not timed" not in out
