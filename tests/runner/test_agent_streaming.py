"""An agent run streams into scoring: a case's conversations start when scoring reaches it, are
scored as soon as they end (judging earlier cases while the agent runs later ones), and are not
held once scored, so memory is bounded by the scoring window, not by the eval set."""

from __future__ import annotations

import asyncio
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from assay.agents import FunctionAgent, Session
from assay.agents.base import ToolCall, TurnResult
from assay.config import EvalConfig
from assay.evalset.case import EvalCase, EvalSet
from assay.evalset.io import LoadedEvalSet
from assay.results.model import EvalCaseResult
from assay.runner.agent_run import AgentSettings
from assay.runner.evaluate import EvalSetJob, evaluate, evaluate_sync
from assay.runner.inference import CaseInference, InferenceSettings

MB = 1024 * 1024
TRAJECTORY = {"criteria": {"tool_trajectory_avg_score": 1.0}}


def _case(n: int) -> EvalCase:
    invocation = {
        "invocation_id": f"i{n}",
        "user_content": {"role": "user", "parts": [{"text": f"case {n}"}]},
        "final_response": {"role": "model", "parts": [{"text": "done"}]},
        "intermediate_data": {"tool_uses": [{"name": "lookup", "args": {"n": n}}]},
    }
    return EvalCase.model_validate({"eval_id": f"c{n}", "conversation": [invocation]})


def _job(count: int) -> EvalSetJob:
    eval_set = EvalSet(eval_set_id="big", eval_cases=[_case(n) for n in range(count)])
    loaded = LoadedEvalSet(eval_set, Path("big.evalset.json"), "json")
    return EvalSetJob(loaded, EvalConfig.model_validate(TRAJECTORY))


def _number(message: str) -> int:
    return int(message.rsplit(" ", 1)[1])


def _looking_up(result_bytes: int) -> Any:
    """An agent whose one tool call returns a result of its own, ``result_bytes`` long."""

    def agent(message: str, session: Session) -> TurnResult:
        n = _number(message)
        found = f"{n:08d}" + "r" * (result_bytes - 8)  # a new string for every case
        call = ToolCall(name="lookup", args={"n": n}, response={"result": found})
        return TurnResult(final_response="done", tool_calls=[call])

    return agent


def _settings(agent: Any, concurrency: int = 4) -> AgentSettings:
    return AgentSettings(
        make_agent=lambda context: FunctionAgent(agent, name="bot"),
        inference=InferenceSettings(concurrency=concurrency, attempts=1),
    )


def test_an_agent_runs_conversations_too_large_to_hold_all_within_a_bounded_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 400 cases with a 512 KB tool result each: 200 MB if the run held its conversations
    monkeypatch.setenv("ASSAY_KEEP_BYTES", str(4 * MB))
    job = _job(400)
    tracemalloc.start()
    try:
        [result] = evaluate_sync([job], agent=_settings(_looking_up(512 * 1024)), progress=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.assay is not None and result.assay.summary.passed == 400
    assert result.eval_case_results[399].eval_id == "c399"
    assert peak < 60 * MB, f"peak {peak / MB:.0f} MB"


def test_a_case_conversation_starts_only_when_scoring_reaches_it() -> None:
    scored: list[str] = []
    ahead: list[int] = []  # cases started past those scored, as each conversation starts

    def agent(message: str, session: Session) -> TurnResult:
        ahead.append(_number(message) - len(scored))
        return _looking_up(16)(message, session)

    [result] = evaluate_sync(
        [_job(300)],
        agent=_settings(agent, concurrency=1),
        concurrency=1,
        on_case=lambda _job, case: scored.append(case.eval_id),
        progress=False,
    )
    assert result.assay is not None and result.assay.summary.passed == 300
    assert scored == [f"c{n}" for n in range(300)]
    assert max(ahead) <= 64  # the scoring window (64 at this concurrency), not the set


def test_a_case_is_scored_while_the_agent_still_runs_later_cases() -> None:
    events: list[str] = []
    first_scored = asyncio.Event()

    async def agent(message: str, session: Session) -> TurnResult:
        n = _number(message)
        if n == 9:  # the last case waits until the first is scored (a timeout if it never is)
            try:
                await asyncio.wait_for(first_scored.wait(), timeout=30)
            except TimeoutError:
                events.append("gave up waiting")
        events.append(f"agent answered c{n}")
        return _looking_up(16)(message, session)

    def on_case(_job: EvalSetJob, case: EvalCaseResult) -> None:
        events.append(f"scored {case.eval_id}")
        if case.eval_id == "c0":
            first_scored.set()

    [result] = evaluate_sync(
        [_job(10)], agent=_settings(agent, concurrency=2), on_case=on_case, progress=False
    )
    assert result.assay is not None and result.assay.summary.passed == 10
    assert "gave up waiting" not in events
    assert events.index("scored c0") < events.index("agent answered c9")


def test_each_set_conversations_still_reach_on_inference_in_case_order_with_every_run() -> None:
    seen: list[tuple[str, int]] = []

    def told(_job: EvalSetJob, done: list[CaseInference]) -> None:
        seen.extend((inference.eval_id, inference.run) for inference in done)

    agent = AgentSettings(
        make_agent=lambda context: FunctionAgent(_looking_up(16), name="bot"),
        inference=InferenceSettings(num_runs=2, concurrency=3),
    )

    async def go() -> None:
        await evaluate([_job(5)], agent=agent, on_inference=told, progress=False)

    asyncio.run(go())
    assert seen == [(f"c{n}", run) for n in range(5) for run in (1, 2)]


def test_a_failed_scoring_stops_the_conversations_and_leaves_none_waiting() -> None:
    started: list[int] = []

    async def agent(message: str, session: Session) -> TurnResult:
        started.append(_number(message))
        await asyncio.sleep(0)
        return _looking_up(16)(message, session)

    def on_case(_job: EvalSetJob, case: EvalCaseResult) -> None:
        if case.eval_id == "c3":
            raise RuntimeError("the caller broke")

    with pytest.raises(RuntimeError, match="the caller broke"):
        evaluate_sync([_job(200)], agent=_settings(agent), on_case=on_case, progress=False)
    assert len(started) < 200
