"""The three conversation-level metrics ADK hands to Vertex AI (``multi_turn_task_success_v1``,
``multi_turn_trajectory_quality_v1``, ``multi_turn_tool_use_quality_v1``): the judge's rubrics and
their parser, the last invocation carrying the score, reasons, the prompt's transcript, and the
opt-in Vertex path, compared with ADK 2.13's own facade run against the same fake service."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from _callers import FakeCaller, Reply
from _fake_vertex import FakeService, fake_sdk, plain, verdict, vertex_result

from assay.config import BaseCriterion
from assay.evalset import EvalCase, Invocation
from assay.evalset.rubric import RubricScore
from assay.llm.base import LlmCallError, TokenUsage
from assay.llm.judge import Judge
from assay.metrics import EvalStatus, MetricResult
from assay.metrics import vertex as vertex_ai
from assay.metrics.multi_turn import (
    EARLIER_TURN,
    MultiTurnMetric,
    MultiTurnTaskSuccessMetric,
    MultiTurnToolUseQualityMetric,
    MultiTurnTrajectoryQualityMetric,
)
from assay.metrics.prompts import multi_turn as prompts
from assay.metrics.prompts import rubric_multi_turn as conversation_prompts
from assay.metrics.prompts import rubrics as rubric_prompts

METRICS: list[type[MultiTurnMetric]] = [
    MultiTurnTaskSuccessMetric,
    MultiTurnTrajectoryQualityMetric,
    MultiTurnToolUseQualityMetric,
]
CLOUD = {"GOOGLE_CLOUD_PROJECT": "proj", "GOOGLE_CLOUD_LOCATION": "us-central1"}


def answer(*verdicts: tuple[str, object]) -> str:
    """The judge's JSON with these (rubric id, verdict) entries."""
    entries = [{"id": i, "rationale": f"why {i}", "verdict": v} for i, v in verdicts]
    return json.dumps({"verdicts": entries})


def all_ids(cls: type[MultiTurnMetric], verdict: str = "yes") -> str:
    """An answer giving every rubric of ``cls`` the same verdict."""
    return answer(*((r.rubric_id, verdict) for r in prompts.RUBRICS[cls.info.name]))


def make(
    reply: Reply | str,
    cls: type[MultiTurnMetric] = MultiTurnTaskSuccessMetric,
    *,
    threshold: float = 0.5,
    env: dict[str, str] | None = None,
    vertex: Callable[[vertex_ai.AgentData], vertex_ai.VertexScore] | None = None,
) -> tuple[MultiTurnMetric, FakeCaller]:
    caller = FakeCaller(
        reply if callable(reply) else (lambda _request: reply),
        TokenUsage(prompt_tokens=40, completion_tokens=20, calls=1),
    )
    judge = Judge(client=caller, metric=cls.info.name, source="test")
    return cls(BaseCriterion(threshold=threshold), judge, env=env or {}, vertex=vertex), caller


def turn(index: int, *, events: bool = True, final: str | None = "Done.") -> Invocation:
    """A turn where the agent looks a flight up and answers."""
    call = {"id": f"c{index}", "name": "find_flight", "args": {"to": "Oslo", "day": index}}
    reply = {"id": f"c{index}", "name": "find_flight", "response": {"flight": f"SK{index}"}}
    data: dict[str, Any] = {
        "invocation_id": f"inv-{index}",
        "user_content": {"role": "user", "parts": [{"text": f"Flight to Oslo on day {index}?"}]},
        "app_details": {
            "agent_details": {
                "planner": {
                    "name": "planner",
                    "instructions": f"Book flights (v{index}).",
                    "tool_declarations": [
                        {"function_declarations": [{"name": "find_flight", "description": "Find"}]}
                    ],
                }
            }
        },
    }
    if events:
        data["intermediate_data"] = {
            "invocation_events": [
                {"author": "planner", "content": {"parts": [{"text": "Looking."}]}},
                {"author": "planner", "content": {"parts": [{"function_call": call}]}},
                {"author": "planner"},  # no content: left out
                {"author": "planner", "content": {"parts": [{"function_response": reply}]}},
            ]
        }
    else:
        data["intermediate_data"] = {"tool_uses": [call], "tool_responses": [reply]}
    if final is not None:
        data["final_response"] = {"role": "model", "parts": [{"text": final}]}
    return Invocation.model_validate(data)


