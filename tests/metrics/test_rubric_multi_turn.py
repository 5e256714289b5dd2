"""``rubric_based_multi_turn_trajectory_quality_v1``: one judgement of the whole conversation on
the last invocation, which rubrics apply, the prompt's transcript, and a differential test against
ADK 2.13's own evaluator with its judge replaced by the same script."""

from __future__ import annotations

import asyncio
import random
import warnings
from typing import Any

from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
from google.adk.evaluation.eval_metrics import JudgeModelOptions as AdkJudgeModelOptions
from google.adk.evaluation.eval_metrics import RubricsBasedCriterion as AdkCriterion
from google.adk.evaluation.eval_rubrics import Rubric as AdkRubric
from google.adk.evaluation.rubric_based_multi_turn_trajectory_evaluator import (
    RubricBasedMultiTurnTrajectoryEvaluator,
)
from test_rubrics import (
    Answer,
    ScriptedCaller,
    _adk_answer,
    _adk_copy_rubrics,
    _AdkStubJudge,
    _criterion,
    _invocation,
    _json,
    _rubric,
)

from assay.config import RubricsBasedCriterion
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.llm.base import LlmCallError
from assay.llm.judge import Judge
from assay.metrics.base import EvalStatus, MetricResult
from assay.metrics.conversation import agents_tools, transcript
from assay.metrics.registry import default_registry
from assay.metrics.rubric_multi_turn import RubricMultiTurnTrajectoryQualityMetric

TRAJ = "TRAJECTORY_QUALITY"
POLITE = _rubric("polite", "The agent stays polite.", TRAJ)
BOOKED = _rubric("booked", "The agent booked the flight.", TRAJ)
FINAL_ONLY = _rubric("final", "The final answer is short.", "FINAL_RESPONSE_QUALITY")


def _events(index: int) -> dict[str, Any]:
    call = {"id": f"c{index}", "name": "find_flight", "args": {"to": "Oslo", "day": index}}
    reply = {"id": f"c{index}", "name": "find_flight", "response": {"flight": f"SK{index}"}}
    return {
        "invocation_events": [
            {"author": "planner", "content": {"role": "model", "parts": [{"text": "Looking."}]}},
            {"author": "planner", "content": {"role": "model", "parts": [{"function_call": call}]}},
            {
                "author": "planner",
                "content": {"role": "user", "parts": [{"function_response": reply}]},
            },
        ]
    }


def _turn(index: int, **extra: Any) -> dict[str, Any]:
    return _invocation(index, intermediate_data=_events(index), **extra)


def _run(
    answers: list[Answer],
    criterion: RubricsBasedCriterion,
    actual: list[dict[str, Any]],
    *,
    expected: list[dict[str, Any]] | None = None,
    case_rubrics: list[dict[str, Any]] | None = None,
) -> tuple[MetricResult, ScriptedCaller]:
    caller = ScriptedCaller({"<question 0>": answers})
    case = EvalCase.model_validate(
        {
            "eval_id": "c1",
            "rubrics": case_rubrics,
            **(
                {"conversation": expected}
                if expected
                else {"conversation_scenario": {"starting_prompt": "s", "conversation_plan": "p"}}
            ),
        }
    )
    metric = RubricMultiTurnTrajectoryQualityMetric(
        criterion, Judge(caller, "rubric_based_multi_turn_trajectory_quality_v1", source="t")
    )
    result = asyncio.run(
        metric.evaluate(
            [Invocation.model_validate(a) for a in actual],
            [Invocation.model_validate(e) for e in expected] if expected else None,
            case,
        )
    )
    return result, caller


# --------------------------------------------------------------------------- behaviour


def test_the_conversation_is_judged_once_and_the_last_invocation_carries_the_score() -> None:
    answer = _json(("polite", "yes"), ("booked", "no"))
    result, caller = _run([answer], _criterion([POLITE, BOOKED]), [_turn(0), _turn(1), _turn(2)])
    assert len(caller.requests) == 1
    assert result.score == 0.5 and result.status is EvalStatus.PASSED
    assert [r.status for r in result.per_invocation] == [
        EvalStatus.NOT_EVALUATED,
        EvalStatus.NOT_EVALUATED,
        EvalStatus.PASSED,
    ]
    assert [r.score for r in result.per_invocation] == [None, None, 0.5]
    last = result.per_invocation[-1].rubric_scores
    assert last is not None and [(s.rubric_id, s.score) for s in last] == [
        ("polite", 1.0),
        ("booked", 0.0),
    ]
    assert result.rubric_scores is not None
    assert [(s.rubric_id, s.score) for s in result.rubric_scores] == [
        ("polite", 1.0),
        ("booked", 0.0),
    ]
    notes = result.notes
    assert notes is not None and len(notes.per_invocation) == 3
    assert notes.per_invocation[0].reason is not None
    assert notes.per_invocation[2].details is not None
    assert [d["verdict"] for d in notes.per_invocation[2].details["rubrics"]] == ["yes", "no"]


