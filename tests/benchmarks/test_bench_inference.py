"""The inference benchmark runs: both sides record the same conversations on a tiny data set, and
the report gives both sides' times, the ratio and the checks."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from _support import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_inference.py"
TINY = ["--cases", "3", "--turns", "2", "--repeats", "1", "--adk-driver", "generator"]


def _load() -> ModuleType:
    return load_script("bench_inference", SCRIPT)


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _load()


def test_the_data_mixes_tools_a_plain_answer_and_a_transfer(bench: ModuleType) -> None:
    data = bench.generate(4, 3)
    assert data == bench.generate(4, 3)
    texts = [t["user_content"]["parts"][0]["text"] for case in data for t in case["conversation"]]
    assert len(texts) == 12
    for asked in ("weather in", "euros in dollars", "Thanks", "Book a hotel in"):
        assert any(asked in text for text in texts), asked
    # only an even case's last turn books: the sub-agent then keeps the conversation
    assert [i for i, text in enumerate(texts) if text.startswith("Book")] == [2, 8]


def test_a_tiny_run_reports_both_sides_with_the_same_recordings(
    bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench.main([*TINY, "--latency-ms", "5", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["mismatches"] == []
    assert report["parallelism"] == 4 and report["assay_default_concurrency"] == 4
    assert "_generate_inferences_from_root_agent" in report["adk_function"]
    assert [stage["latency_ms"] for stage in report["stages"]] == [5, 0]
    for stage in report["stages"]:
        adk, assay = stage["sides"]
        assert adk["name"].startswith("ADK") and assay["name"] == "assay"
        for side in (adk, assay):
            assert side["invocations"] == 6
            assert side["wall_s"] > 0 and side["cases_per_s"] > 0 and side["ms_per_turn"] > 0
            assert (side["tool_calls"], side["model_calls"]) == (
                adk["tool_calls"],
                adk["model_calls"],
            )
        # weather, booking | currency, thanks | thanks, booking: a booking is a transfer and a
        # tool call over three model calls
        assert (adk["tool_calls"], adk["model_calls"]) == (1 + 2 + 1 + 0 + 0 + 2, 12)
        assert assay["ratio_to_adk"] == pytest.approx(assay["wall_s"] / adk["wall_s"])
    slow = report["stages"][0]
    assert slow["ideal_s"] == pytest.approx(12 * 0.005 / 4)
    # nothing beats the model's latency: every run takes at least the ideal
    assert all(side["wall_s"] >= slow["ideal_s"] for side in slow["sides"])


def test_the_table_names_what_ran_and_gives_the_ratio(bench: ModuleType) -> None:
    report = bench.run(cases=2, turns=1, latency_ms=0, repeats=1, adk_driver="generator")
    lines = bench.table(report)
    assert lines[0].startswith("2 cases x 1 turns; ADK: EvaluationGenerator.")
    assert "load average" in lines[0]
    rows = [line for line in lines if " ms " in line]
    assert len(rows) == 2  # no latency given: one stage, ADK and assay
    assert "ADK (generator)" in rows[0] and "assay" in rows[1]
    assert "/ADK" in lines[1]
    assert lines[-1].startswith("agreement: every run recorded the same")


def test_a_run_that_records_something_else_is_a_disagreement(bench: ModuleType) -> None:
    summary = bench.CaseSummary(1, (("get_weather",),), ("It is 21 degrees in Paris.",))
    adk = bench.Run(1.0, 1.0, {"c": summary}, [], 2, 1)
    other = bench.CaseSummary(1, ((),), ("You are welcome.",))
    ours = bench.Run(1.0, 1.0, {"c": other}, ["c: the agent raised"], 1, 1)
    report = bench.Report(1, 1, 0.0, 4, 1, "generator")
    report.stages.append(bench.Stage(0.0, []))
    bench._check(report, bench.Side("assay", 4), ours, adk)
    assert not report.ok
    assert any("the agent raised" in line for line in report.mismatches)
    assert any("0 tool calls and 1 model calls, ADK 1 and 2" in line for line in report.mismatches)
    assert any("1 cases differ from ADK's, first c" in line for line in report.mismatches)
    report.mismatches.clear()
    bench._check(report, bench.Side("assay", 4), adk, adk)
    assert report.ok


def test_bad_sizes_are_refused_with_a_message(
    bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        bench.main(["--cases", "0"])
    assert exited.value.code == 2
    assert "--cases, --turns and --repeats must be >= 1" in capsys.readouterr().err