def run(
    metric: MultiTurnMetric,
    actual: Sequence[Invocation],
    expected: Sequence[Invocation] | None = None,
) -> MetricResult:
    case = EvalCase(eval_id="case-1", conversation=list(expected or actual))
    return asyncio.run(metric.evaluate(actual, expected, case))


# --------------------------------------------------------------------------- judged by the LLM

TASK = MultiTurnTaskSuccessMetric
GOALS, UNDONE, CONDITIONS, REAL, TOLD = (r.rubric_id for r in prompts.TASK_SUCCESS)


@pytest.mark.parametrize("cls", METRICS)
def test_the_conversation_is_judged_once_and_the_last_invocation_carries_the_score(
    cls: type[MultiTurnMetric],
) -> None:
    rubrics = prompts.RUBRICS[cls.info.name]
    verdicts = [(r.rubric_id, "yes" if n < 3 else "no") for n, r in enumerate(rubrics)]
    metric, caller = make(answer(*verdicts), cls)
    result = run(metric, [turn(0), turn(1), turn(2)])
    assert len(caller.requests) == 1
    request = caller.requests[0]
    assert request.messages[0].content == conversation_prompts.SYSTEM
    assert request.response_schema == rubric_prompts.schema(rubrics)
    assert result.score == 0.6 and result.status == EvalStatus.PASSED
    assert [r.score for r in result.per_invocation] == [None, None, 0.6]
    assert [r.status for r in result.per_invocation] == [
        EvalStatus.NOT_EVALUATED,
        EvalStatus.NOT_EVALUATED,
        EvalStatus.PASSED,
    ]
    expected_scores = [
        RubricScore(rubric_id=r.rubric_id, rationale=f"why {r.rubric_id}", score=float(n < 3))
        for n, r in enumerate(rubrics)
    ]
    assert result.per_invocation[2].rubric_scores == expected_scores
    assert result.rubric_scores == expected_scores
    assert result.per_invocation[0].rubric_scores is None


def test_the_score_is_the_share_of_rubrics_met_against_the_threshold() -> None:
    reply = answer((GOALS, "yes"), (UNDONE, "No."), (CONDITIONS, True), (REAL, "yes"))
    metric, _ = make(reply, threshold=0.8)
    result = run(metric, [turn(0)])  # TOLD has no verdict: left out of the share
    assert result.score == 0.75
    assert result.status == EvalStatus.FAILED
    assert result.per_invocation[0].status == EvalStatus.FAILED
    assert [s.rubric_id for s in result.rubric_scores or []] == [GOALS, UNDONE, CONDITIONS, REAL]


def test_a_rubric_answered_twice_with_a_tie_counts_as_no_and_unknown_ids_are_noted() -> None:
    reply = answer((GOALS, "yes"), (GOALS, "no"), (UNDONE, "yes"), ("made_up", "yes"))
    metric, _ = make(reply)
    result = run(metric, [turn(0)])
    assert [(s.rubric_id, s.score) for s in result.rubric_scores or []] == [
        (GOALS, 0.0),
        (UNDONE, 1.0),
    ]
    assert result.score == 0.5
    assert result.notes is not None
    assert (result.notes.per_invocation[0].details or {})["unmatched"] == ["made_up"]


