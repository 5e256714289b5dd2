"""Labels on the criteria judged once per conversation (the rubric trajectory judge and the three
``multi_turn_*_v1``) and on ``response_evaluation_score``: what the labels file takes, every bad
reference at its JSON path, and the judge's labels read off a scored run (a scripted judge)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from assay.agreement.agree import AgreeReport, Compared, _share_probability, agree, at_least
from assay.agreement.align import NOT_PROFILED, align
from assay.agreement.labels import Label, load_labels
from assay.agreement.stats import agreement
from assay.errors import LabelsError
from assay.evalset import EvalCase, EvalSet, Invocation, write_eval_set
from assay.llm.base import Choice, TokenUsage
from assay.metrics.notes import InvocationNotes, JudgeSample
from assay.runner.evaluate import JudgeSettings

RMT = "rubric_based_multi_turn_trajectory_quality_v1"
MTS = "multi_turn_task_success_v1"
MTQ = "multi_turn_trajectory_quality_v1"
MTU = "multi_turn_tool_use_quality_v1"
COH = "response_evaluation_score"


def _turn(case: str, n: int, user: str, reply: str, call: str | None = None) -> Invocation:
    events = []
    if call:
        events = [
            {"author": "agent", "content": {"role": "model", "parts": [
                {"function_call": {"id": f"c{n}", "name": call, "args": {"n": n}}}]}},
            {"author": "agent", "content": {"role": "user", "parts": [
                {"function_response": {"id": f"c{n}", "name": call, "response": {"ok": True}}}]}},
        ]  # fmt: skip
    return Invocation.model_validate(
        {
            "invocation_id": f"{case}-{n}",
            "user_content": {"role": "user", "parts": [{"text": user}]},
            "final_response": {"role": "model", "parts": [{"text": reply}]},
            "intermediate_data": {"invocation_events": events},
        }
    )


CONVERSATIONS = {
    "trip_lisbon": [
        _turn("trip_lisbon", 1, "Find me a hotel in Lisbon.", "Hotel Sol is free.", "find_hotel"),
        _turn("trip_lisbon", 2, "Book it.", "Booked Hotel Sol.", "book_hotel"),
    ],
    "trip_oslo": [
        _turn("trip_oslo", 1, "Find me a hotel in Oslo.", "Fjord Inn is free.", "find_hotel"),
        _turn("trip_oslo", 2, "Book it.", "Done.", None),
    ],
    "reply_clear": [_turn("reply_clear", 1, "Opening hours?", "We open at 9am.")],
    "reply_jumbled": [_turn("reply_jumbled", 1, "Opening hours?", "Nine blue the open if.")],
}
RUBRICS = [
    {"rubric_id": "checked_first", "rubric_content": {"text_property": "Checks before booking."},
     "type": "TRAJECTORY_QUALITY"},
    {"rubric_id": "told_price", "rubric_content": {"text_property": "Tells the price."},
     "type": "TRAJECTORY_QUALITY"},
    {"rubric_id": "answer_polite", "rubric_content": {"text_property": "Is polite."},
     "type": "FINAL_RESPONSE_QUALITY"},
]  # fmt: skip
CONFIG = {
    "criteria": {
        RMT: {"threshold": 0.5, "judge_model_options": {"num_samples": 1}},
        MTS: 0.8,
        MTQ: 0.8,
        MTU: 0.8,
        COH: 3.0,
    }
}


def _run(tmp_path: Path) -> Path:
    cases = [
        EvalCase.model_validate(
            {
                "eval_id": name,
                "conversation": [t.model_dump(mode="json") for t in turns],
                "rubrics": RUBRICS if name.startswith("trip") else None,
            }
        )
        for name, turns in CONVERSATIONS.items()
    ]
    write_eval_set(EvalSet(eval_set_id="conv", eval_cases=cases), tmp_path / "conv.evalset.json")
    traces = {
        name: [t.model_dump(mode="json", exclude_none=True) for t in turns]
        for name, turns in CONVERSATIONS.items()
    }
    (tmp_path / "traces.json").write_text(json.dumps(traces), encoding="utf-8")
    (tmp_path / "test_config.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    return tmp_path


def _labels(tmp_path: Path, labels: list[dict[str, Any]]) -> Path:
    path = tmp_path / "labels.json"
    data = {"eval_set": "conv.evalset.json", "traces": "traces.json", "labels": labels}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


GOOD: list[dict[str, Any]] = [
    {"case": "trip_lisbon", "invocation": 2, "criterion": RMT, "rubric": "checked_first",
     "label": "yes"},
    {"case": "trip_lisbon", "invocation": "trip_lisbon-2", "criterion": RMT,
     "rubric": "told_price", "label": "no"},
    {"case": "trip_lisbon", "invocation": 2, "criterion": MTS, "label": "yes"},
    {"case": "trip_oslo", "invocation": 2, "criterion": MTS, "label": "yes"},
    {"case": "trip_oslo", "invocation": 2, "criterion": MTQ, "label": "no"},
    {"case": "trip_lisbon", "invocation": 2, "criterion": MTU, "label": "yes"},
    {"case": "reply_clear", "invocation": 1, "criterion": COH, "label": "coherent"},
    {"case": "reply_jumbled", "invocation": 1, "criterion": COH, "label": "incoherent"},
]  # fmt: skip


def test_labels_on_each_new_criterion_load(tmp_path: Path) -> None:
    run = load_labels(_labels(_run(tmp_path), GOOD))
    assert [label.criterion for label in run.labels] == [label["criterion"] for label in GOOD]
    assert len(run.invocations("trip_lisbon")) == 2


def test_wrong_turns_labels_and_rubrics_are_reported_at_their_paths(tmp_path: Path) -> None:
    bad: list[dict[str, Any]] = [
        {"case": "trip_lisbon", "invocation": 1, "criterion": RMT, "rubric": "checked_first",
         "label": "yes"},
        {"case": "trip_lisbon", "invocation": 2, "criterion": RMT, "rubric": "answer_polite",
         "label": "yes"},
        {"case": "trip_lisbon", "invocation": 2, "criterion": RMT, "label": "yes"},
        {"case": "trip_lisbon", "invocation": 2, "criterion": RMT, "rubric": "told_price",
         "label": "valid"},
        {"case": "trip_oslo", "invocation": "trip_oslo-1", "criterion": MTS, "label": "yes"},
        {"case": "trip_oslo", "invocation": 2, "criterion": MTQ, "rubric": "steps_relevant",
         "label": "no"},
        {"case": "trip_oslo", "invocation": 2, "criterion": MTU, "label": "good"},
        {"case": "reply_clear", "invocation": 1, "criterion": COH, "label": "yes"},
        {"case": "reply_clear", "invocation": 2, "criterion": COH, "label": "coherent"},
    ]  # fmt: skip
    file = _labels(_run(tmp_path), bad)

    with pytest.raises(LabelsError) as raised:
        load_labels(file)

    said = [(p.path, p.message) for p in raised.value.problems]
    assert said == [
        ("labels[0].invocation", f"{RMT} is judged once on the whole conversation, on its last "
         "turn: give 2 (or its id, trip_lisbon-2)"),
        ("labels[1].rubric", "no rubric 'answer_polite' applies to the conversation "
         "(checked_first, told_price)"),
        ("labels[2].rubric", f"{RMT} needs a 'rubric' (a rubric id)"),
        ("labels[3].label", "expected yes or no; got 'valid'"),
        ("labels[4].invocation", f"{MTS} is judged once on the whole conversation, on its last "
         "turn: give 2 (or its id, trip_oslo-2)"),
        ("labels[5].rubric", f"{MTQ} takes no 'rubric'"),
        ("labels[6].label", "expected yes or no; got 'good'"),
        ("labels[7].label", "expected coherent or incoherent; got 'yes'"),
        ("labels[8].invocation",
         "the case has 1 recorded turn(s): give 1 to 1 or one of its ids (reply_clear-1)"),
    ]  # fmt: skip


def test_coherence_labels_need_the_expected_turns(tmp_path: Path) -> None:
    _run(tmp_path)
    data = json.loads((tmp_path / "conv.evalset.json").read_text(encoding="utf-8"))
    for case in data["eval_cases"]:
        case.pop("conversation", None)
        case["conversation_scenario"] = {"starting_prompt": "Hi", "conversation_plan": "Ask."}
    (tmp_path / "conv.evalset.json").write_text(json.dumps(data), encoding="utf-8")
    label = {"case": "reply_clear", "invocation": 1, "criterion": COH, "label": "coherent"}

    with pytest.raises(LabelsError) as raised:
        load_labels(_labels(tmp_path, [label]))

    [problem] = raised.value.problems
    assert problem.path == "labels[0].case"
    assert "needs the case's expected invocations, one per recorded turn (1)" in problem.message


def _verdicts(**said: str) -> dict[str, Any]:
    return {"verdicts": [{"id": k, "rationale": f"{k} said {v}", "verdict": v}
                         for k, v in said.items()]}  # fmt: skip


FIVE = {
    MTS: ("goals_achieved", "nothing_left_undone", "conditions_met", "outcome_real", "user_told"),
    MTQ: ("steps_relevant", "sensible_order", "no_wasted_steps", "context_kept",
          "instructions_followed"),
    MTU: ("tool_when_needed", "right_tool", "right_arguments", "no_needless_calls",
          "results_used"),
}  # fmt: skip


def _script(tmp_path: Path) -> Path:
    def all_yes(name: str, no: tuple[str, ...] = ()) -> dict[str, Any]:
        return _verdicts(**{r: "no" if r in no else "yes" for r in FIVE[name]})

    rules = [
        {"match": "(?s)Lisbon.*checked_first",
         "reply": _verdicts(checked_first="yes", told_price="yes")},
        {"match": "(?s)Lisbon.*goals_achieved", "reply": all_yes(MTS)},
        # Oslo: 3 of 5 met (0.6 < 0.8): the judge says no
        {"match": "(?s)Oslo.*goals_achieved",
         "reply": all_yes(MTS, ("outcome_real", "user_told"))},
        # 4 of 5 met: a pass at 0.8, against the person's no
        {"match": "(?s)Oslo.*steps_relevant", "reply": all_yes(MTQ, ("no_wasted_steps",))},
        {"match": "(?s)Lisbon.*tool_when_needed", "reply": all_yes(MTU)},
        {"match": "We open at 9am", "reply": {"explanation": "clear", "rating": "4"}},
        {"match": "Nine blue", "reply": {"explanation": "hard to follow", "rating": "3"}},
    ]  # fmt: skip
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"rules": rules, "default": "no"}), encoding="utf-8")
    return path


def _agree(tmp_path: Path) -> AgreeReport:
    run = load_labels(_labels(_run(tmp_path), GOOD))
    settings = JudgeSettings(model=f"scripted:{_script(tmp_path)}", cache=False, profile=None)
    return asyncio.run(agree(run, settings))


def test_agree_reads_each_new_criterion_off_a_scored_run(tmp_path: Path) -> None:
    report = _agree(tmp_path)

    said = {
        (c.label.case, c.label.criterion, c.label.rubric): (c.judge, c.probability, c.by_votes)
        for c in report.compared
    }
    assert said == {
        ("trip_lisbon", RMT, "checked_first"): ("yes", 1.0, True),
        ("trip_lisbon", RMT, "told_price"): ("yes", 1.0, True),
        ("trip_lisbon", MTS, None): ("yes", 1.0, True),
        ("trip_oslo", MTS, None): ("no", 0.0, True),  # 3 of 5 rubrics: below 0.8
        ("trip_oslo", MTQ, None): ("yes", 1.0, True),  # 4 of 5: passes at 0.8
        ("trip_lisbon", MTU, None): ("yes", 1.0, True),
        ("reply_clear", COH, None): ("coherent", 1.0, True),
        ("reply_jumbled", COH, None): ("coherent", 1.0, True),  # a 3 is coherent
    }
    figures = {name: (a.pairs, a.judged, a.agree) for name, a in report.by_criterion.items()}
    assert figures == {RMT: (2, 2, 1), MTS: (2, 2, 1), MTQ: (1, 1, 0), MTU: (1, 1, 1),
                       COH: (2, 2, 1)}  # fmt: skip
    assert (report.overall.pairs, report.overall.agree) == (8, 4)
    notes = {
        (c.label.case, c.label.criterion): c.note for c in report.compared if not c.label.rubric
    }
    assert (
        notes[("trip_oslo", MTS)]
        == "outcome_real: outcome_real said no; user_told: user_told said no"
    )
    assert notes[("trip_lisbon", MTS)] == "5 of 5 rubrics met"
    assert notes[("reply_jumbled", COH)] == "hard to follow"


def test_align_fits_conversation_scores_but_writes_no_rule_for_them(tmp_path: Path) -> None:
    def unit(case: str, label: str, p: float) -> Compared:
        judge = "yes" if p >= 0.5 else "no"
        return Compared(Label(case=case, invocation=2, criterion=MTS, label=label), judge, "", p)

    units = [unit(f"c{i}", "yes" if i % 2 else "no", 0.3 + 0.05 * i) for i in range(12)]
    units += [
        Compared(Label(case=f"r{i}", invocation=1, criterion=COH, label=label), "coherent", "", p)
        for i, (label, p) in enumerate([("coherent", 0.9), ("incoherent", 0.2)] * 6)
    ]
    figures = {
        name: agreement([(c.label.label, c.judge) for c in units if c.label.criterion == name],
                        positive=positive)
        for name, positive in ((MTS, "yes"), (COH, "coherent"))
    }  # fmt: skip
    report = AgreeReport(tuple(units), figures, figures[MTS], {}, TokenUsage())

    profile, fitted = align(report, labels={})

    by_name = {found.criterion: found for found in fitted}
    assert by_name[MTS].threshold is not None and NOT_PROFILED in by_name[MTS].notes
    assert MTS not in profile.criteria
    assert profile.criteria[COH].field == "rating"
    assert profile.criteria[COH].positive == ["3", "4", "5"]


def test_a_conversation_s_probability_is_that_enough_rubrics_are_met() -> None:
    assert at_least([0.5, 0.5], 1) == pytest.approx(0.75)
    assert at_least([0.9, 0.8, 0.5], 3) == pytest.approx(0.36)
    assert at_least([0.2], 0) == 1.0
    choices = [
        Choice(path=f"verdicts[{i}].verdict", start=10 * i, chosen="yes",
               probabilities={"yes": p, "no": 1 - p})
        for i, p in enumerate([0.9, 0.9, 0.9, 0.9, 0.5])
    ]  # fmt: skip
    notes = InvocationNotes(samples=[JudgeSample(sample=0, choices=choices)])
    probability, by_votes = _share_probability(notes, 1.0, 0.8)
    # at least 4 of 5: all five, or exactly one of them missed
    exact = 0.9**4 * 0.5 + 0.9**4 * 0.5 + 4 * 0.9**3 * 0.1 * 0.5
    assert (probability, by_votes) == (pytest.approx(exact), False)
    assert _share_probability(None, 0.6, 0.8) == (0.0, True)