def test_the_prompt_holds_every_turn_with_its_tool_calls_and_results_in_order() -> None:
    answer = _json(("polite", "yes"))
    _, caller = _run([answer], _criterion([POLITE]), [_turn(0), _turn(1)])
    prompt = caller.requests[0].messages[-1].content
    order = [
        "[turn 1] user: <question 0>",
        "[turn 1] agent (planner): Looking.",
        '[turn 1] agent (planner) calls tool find_flight({"to": "Oslo", "day": 0})',
        '[turn 1] tool find_flight returned {"flight": "SK0"}',
        "[turn 1] agent (planner): answer 0",
        "[turn 2] user: <question 1>",
        '[turn 2] tool find_flight returned {"flight": "SK1"}',
        "[turn 2] agent (planner): answer 1",
        "[id: polite] The agent stays polite.",
    ]
    positions = [prompt.index(line) for line in order]
    assert positions == sorted(positions)


def test_static_turns_show_their_tool_calls_which_adk_leaves_out() -> None:
    turn = Invocation.model_validate(
        _invocation(
            0,
            intermediate_data={
                "tool_uses": [{"name": "lookup", "args": {"q": "x"}}],
                "tool_responses": [{"name": "lookup", "response": {"a": 1}}],
            },
        )
    )
    assert transcript([turn]).splitlines() == [
        "[turn 1] user: <question 0>",
        '[turn 1] agent calls tool lookup({"q": "x"})',
        '[turn 1] tool lookup returned {"a": 1}',
        "[turn 1] agent: answer 0",
    ]


def test_tools_are_listed_once_per_agent_over_all_turns() -> None:
    app = {
        "agent_details": {
            "planner": {
                "name": "planner",
                "instructions": "Plan.",
                "tool_declarations": [
                    {"function_declarations": [{"name": "find_flight", "description": "Find."}]}
                ],
            }
        }
    }
    turns = [Invocation.model_validate(_invocation(i, app_details=app)) for i in range(3)]
    assert agents_tools(turns) == "Agent planner:\n- find_flight: Find."


def test_only_trajectory_rubrics_of_the_last_invocation_apply() -> None:
    answer = _json(("booked", "yes"))
    result, caller = _run(
        [answer],
        _criterion([]),
        [_turn(0, rubrics=[POLITE]), _turn(1, rubrics=[BOOKED, FINAL_ONLY])],
    )
    assert result.score == 1.0
    prompt = caller.requests[0].messages[-1].content
    assert "[id: booked]" in prompt and "[id: polite]" not in prompt and "[id: final]" not in prompt


def test_no_rubric_for_the_last_invocation_is_not_evaluated_without_asking() -> None:
    result, caller = _run([], _criterion([]), [_turn(0, rubrics=[POLITE]), _turn(1)])
    assert result.status is EvalStatus.NOT_EVALUATED
    assert result.reason is not None and "no rubrics" in result.reason
    assert caller.requests == []


def test_a_failed_judge_call_leaves_the_case_not_evaluated_with_the_reason() -> None:
    result, _ = _run([LlmCallError("judge down")], _criterion([POLITE]), [_turn(0), _turn(1)])
    assert result.status is EvalStatus.NOT_EVALUATED and result.score is None
    assert result.reason is not None and "judge down" in result.reason


def test_the_registry_scores_it_instead_of_not_implemented() -> None:
    registry = default_registry()
    assert registry.is_judged("rubric_based_multi_turn_trajectory_quality_v1")
    assert "rubric_based_multi_turn_trajectory_quality_v1" not in registry.unimplemented()


# --------------------------------------------------------------------------- against ADK

_TEXTS = [
    "The agent stays polite.",
    "The agent's answers are short.",
    'The agent says "hello".',
    "The agent booked the flight.",
    "A tool was called.",
    "The right tool was called.",
]
_TYPES = [TRAJ, TRAJ, "FINAL_RESPONSE_QUALITY", None]