def test_notes_explain_the_earlier_turns_and_keep_each_rubric_of_the_last() -> None:
    metric, _ = make(answer((GOALS, "yes"), (UNDONE, "no")))
    result = run(metric, [turn(0), turn(1)])
    notes = result.notes
    assert notes is not None
    assert (notes.judge_model, notes.judge_source) == ("scripted:test", "test")
    assert notes.usage == TokenUsage(prompt_tokens=40, completion_tokens=20, calls=1)
    first, last = notes.per_invocation
    assert (first.invocation_id, first.reason, first.samples) == ("inv-0", EARLIER_TURN, [])
    assert last.invocation_id == "inv-1" and last.reason is None
    assert last.samples[0].score == 0.5
    assert last.samples[0].verdict == f"{GOALS}: yes, {UNDONE}: no"
    assert last.details is not None
    rows = last.details["rubrics"]
    assert [r["rubric_id"] for r in rows] == [r.rubric_id for r in prompts.TASK_SUCCESS]
    assert rows[0] == {
        "rubric_id": GOALS,
        "property": prompts.TASK_SUCCESS[0].rubric_content.text_property,
        "verdict": "yes",
        "score": 1.0,
        "rationale": f"why {GOALS}",
    }
    assert rows[1]["verdict"] == "no"
    assert rows[2] == {**rows[2], "verdict": None, "score": None, "rationale": None}


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("I think the agent did fine.", "no rubric verdict found in the judge's answer"),
        (  # cut off
            '{"verdicts": [{"id": "goals_achieved", "verdict": "yes"}',
            "no rubric verdict found in the judge's answer",
        ),
        (
            answer(("made_up", "yes")),
            "the judge's verdicts match none of the rubrics: 'made_up'",
        ),
        (answer((GOALS, "unclear"), (UNDONE, "n/a")), "no yes/no verdict in the judge's answer"),
    ],
)
def test_a_malformed_answer_is_not_evaluated_and_keeps_the_raw_text(
    reply: str, reason: str
) -> None:
    metric, _ = make(reply)
    result = run(metric, [turn(0), turn(1)])
    assert result.score is None and result.status == EvalStatus.NOT_EVALUATED
    assert result.reason == reason
    assert [r.status for r in result.per_invocation] == [EvalStatus.NOT_EVALUATED] * 2
    assert result.notes is not None
    last = result.notes.per_invocation[1]
    assert last.reason == reason
    assert last.samples[0].text == reply


def test_a_failing_judge_call_is_not_evaluated_with_the_reason() -> None:
    metric, _ = make(lambda _request: LlmCallError("gave up after 4 attempts: timed out"))
    result = run(metric, [turn(0), turn(1)])
    assert result.status == EvalStatus.NOT_EVALUATED
    assert result.reason == "judge call failed: gave up after 4 attempts: timed out"
    assert result.rubric_scores is None
    assert result.notes is not None
    assert result.notes.per_invocation[1].samples[0].error is not None


def test_a_case_without_invocations_is_not_evaluated_without_asking() -> None:
    metric, caller = make(all_ids(TASK))
    result = run(metric, [])
    assert result.status == EvalStatus.NOT_EVALUATED
    assert result.reason == "the case has no invocations"
    assert result.per_invocation == [] and caller.requests == []


def test_expected_invocations_are_paired_when_they_can_be_and_never_needed() -> None:
    metric, _ = make(all_ids(TASK))
    expected = [turn(0, final="Ref 0."), turn(1, final="Ref 1.")]
    paired = run(metric, [turn(0), turn(1)], expected)
    assert [r.expected for r in paired.per_invocation] == expected
    unpaired = run(metric, [turn(0), turn(1)], expected[:1])
    assert unpaired.score == 1.0
    assert [r.expected for r in unpaired.per_invocation] == [None, None]


def test_the_prompt_holds_the_agents_every_turn_with_its_tool_calls_and_results_then_rubrics() -> (
    None
):
    metric, caller = make(all_ids(TASK))
    run(metric, [turn(0), turn(1, events=False, final=None)])
    user = caller.requests[0].messages[-1].content
    rubric_lines = "\n".join(
        f"[id: {r.rubric_id}] {r.rubric_content.text_property}" for r in prompts.TASK_SUCCESS
    )
    assert user == (
        "<agent_instructions>\nAgent planner:\nBook flights (v0).\n</agent_instructions>\n"
        "<agent_tools>\nAgent planner:\n- find_flight: Find\n</agent_tools>\n"
        "<conversation>\n"
        "[turn 1] user: Flight to Oslo on day 0?\n"
        "[turn 1] agent (planner): Looking.\n"
        '[turn 1] agent (planner) calls tool find_flight({"to": "Oslo", "day": 0})\n'
        '[turn 1] tool find_flight returned {"flight": "SK0"}\n'
        "[turn 1] agent (planner): Done.\n"
        "[turn 2] user: Flight to Oslo on day 1?\n"
        '[turn 2] agent calls tool find_flight({"to": "Oslo", "day": 1})\n'
        '[turn 2] tool find_flight returned {"flight": "SK1"}\n'
        "[turn 2] (the agent gave no final reply)\n"
        "</conversation>\n"
        f"<properties>\n{rubric_lines}\n</properties>"
    )


