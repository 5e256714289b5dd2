"""Inference: fresh sessions, turns replayed in order, failures kept to their own case."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from assay.agents import AgentTurn, FunctionAgent, Session, TurnResult
from assay.agents.mock_tools import recorded_tools
from assay.evalset.case import EvalCase
from assay.evalset.content import Content, Part
from assay.evalset.invocation import Invocation
from assay.runner.inference import CaseInference, InferenceSettings, infer_case, run_inference


@dataclass
class _Next:
    status: str
    user_message: Content | None


class _Replay:
    """Replays the case's user turns, then stops."""

    def __init__(self, case: EvalCase) -> None:
        self.turns = [inv.user_content for inv in case.conversation or []]

    async def next_message(self, history: Sequence[Invocation]) -> _Next:
        if len(history) < len(self.turns):
            return _Next("success", self.turns[len(history)])
        return _Next("stop_signal_detected", None)


def _case(eval_id: str, *texts: str, state: dict[str, Any] | None = None) -> EvalCase:
    conversation = [
        {
            "invocation_id": f"i{i}",
            "user_content": {"role": "user", "parts": [{"text": text}]},
            "intermediate_data": {
                "tool_uses": [{"id": "c1", "name": "lookup", "args": {"q": text}}],
                "tool_responses": [{"id": "c1", "name": "lookup", "response": {"answer": i}}],
            },
        }
        for i, text in enumerate(texts)
    ]
    session_input = {"app_name": "app", "user_id": "u1", "state": state or {}}
    return EvalCase.model_validate(
        {"eval_id": eval_id, "conversation": conversation, "session_input": session_input}
    )


async def _echo(message: str, session: Session) -> str:
    session.state["turns"] = session.state.get("turns", 0) + 1
    return f"{message} ({session.state['turns']}, history {len(session.history)})"


def _run(
    cases: list[EvalCase], agent: Any, waits: list[float] | None = None, **settings: Any
) -> list[CaseInference]:
    async def sleep(seconds: float) -> None:  # backoffs are recorded, not slept
        if waits is not None:
            waits.append(seconds)

    return asyncio.run(
        run_inference(
            cases,
            lambda context: FunctionAgent(agent, name="bot"),
            lambda context, _agent: _Replay(context.case),
            InferenceSettings(**settings),
            sleep=sleep,
        )
    )


def test_each_user_turn_is_one_invocation_and_each_run_a_fresh_session() -> None:
    case = _case("c", "one", "two")
    [first, second] = _run([case], _echo, num_runs=2)
    for run, done in ((1, first), (2, second)):
        assert done.run == run and done.error is None
        answers = [inv.final_response.parts[0].text for inv in done.invocations]  # type: ignore[union-attr,index]
        assert answers == ["one (1, history 0)", "two (2, history 1)"]  # state kept within a run
        assert [inv.invocation_id for inv in done.invocations] == [
            f"c-run{run}-turn0",
            f"c-run{run}-turn1",
        ]
        assert all(inv.duration is not None for inv in done.invocations)


def test_the_session_is_seeded_from_session_input_and_not_shared_between_cases() -> None:
    seen: list[tuple[str, str, dict[str, Any]]] = []

    def agent(message: str, session: Session) -> str:
        seen.append((session.app_name, session.user_id, dict(session.state)))
        session.state["touched"] = True
        return "ok"

    _run([_case("a", "x", state={"tier": "gold"}), _case("b", "y", state={"tier": "gold"})], agent)
    assert seen == [("app", "u1", {"tier": "gold"})] * 2


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        ("raise", "turn 2: the agent raised RuntimeError: tool exploded"),
        ("hang", "turn 2: the agent did not answer within 0.2 s"),
        ("garbage", "turn 2: the agent returned int"),
    ],
)
def test_an_agent_failure_ends_only_its_own_case_with_the_reason(
    behaviour: str, reason: str
) -> None:
    async def agent(message: str, session: Session) -> Any:
        if message == "bad":
            if behaviour == "raise":
                raise RuntimeError("tool exploded")
            if behaviour == "hang":
                await asyncio.sleep(30)
            return 42
        return "fine"

    broken, healthy = _run(
        [_case("broken", "ok", "bad", "never"), _case("healthy", "ok", "ok")],
        agent,
        turn_timeout_s=0.2,
    )
    assert broken.error is not None and broken.error.startswith(reason)
    assert broken.error.endswith("(after 2 attempts)") and broken.attempts == 2
    assert len(broken.invocations) == 1  # the turn before the failure is kept
    assert healthy.error is None and len(healthy.invocations) == 2


