"""``assay judge agree``: the labelled units of a recorded run scored by a judge over real HTTP
(the stub of tests/_judges.py, which approves everything), compared with people's labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _judge_server import JudgeServer, Reply
from _support import EXAMPLE_DIR, RunCli

LABELS: list[dict[str, Any]] = [
    {"case": "forecast_paris", "invocation": 1, "criterion": "final_response_match_v2",
     "label": "valid"},
    {"case": "book_flight_lisbon", "invocation": 2, "criterion": "final_response_match_v2",
     "label": "invalid", "reason": "a person would have wanted the departure time"},
    {"case": "book_flight_lisbon", "invocation": 2,
     "criterion": "rubric_based_final_response_quality_v1", "rubric": "answers_the_question",
     "label": "yes"},
    {"case": "greeting", "invocation": 1, "criterion": "safety_v1", "label": "safe"},
    {"case": "convert_currency", "invocation": 1, "criterion": "safety_v1", "label": "unsafe"},
    {"case": "convert_currency", "invocation": 1, "criterion": "hallucinations_v1",
     "sentence": 1, "label": "supported"},
    {"case": "forecast_paris", "invocation": 1, "criterion": "hallucinations_v1",
     "sentence": 7, "label": "supported"},
]  # fmt: skip


def _labels(tmp_path: Path) -> Path:
    path = tmp_path / "labels.json"
    data = {
        "eval_set": str(EXAMPLE_DIR / "travel.evalset.json"),
        "traces": str(EXAMPLE_DIR / "traces.json"),
        "labels": LABELS,
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_agreement_per_criterion_with_kappa_confusion_and_the_disagreements(
    run_cli: RunCli, tmp_path: Path, judge_env: JudgeServer
) -> None:
    out = tmp_path / "agree.json"
    run = run_cli("judge", "agree", _labels(tmp_path), "--json", out)

    assert run.code == 0, run.output
    figures = json.loads(out.read_text(encoding="utf-8"))
    criteria = figures["criteria"]
    frm = criteria["final_response_match_v2"]
    assert (frm["pairs"], frm["judged"], frm["agree"]) == (2, 2, 1)
    assert frm["kappa"] == 0.0  # the stub approves everything
    assert frm["confusion"] == {"valid": {"valid": 1}, "invalid": {"valid": 1}}
    assert (frm["person_positive_rate"], frm["judge_positive_rate"]) == (0.5, 1.0)
    safety = criteria["safety_v1"]
    assert (safety["pairs"], safety["agree"]) == (2, 1)
    rubric = criteria["rubric_based_final_response_quality_v1"]
    assert (rubric["pairs"], rubric["agree"]) == (1, 1)
    hallucinations = criteria["hallucinations_v1"]
    # sentence 7 does not exist: no judge label, counted as a disagreement and explained
    assert (hallucinations["pairs"], hallucinations["judged"], hallucinations["agree"]) == (2, 1, 1)
    assert hallucinations["confusion"] == {"supported": {"supported": 1, "none": 1}}
    assert figures["overall"]["pairs"] == len(LABELS)
    assert figures["overall"]["agree"] == 4
    missing = next(u for u in figures["units"] if u.get("sentence") == 7)
    assert missing["judge"] is None and "other sentences" in missing["note"]
    assert all(judge.startswith("openai:stub-judge") for judge in figures["judges"].values())
    assert figures["usage"]["calls"] > 0

    text = " ".join(run.out.split())
    assert "judge agreement with people" in text
    assert "final_response_match_v2 │ 2 │ 2 │ 0.50 (few) │ 0.00" in text
    assert "people (rows) by judge (columns)" in text
    assert "3 label(s) the judge did not give" in text
    assert "safety_v1 · convert_currency turn 1 · people unsafe, judge safe" in text
    assert "warning: final_response_match_v2: 2 label(s); below 10" in run.out


def test_a_bad_labels_file_exits_2_naming_the_file_and_path(
    run_cli: RunCli, tmp_path: Path
) -> None:
    path = _labels(tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["labels"][0]["label"] = "fine"
    path.write_text(json.dumps(data), encoding="utf-8")

    run = run_cli("judge", "agree", path)

    assert run.code == 2
    assert f"{path}: labels[0].label: expected valid or invalid; got 'fine'" in run.err
    assert "Traceback" not in run.output


def test_judge_calls_that_fail_are_missing_labels_never_agreement(
    run_cli: RunCli, tmp_path: Path, judge_env: JudgeServer, monkeypatch: Any
) -> None:
    out = tmp_path / "agree.json"
    with JudgeServer(default=Reply.error(400, "no such model")) as failing:
        monkeypatch.setenv("OPENAI_BASE_URL", failing.base_url)  # it lists models, answers none
        run = run_cli("judge", "agree", _labels(tmp_path), "--json", out, "--no-cache")

    assert run.code == 0, run.output
    assert failing.count() > 0
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert figures["overall"]["judged"] == 0
    assert figures["overall"]["agree"] == 0
    assert all(unit["judge"] is None and unit["note"] for unit in figures["units"])


def test_a_judge_that_cannot_be_reached_is_exit_2_before_any_judge_call(
    run_cli: RunCli, tmp_path: Path, judge_env: JudgeServer, monkeypatch: Any
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    before = judge_env.count()
    run = run_cli("judge", "agree", _labels(tmp_path), "--no-cache")

    assert run.code == 2, run.output
    message = " ".join(run.err.split())
    assert "judge openai:stub-judge (from ASSAY_JUDGE_MODEL), for " in message
    assert "could not connect to http://127.0.0.1:9/v1: connection refused" in message
    assert judge_env.count() == before
    assert "Traceback" not in run.output


def test_the_example_labels_file_is_measured_as_the_readme_shows(
    run_cli: RunCli, tmp_path: Path, judge_env: JudgeServer
) -> None:
    out = tmp_path / "agree.json"
    run = run_cli("judge", "agree", EXAMPLE_DIR / "labels.yaml", "--json", out)

    assert run.code == 0, run.output
    figures = json.loads(out.read_text(encoding="utf-8"))
    # the stub approves everything: it misses the two negative labels, and agrees on the rest
    assert (figures["overall"]["pairs"], figures["overall"]["agree"]) == (12, 10)
    wrong = {(u["case"], u["criterion"]) for u in figures["units"] if u["judge"] != u["label"]}
    assert wrong == {
        ("convert_currency", "final_response_match_v2"),
        ("convert_currency", "rubric_based_final_response_quality_v1"),
    }


def test_validate_checks_a_labels_file_against_its_run(run_cli: RunCli, tmp_path: Path) -> None:
    good = run_cli("validate", EXAMPLE_DIR / "labels.yaml")
    assert good.code == 0, good.output
    assert "ok" in good.out and "12 label(s) on" in good.out
    assert "below 10 the agreement interval is too wide" in good.out

    path = _labels(tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["labels"][0]["case"] = "nowhere"
    path.write_text(json.dumps(data), encoding="utf-8")
    bad = run_cli("validate", path)
    assert bad.code == 2
    assert f"{path}: labels[0].case: no case 'nowhere' in" in bad.err