def test_the_three_metrics_share_the_prompt_up_to_their_rubrics() -> None:
    users = []
    for cls in METRICS:
        metric, caller = make(all_ids(cls), cls)
        assert run(metric, [turn(0), turn(1)]).score == 1.0
        users.append(caller.requests[0].messages[-1].content)
    shared = {user.split("<properties>")[0] for user in users}
    assert len(shared) == 1
    assert len({user.split("<properties>")[1] for user in users}) == 3


@pytest.mark.parametrize("cls", METRICS)
def test_each_metric_says_what_it_is(cls: type[MultiTurnMetric]) -> None:
    info = cls.info
    assert (info.min_value, info.max_value) == (0.0, 1.0)
    assert info.needs_judge and not info.needs_expected and not info.takes_rubrics
    assert info.source == "vertex"
    assert info.name in vertex_ai.VERTEX_METRIC_NAMES
    rubrics = prompts.RUBRICS[info.name]
    assert len(rubrics) == 5 and len({r.rubric_id for r in rubrics}) == 5


# --------------------------------------------------------------------------- Vertex AI


class FakeScorer:
    """A conversation scorer stand-in: records the AgentData, answers with one score."""

    def __init__(self, score: vertex_ai.VertexScore | Exception) -> None:
        self.score = score
        self.data: list[vertex_ai.AgentData] = []

    def __call__(self, data: vertex_ai.AgentData) -> vertex_ai.VertexScore:
        self.data.append(data)
        if isinstance(self.score, Exception):
            raise self.score
        return self.score


VERTEX_RUBRICS = [
    RubricScore(rubric_id="Books the flight", rationale="it did", score=1.0),
    RubricScore(rubric_id="Says the price", rationale=None, score=0.0),
    RubricScore(rubric_id="explanation", rationale="half the rubrics pass"),
]


def test_vertex_scores_only_the_metrics_named_and_the_last_invocation_carries_it() -> None:
    env = {**CLOUD, "ASSAY_VERTEX_METRICS": "multi_turn_task_success_v1, safety_v1"}
    scorer = FakeScorer(
        vertex_ai.VertexScore(
            0.5, explanation="half the rubrics pass", rubric_scores=VERTEX_RUBRICS
        )
    )
    metric, caller = make(all_ids(TASK), env=env, vertex=scorer)
    result = run(metric, [turn(0), turn(1)])
    assert caller.requests == [] and len(scorer.data) == 1
    assert result.score == 0.5 and result.status == EvalStatus.PASSED
    assert [r.score for r in result.per_invocation] == [None, 0.5]
    assert result.per_invocation[1].rubric_scores == VERTEX_RUBRICS
    assert result.rubric_scores == VERTEX_RUBRICS
    notes = result.notes
    assert notes is not None
    assert (notes.judge_model, notes.judge_source) == (
        "vertex-ai:multi_turn_task_success_v1",
        "ASSAY_VERTEX_METRICS",
    )
    last = notes.per_invocation[1]
    assert last.samples[0].text == "half the rubrics pass"
    assert last.details is not None
    assert [r["property"] for r in last.details["rubrics"]] == [
        "Books the flight",
        "Says the price",
    ]
    assert last.details["explanation"] == "half the rubrics pass"

    other, other_caller = make(
        all_ids(MultiTurnToolUseQualityMetric),
        MultiTurnToolUseQualityMetric,
        env=env,
        vertex=scorer,
    )
    assert run(other, [turn(0)]).score == 1.0  # not named: the judge scores it
    assert len(other_caller.requests) == 1 and len(scorer.data) == 1


def test_the_agent_data_is_built_as_adks_facade_builds_it() -> None:
    scorer = FakeScorer(vertex_ai.VertexScore(1.0))
    env = {**CLOUD, "ASSAY_VERTEX_METRICS": "all"}
    metric, _ = make("", env=env, vertex=scorer)
    run(metric, [turn(0), turn(1, events=False, final=None)])
    (data,) = scorer.data
    tools = [{"function_declarations": [{"name": "find_flight", "description": "Find"}]}]
    assert data.agents == {
        "planner": vertex_ai.AgentConfigData("planner", "Book flights (v0).", tools)
    }
    first, second = data.turns
    assert (first.turn_index, first.turn_id, second.turn_index, second.turn_id) == (
        0,
        "inv-0",
        1,
        "inv-1",
    )
    assert [e.author for e in first.events] == ["user", "planner", "planner", "planner", "agent"]
    assert first.events[0].content == {
        "role": "user",
        "parts": [{"text": "Flight to Oslo on day 0?"}],
    }
    assert first.events[2].content == {
        "parts": [
            {"function_call": {"id": "c0", "name": "find_flight", "args": {"to": "Oslo", "day": 0}}}
        ]
    }
    assert first.events[-1].content == {"role": "model", "parts": [{"text": "Done."}]}
    # a static turn's tool calls are not sent, and a missing final response is an empty event
    assert [(e.author, e.content is None) for e in second.events] == [
        ("user", False),
        ("agent", True),
    ]