def test_a_failed_conversation_is_run_again_from_a_fresh_session_after_a_backoff() -> None:
    calls: list[tuple[str, int]] = []

    def flaky(message: str, session: Session) -> str:
        session.state["seen"] = session.state.get("seen", 0) + 1
        calls.append((message, session.state["seen"]))
        if len(calls) <= 4 and message == "two":
            raise ConnectionError("reset by peer")
        return "fine"

    waits: list[float] = []
    [done] = _run([_case("c", "one", "two")], flaky, waits, attempts=3, backoff_s=0.5)
    assert done.error is None and done.attempts == 3 and len(done.invocations) == 2
    assert waits == [0.5, 1.0]  # doubling backoff between attempts
    # every attempt starts over: turn one again, with a fresh session state
    assert calls == [("one", 1), ("two", 2)] * 3


def test_one_attempt_means_no_retry_and_no_backoff() -> None:
    def broken(message: str, session: Session) -> str:
        raise ValueError("bad")

    waits: list[float] = []
    [done] = _run([_case("c", "x")], broken, waits, attempts=1)
    assert done.error == "turn 1: the agent raised ValueError: bad" and waits == []


def test_a_simulator_that_gives_no_message_is_not_retried() -> None:
    class Silent:
        async def next_message(self, history: Sequence[Invocation]) -> _Next:
            return _Next("no_message_generated", None)

    made: list[int] = []

    def make(context: Any) -> FunctionAgent:
        made.append(context.run)
        return FunctionAgent(_echo)

    done = asyncio.run(
        run_inference([_case("c", "x")], make, lambda c, a: Silent(), InferenceSettings())
    )
    assert made == [1] and done[0].error is not None and "no message" in done[0].error


def test_concurrency_bounds_the_cases_in_flight() -> None:
    active = 0
    most = 0

    async def agent(message: str, session: Session) -> str:
        nonlocal active, most
        active += 1
        most = max(most, active)
        await asyncio.sleep(0.02)
        active -= 1
        return "ok"

    done = _run([_case(f"c{i}", "x") for i in range(8)], agent, concurrency=3)
    assert len(done) == 8 and most == 3


def test_mocked_tools_answer_from_the_case_s_recorded_responses() -> None:
    async def agent(message: str, session: Session) -> TurnResult:
        found = await session.call_tool("lookup", {"q": message})
        missing = await session.call_tool("lookup", {"q": "unrecorded"})
        return TurnResult(final_response=f"{found} / {missing}")

    [done] = _run([_case("c", "first", "second")], agent, mock_tools=True)
    answers = [inv.final_response.parts[0].text for inv in done.invocations]  # type: ignore[union-attr,index]
    assert answers[0].startswith(
        "{'answer': 0} / {'error': \"no recorded response for tool 'lookup'"
    )
    assert answers[1].startswith("{'answer': 1}")
    assert recorded_tools(_case("c", "q"))  # the index the mock reads


def test_without_mocking_call_tool_runs_the_real_function() -> None:
    async def agent(message: str, session: Session) -> str:
        return str(await session.call_tool("double", {"x": 2}, lambda x: x * 2))

    [done] = _run([_case("c", "go")], agent)
    assert done.invocations[0].final_response.parts[0].text == "4"  # type: ignore[union-attr,index]


def test_a_failing_user_simulator_is_the_case_s_reason() -> None:
    class Broken:
        async def next_message(self, history: Sequence[Invocation]) -> _Next:
            raise RuntimeError("judge down")

    done = asyncio.run(
        infer_case(_case("c", "x"), 1, FunctionAgent(_echo), Broken(), InferenceSettings())
    )
    assert done.error == "the user simulator failed: judge down"
    assert done.invocations == []


def test_agent_turn_objects_pass_through_unchanged() -> None:
    turn = AgentTurn(final_response=Content(role="model", parts=[Part(text="hi")]))
    [done] = _run([_case("c", "x")], lambda message, session: turn)
    assert done.invocations[0].final_response == turn.final_response