def _generate(rng: random.Random) -> dict[str, Any]:
    pool = [_rubric(f"r{i}", text, rng.choice(_TYPES)) for i, text in enumerate(_TEXTS)]
    rng.shuffle(pool)
    taken = iter(pool)

    def some(most: int) -> list[dict[str, Any]]:
        out = [r for _, r in zip(range(rng.randint(0, most)), taken, strict=False)]
        if rng.random() < 0.05:
            out.append(rng.choice(pool))  # a clash
        return out

    count = rng.randint(1, 3)
    static = rng.random() < 0.2
    make = _invocation if static else _turn
    num_samples = rng.randint(1, 4)
    return {
        "criterion": [{k: v for k, v in r.items() if k != "type"} for r in some(2)],
        "case": some(2) or None,
        "expected": [make(i, rubrics=some(1) or None) for i in range(count)],
        "actual": [make(i, rubrics=some(1) or None) for i in range(count)],
        "answers": [_adk_answer(rng, pool) for _ in range(num_samples)],
        "num_samples": num_samples,
        "threshold": rng.choice([0.0, 0.5, 1.0]),
    }


def _adk_result(generated: dict[str, Any]) -> Any:
    criterion = AdkCriterion(
        threshold=generated["threshold"],
        rubrics=[AdkRubric.model_validate(r) for r in generated["criterion"]],
        judge_model_options=AdkJudgeModelOptions(num_samples=generated["num_samples"]),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evaluator = RubricBasedMultiTurnTrajectoryEvaluator(
            AdkEvalMetric(
                metric_name="rubric_based_multi_turn_trajectory_quality_v1", criterion=criterion
            )
        )
    evaluator._judge_model = _AdkStubJudge({"<question 0>": generated["answers"]})
    actual = [AdkInvocation.model_validate(a) for a in generated["actual"]]
    expected = [AdkInvocation.model_validate(e) for e in generated["expected"]]
    try:
        _adk_copy_rubrics(actual, generated["case"], expected)
        # ADK raises while formatting the last invocation's prompt when its rubrics clash or are
        # missing; ask its own method first, so no sample coroutine is left un-awaited.
        evaluator.create_effective_rubrics_list(actual[-1].rubrics)
    except ValueError:
        return None
    result = asyncio.run(evaluator.evaluate_invocations(actual, expected))
    return _summary(
        (result.overall_score, result.overall_eval_status.value),
        result.overall_rubric_scores,
        [(r.score, r.eval_status.value, r.rubric_scores) for r in result.per_invocation_results],
    )


def _summary(overall: Any, rubric_scores: Any, per_invocation: list[Any]) -> Any:
    return (
        overall,
        [(s.rubric_id, s.score) for s in rubric_scores or []],
        [
            (
                score,
                status,
                None if scores is None else [(s.rubric_id, s.score, s.rationale) for s in scores],
            )
            for score, status, scores in per_invocation
        ],
    )


def _our_result(generated: dict[str, Any]) -> Any:
    answers = [
        LlmCallError(str(a)) if isinstance(a, Exception) else a for a in generated["answers"]
    ]
    result, caller = _run(
        answers,
        _criterion(generated["criterion"], generated["num_samples"], generated["threshold"]),
        generated["actual"],
        expected=generated["expected"],
        case_rubrics=generated["case"],
    )
    if result.rubric_scores is None:  # the rubrics could not be put together: nothing asked
        assert result.status is EvalStatus.NOT_EVALUATED and result.reason
        assert caller.requests == []
        return None
    return _summary(
        (result.score, result.status.value),
        result.rubric_scores,
        [(r.score, r.status.value, r.rubric_scores) for r in result.per_invocation],
    )


def test_scores_equal_adks_evaluator_fed_the_same_judge_answers() -> None:
    rng = random.Random(20_261_125)
    outcomes = {"scored": 0, "raised": 0, "multi": 0}
    for _ in range(120):
        generated = _generate(rng)
        ours = _our_result(generated)
        assert ours == _adk_result(generated), generated
        outcomes["raised" if ours is None else "scored"] += 1
        outcomes["multi"] += ours is not None and len(generated["actual"]) > 1
    assert outcomes["scored"] > 40 and outcomes["raised"] > 5 and outcomes["multi"] > 20