def test_vertex_without_a_score_keeps_its_error_and_is_not_evaluated() -> None:
    error = RubricScore(rubric_id="error", rationale="quota exceeded")
    scorer = FakeScorer(
        vertex_ai.VertexScore(None, reason="Vertex AI gave no score: quota", rubric_scores=[error])
    )
    metric, _ = make("", env={**CLOUD, "ASSAY_VERTEX_METRICS": "all"}, vertex=scorer)
    result = run(metric, [turn(0)])
    assert result.status == EvalStatus.NOT_EVALUATED
    assert result.reason == "Vertex AI gave no score: quota"
    assert result.rubric_scores == [error]


def test_a_vertex_failure_is_not_evaluated_with_a_redacted_reason() -> None:
    scorer = FakeScorer(RuntimeError("denied for https://x/?key=AIzaSyD-secretsecretsecret123"))
    metric, _ = make("", env={**CLOUD, "ASSAY_VERTEX_METRICS": "all"}, vertex=scorer)
    result = run(metric, [turn(0)])
    assert result.status == EvalStatus.NOT_EVALUATED
    assert (result.reason or "").startswith("Vertex AI failed: RuntimeError: denied for")
    assert "secret" not in (result.reason or "")


@pytest.mark.parametrize(
    ("env", "installed", "reason"),
    [
        (
            {**CLOUD, "ASSAY_VERTEX_METRICS": "all"},
            False,
            "ASSAY_VERTEX_METRICS=all needs the Vertex AI SDK: pip install 'assay[vertex]' "
            "(google-cloud-aiplatform[evaluation])",
        ),
        (
            {"ASSAY_VERTEX_METRICS": "multi_turn_task_success_v1"},
            True,
            "ASSAY_VERTEX_METRICS=multi_turn_task_success_v1 needs GOOGLE_CLOUD_PROJECT and "
            "GOOGLE_CLOUD_LOCATION set (or GOOGLE_API_KEY), and Google Cloud credentials",
        ),
        (
            {**CLOUD, "ASSAY_VERTEX_METRICS": "multi_turn_task_succes_v1"},
            True,
            "ASSAY_VERTEX_METRICS names 'multi_turn_task_succes_v1', which Vertex AI cannot score; "
            "it takes 'all' or a comma-separated list of: safety_v1, response_evaluation_score, "
            "multi_turn_task_success_v1, multi_turn_trajectory_quality_v1, "
            "multi_turn_tool_use_quality_v1",
        ),
    ],
)
def test_an_opt_in_that_cannot_be_honoured_is_not_evaluated_never_a_silent_fallback(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], installed: bool, reason: str
) -> None:
    monkeypatch.setattr("assay.metrics.vertex.sdk_installed", lambda: installed)
    metric, caller = make(all_ids(TASK), env=env)
    result = run(metric, [turn(0), turn(1)])
    assert result.status == EvalStatus.NOT_EVALUATED
    assert result.reason == reason
    assert caller.requests == []
    assert result.notes is not None
    assert [n.reason for n in result.notes.per_invocation] == [EARLIER_TURN, reason]


# --------------------------------------------------------------------------- against ADK 2.13


_ADK_EVALUATORS = {
    "multi_turn_task_success_v1": (
        "multi_turn_task_success_evaluator",
        "MultiTurnTaskSuccessV1Evaluator",
    ),
    "multi_turn_trajectory_quality_v1": (
        "multi_turn_trajectory_quality_evaluator",
        "MultiTurnTrajectoryQualityV1Evaluator",
    ),
    "multi_turn_tool_use_quality_v1": (
        "multi_turn_tool_use_quality_evaluator",
        "MultiTurnToolUseQualityV1Evaluator",
    ),
}


