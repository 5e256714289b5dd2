"""People's labels on a recorded run: the file format, and every bad reference reported at once
with the file and the JSON path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _support import EXAMPLE_DIR

from assay.agreement.labels import LABEL_SETS, load_labels
from assay.errors import InputError, LabelsError

EVALSET = EXAMPLE_DIR / "travel.evalset.json"
TRACES = EXAMPLE_DIR / "traces.json"
REGRESSED = EXAMPLE_DIR / "traces_regressed.json"


def _write(tmp_path: Path, labels: list[dict[str, Any]], **top: Any) -> Path:
    path = tmp_path / "labels.json"
    data = {"eval_set": str(EVALSET), "traces": str(TRACES), "labels": labels, **top}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


GOOD = [
    {"case": "forecast_paris", "invocation": 1, "criterion": "final_response_match_v2",
     "label": "valid", "reason": "tomorrow's forecast, as asked"},
    {"case": "book_flight_lisbon", "invocation": "e-book-2",
     "criterion": "rubric_based_final_response_quality_v1", "rubric": "answers_the_question",
     "label": "yes"},
    {"case": "book_flight_lisbon", "invocation": 2, "criterion": "rubric_based_tool_use_quality_v1",
     "rubric": "tool_args_from_request", "label": "no"},
    {"case": "convert_currency", "invocation": 1, "criterion": "hallucinations_v1",
     "sentence": 1, "label": "supported"},
    {"case": "greeting", "invocation": 1, "criterion": "safety_v1", "label": "safe"},
    {"case": "book_cheapest_and_convert", "invocation": 2,
     "criterion": "per_turn_user_simulator_quality_v1", "label": "yes"},
]  # fmt: skip


def test_a_labels_file_on_a_recorded_run_loads_with_every_reference_checked(
    tmp_path: Path,
) -> None:
    invocation_ids = [
        inv["invocation_id"] for inv in json.loads(TRACES.read_text())["book_flight_lisbon"]
    ]
    assert "e-book-2" in invocation_ids  # the id the second label names

    run = load_labels(_write(tmp_path, GOOD))

    assert [label.criterion for label in run.labels] == [label["criterion"] for label in GOOD]
    assert run.loaded.eval_set.eval_set_id == "travel_assistant"
    assert len(run.invocations("book_flight_lisbon")) == 2
    assert len(run.warnings) == 6  # one label per criterion: far below ten
    assert all("too wide to mean much" in warning for warning in run.warnings)


def test_yaml_and_paths_relative_to_the_labels_file(tmp_path: Path) -> None:
    for source in (EVALSET, TRACES, EXAMPLE_DIR / "test_config.json"):
        shutil.copy(source, tmp_path / source.name)
    path = tmp_path / "labels.yaml"
    path.write_text(
        "eval_set: travel.evalset.json\ntraces: traces.json\nlabels:\n"
        "  - {case: greeting, invocation: 1, criterion: safety_v1, label: unsafe}\n",
        encoding="utf-8",
    )
    run = load_labels(path)
    assert run.labels[0].label == "unsafe"


def test_every_bad_reference_is_reported_at_once_at_its_path(tmp_path: Path) -> None:
    bad = [
        {"case": "nowhere", "invocation": 1, "criterion": "safety_v1", "label": "safe"},
        {"case": "forecast_paris", "invocation": 3, "criterion": "safety_v1", "label": "safe"},
        {"case": "forecast_paris", "invocation": "no-such-id", "criterion": "safety_v1",
         "label": "safe"},
        {"case": "convert_currency", "invocation": 1, "criterion": "safety_v1",
         "label": "harmless"},
        {"case": "greeting", "invocation": 1, "criterion": "rubric_based_final_response_quality_v1",
         "label": "yes"},
        {"case": "greeting", "invocation": 1, "criterion": "rubric_based_final_response_quality_v1",
         "rubric": "is_polite", "label": "yes"},
        {"case": "greeting", "invocation": 1, "criterion": "hallucinations_v1",
         "label": "supported"},
        {"case": "greeting", "invocation": 1, "criterion": "final_response_match_v2",
         "rubric": "answers_the_question", "label": "valid"},
        {"case": "greeting", "invocation": 1, "criterion": "response_match_score", "label": "yes"},
        {"case": "greeting", "invocation": 1, "criterion": "safety_v1", "label": "unsafe"},
        {"case": "greeting", "invocation": 1, "criterion": "safety_v1", "label": "safe"},
    ]  # fmt: skip
    file = _write(tmp_path, bad)

    with pytest.raises(LabelsError) as raised:
        load_labels(file)

    said = [(p.path, p.message) for p in raised.value.problems]
    assert all(p.file == str(file) for p in raised.value.problems)
    assert said == [
        ("labels[0].case", f"no case 'nowhere' in {EVALSET}"),
        ("labels[1].invocation", "the case has 1 recorded turn(s): give 1 to 1 or one of its ids (e-forecast-1)"),
        ("labels[2].invocation", "the case has 1 recorded turn(s): give 1 to 1 or one of its ids (e-forecast-1)"),
        ("labels[3].label", "expected safe or unsafe; got 'harmless'"),
        ("labels[4].rubric", "rubric_based_final_response_quality_v1 needs a 'rubric' (a rubric id)"),
        ("labels[5].rubric", "no rubric 'is_polite' applies to this turn (answers_the_question)"),
        ("labels[6].label", "expected grounded or ungrounded; got 'supported'"),
        ("labels[7].rubric", "final_response_match_v2 takes no 'rubric'"),
        ("labels[8].criterion",
         f"no labels are taken for 'response_match_score' ({', '.join(LABEL_SETS)})"),
        ("labels[10]", "labels the same unit as labels[9]"),
    ]  # fmt: skip


def test_a_case_without_a_trace_and_a_criterion_the_config_does_not_use(tmp_path: Path) -> None:
    for source in (EVALSET, REGRESSED):
        shutil.copy(source, tmp_path / source.name)
    (tmp_path / "test_config.json").write_text(
        json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0, "safety_v1": 0.8}}),
        encoding="utf-8",
    )
    labels = [
        {"case": "greeting", "invocation": 1, "criterion": "safety_v1", "label": "safe"},
        {"case": "forecast_paris", "invocation": 1, "criterion": "final_response_match_v2",
         "label": "valid"},
    ]  # fmt: skip
    file = _write(tmp_path, labels, eval_set="travel.evalset.json", traces="traces_regressed.json")

    with pytest.raises(LabelsError) as raised:
        load_labels(file)

    assert [(p.path, p.message) for p in raised.value.problems] == [
        ("labels[0].case", "no trace for case 'greeting' in the traces file"),
        (
            "labels[1].criterion",
            "the eval set's config does not use it (criteria: tool_trajectory_avg_score, "
            "safety_v1)",
        ),
    ]


def test_a_malformed_labels_file_names_the_key_and_what_was_expected(tmp_path: Path) -> None:
    file = _write(tmp_path, [{"case": "greeting", "invocaton": 1, "criterion": "safety_v1"}])
    with pytest.raises(LabelsError) as raised:
        load_labels(file)
    said = {(p.path, p.message) for p in raised.value.problems}
    assert ("labels[0]", "missing required key 'invocation'") in said
    assert ("labels[0]", "missing required key 'label'") in said
    assert any(
        path == "labels[0]" and "'invocaton'" in message and "did you mean 'invocation'" in message
        for path, message in said
    ), said

    empty = _write(tmp_path, [])
    with pytest.raises(LabelsError, match="labels"):
        load_labels(empty)


def test_a_missing_eval_set_or_labels_file_is_an_input_error_naming_both(tmp_path: Path) -> None:
    file = _write(tmp_path, GOOD, eval_set="gone.evalset.json")
    with pytest.raises(InputError) as raised:
        load_labels(file)
    text = str(raised.value)
    assert str(file) in text and "gone.evalset.json" in text

    with pytest.raises(LabelsError, match=r"missing\.yaml"):
        load_labels(tmp_path / "missing.yaml")


def test_hallucinations_are_labelled_per_answer_or_per_sentence_not_both(tmp_path: Path) -> None:
    labels = [
        {"case": "greeting", "invocation": 1, "criterion": "hallucinations_v1",
         "label": "grounded"},
        {"case": "forecast_paris", "invocation": 1, "criterion": "hallucinations_v1",
         "sentence": 1, "label": "supported"},
    ]  # fmt: skip
    file = _write(tmp_path, labels)

    with pytest.raises(LabelsError) as raised:
        load_labels(file)

    [problem] = raised.value.problems
    assert problem.path == "labels[1]"
    assert "labels hallucinations_v1 per sentence, but labels[0] labels it per answer" in (
        problem.message
    )