def _adk(name: str, threshold: float, actual: Sequence[Invocation]) -> Any:
    import importlib

    from google.adk.evaluation.eval_case import Invocation as AdkInvocation
    from google.adk.evaluation.eval_metrics import EvalMetric

    module, cls = _ADK_EVALUATORS[name]
    evaluator = getattr(importlib.import_module(f"google.adk.evaluation.{module}"), cls)
    adk_actual = [
        AdkInvocation.model_validate(inv.model_dump(mode="json", exclude_none=True))
        for inv in actual
    ]
    metric = EvalMetric(metric_name=name, threshold=threshold)
    return evaluator(metric).evaluate_invocations(adk_actual, None)


ANSWERS = [
    vertex_result(
        0.5,
        verdicts=[
            verdict("The agent books day 0.", True, "booked"),
            verdict(None, None, rubric_id="r-2"),
            verdict(None, False),
        ],
        explanation="one of two",
    ),
    vertex_result(float("nan"), error="INVALID_ARGUMENT: no turns"),
    vertex_result(None),
    vertex_result(1),
]


@pytest.mark.parametrize("cls", METRICS)
@pytest.mark.parametrize("reply", range(len(ANSWERS)))
def test_the_vertex_path_matches_adks_facade_on_the_same_service(
    monkeypatch: pytest.MonkeyPatch, cls: type[MultiTurnMetric], reply: int
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    conversation = [turn(0), turn(1, events=False), turn(2, final=None)]
    theirs_service = FakeService([ANSWERS[reply]])
    with fake_sdk(monkeypatch, theirs_service):
        theirs = _adk(cls.info.name, 0.5, conversation)
    ours_service = FakeService([ANSWERS[reply]])
    with fake_sdk(monkeypatch, ours_service):
        env = {"GOOGLE_API_KEY": "k", "ASSAY_VERTEX_METRICS": cls.info.name}
        metric, caller = make("", cls, env=env)
        ours = run(metric, conversation)
    assert caller.requests == []
    assert ours_service.calls == theirs_service.calls  # the same AgentData and metric, once
    assert ours_service.calls[0]["metrics"] == [f"RubricMetric.{cls.vertex_metric}"]
    assert ours.score == theirs.overall_score
    assert ours.status.value == theirs.overall_eval_status.value
    assert [plain(s) for s in ours.rubric_scores or []] == [
        plain(s) for s in theirs.overall_rubric_scores or []
    ]
    if theirs.per_invocation_results:  # ADK returns none when Vertex gave nothing at all
        assert [(r.score, r.status.value) for r in ours.per_invocation] == [
            (r.score, r.eval_status.value) for r in theirs.per_invocation_results
        ]
        assert plain(ours.per_invocation[-1].rubric_scores) == plain(
            theirs.per_invocation_results[-1].rubric_scores
        )
    else:
        assert ours.status == EvalStatus.NOT_EVALUATED and ours.rubric_scores is None


def test_the_dataset_sent_holds_one_eval_case_with_the_agent_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service = FakeService([RuntimeError("quota exceeded")])
    with fake_sdk(monkeypatch, service):
        data = vertex_ai.agent_data([turn(0, final="Hi")])
        score = vertex_ai.score_agent_data(
            data,
            {"GOOGLE_API_KEY": "k"},
            lambda sdk: sdk.types.RubricMetric.MULTI_TURN_TASK_SUCCESS,
        )
    assert score == vertex_ai.VertexScore(
        None, reason="Vertex AI call failed: RuntimeError: quota exceeded"
    )
    (call,) = service.calls
    (case,) = call["dataset"]["eval_cases"]
    assert case["kind"] == "EvalCase"
    agent_data = case["agent_data"]
    assert agent_data["kind"] == "AgentData"
    assert agent_data["agents"]["planner"] == {
        "kind": "AgentConfig",
        "agent_id": "planner",
        "instruction": "Book flights (v0).",
        "tools": [{"function_declarations": [{"name": "find_flight", "description": "Find"}]}],
    }
    (conversation_turn,) = agent_data["turns"]
    assert conversation_turn["kind"] == "ConversationTurn"
    assert (conversation_turn["turn_index"], conversation_turn["turn_id"]) == (0, "inv-0")
    assert conversation_turn["events"][-1] == {
        "kind": "AgentEvent",
        "author": "agent",
        "content": {"role": "model", "parts": [{"text": "Hi"}]},
    }
