"""Inference: run the agent over each case's conversation and record its invocations.

Each case and run gets a fresh agent session seeded from the case's ``session_input``. A user
simulator supplies the user's messages (the static conversation replayed in order, or an
LLM-backed simulated user for a ``conversation_scenario``); each message is one agent turn,
recorded as an ADK ``Invocation`` with the agent's ``app_details``.

An agent that raises, times out (``turn_timeout_s`` per turn) or returns something unusable ends
that case's conversation: the case gets the failure as its reason (it is NOT_EVALUATED) and
every other case goes on. ADK aborts the whole run here.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from assay.agents.base import (
    Agent,
    AgentError,
    AgentFactory,
    AgentTurn,
    CaseContext,
    Session,
    ToolRunner,
)
from assay.agents.mock_tools import mock_tool_runner
from assay.evalset.case import EvalCase
from assay.evalset.content import Content
from assay.evalset.invocation import Invocation, InvocationEvents
from assay.llm.base import TokenUsage
from assay.llm.slots import working_on

CaseOrder = Callable[[EvalCase, int], tuple[int, ...]]
"""A case's and run's place in the run's order (eval set, case, run): which of the LLM calls
waiting for a slot goes first (:mod:`assay.llm.slots`)."""


@dataclass(frozen=True)
class InferenceSettings:
    """How inference runs: runs per case, cases at once, the per-turn time limit, mocked tools.

    A conversation the agent fails (it raises, hangs past ``turn_timeout_s`` or returns
    something unusable) is run again from a fresh agent and session, up to ``attempts`` times
    in all, waiting ``backoff_s``, then twice that, and so on, between attempts; a failure of
    the simulated user is not retried here (its LLM client has retried already)."""

    num_runs: int = 1
    concurrency: int = 4
    turn_timeout_s: float = 300.0
    mock_tools: bool = False
    attempts: int = 2
    backoff_s: float = 1.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")
        if self.backoff_s < 0:
            raise ValueError(f"backoff_s must not be negative, got {self.backoff_s}")
        if self.num_runs < 1:
            raise ValueError(f"num_runs must be at least 1, got {self.num_runs}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.turn_timeout_s <= 0:
            raise ValueError(f"turn_timeout_s must be positive, got {self.turn_timeout_s}")


class NextMessage(Protocol):
    """What a user simulator answers (see :mod:`assay.simulation`)."""

    @property
    def status(self) -> Any: ...

    @property
    def user_message(self) -> Content | None: ...


class Simulator(Protocol):
    """The user's side of a conversation."""

    async def next_message(self, history: Sequence[Invocation]) -> NextMessage: ...


@dataclass
class CaseInference:
    """One run of one case: the invocations recorded, and why it stopped early if it did."""

    eval_id: str
    run: int
    invocations: list[Invocation] = field(default_factory=list)
    error: str | None = None
    stop: str = ""
    attempts: int = 1
    retryable: bool = False
    simulator_usage: TokenUsage | None = None
    """What the simulated user's LLM calls cost (None for a replayed conversation)."""
    working_s: float = 0.0
    """The seconds the conversation took (every attempt, and the waits between them), less
    those its simulated user's calls only waited for a judge slot."""


def _new_session(case: EvalCase, run: int, tool_runner: ToolRunner | None) -> Session:
    given = case.session_input
    return Session(
        app_name=given.app_name if given else "assay",
        user_id=given.user_id if given else "test_user_id",
        session_id=(given.session_id if given and given.session_id else None)
        or f"___eval___session___{uuid.uuid4()}",
        state=dict(given.state) if given else {},
        tool_runner=tool_runner,
    )


def _invocation(
    case: EvalCase, run: int, index: int, user: Content, turn: AgentTurn, agent: Agent, took: float
) -> Invocation:
    return Invocation(
        invocation_id=f"{case.eval_id}-run{run}-turn{index}",
        user_content=user,
        final_response=turn.final_response,
        intermediate_data=InvocationEvents(invocation_events=turn.events),
        creation_timestamp=time.time(),
        duration=round(took, 6),
        app_details=agent.app_details(),
    )


async def _turn(agent: Agent, user: Content, session: Session, timeout_s: float) -> AgentTurn:
    try:
        async with asyncio.timeout(timeout_s):
            return await agent.turn(user, session)
    except TimeoutError:
        raise AgentError(f"the agent did not answer within {timeout_s:g} s") from None
    except AgentError:
        raise
    except Exception as exc:  # the agent's own failure, whatever it is
        raise AgentError(f"the agent raised {type(exc).__name__}: {exc}") from None


async def infer_case(
    case: EvalCase,
    run: int,
    agent: Agent,
    simulator: Simulator,
    settings: InferenceSettings,
) -> CaseInference:
    """Drive one conversation: the simulator's messages, the agent's turns, until the simulator
    stops or the agent fails."""
    result = await _converse(case, run, agent, simulator, settings)
    usage = getattr(simulator, "usage", None)
    if isinstance(usage, TokenUsage):
        result.simulator_usage = usage
    return result


async def _converse(
    case: EvalCase, run: int, agent: Agent, simulator: Simulator, settings: InferenceSettings
) -> CaseInference:
    tools = mock_tool_runner(case) if settings.mock_tools else None
    session = _new_session(case, run, tools)
    result = CaseInference(case.eval_id, run)
    while True:
        try:
            message = await simulator.next_message(list(result.invocations))
        except Exception as exc:  # the simulated user's LLM failed for good
            result.error = f"the user simulator failed: {exc}"
            return result
        status = str(getattr(message.status, "value", message.status))
        if message.user_message is None:
            result.stop = status
            reason = getattr(message, "reason", None)
            if status == "no_message_generated":
                result.error = (
                    f"the user simulator gave no message{': ' + reason if reason else ''}"
                )
            return result
        started = time.perf_counter()
        try:
            turn = await _turn(agent, message.user_message, session, settings.turn_timeout_s)
        except AgentError as exc:
            index = len(result.invocations) + 1
            result.error = f"turn {index}: {exc}"
            result.retryable = exc.retryable
            return result
        invocation = _invocation(
            case,
            run,
            len(result.invocations),
            message.user_message,
            turn,
            agent,
            time.perf_counter() - started,
        )
        result.invocations.append(invocation)
        session.history.append(invocation)


class Conversations:
    """Runs one case's run at a time, as asked, at most ``settings.concurrency`` at once (one
    semaphore for every conversation it runs): each from a fresh agent, retried with backoff as
    the settings say. ``cases`` is what each agent factory is told of the eval set."""

    def __init__(
        self,
        cases: Sequence[EvalCase],
        make_agent: AgentFactory,
        make_simulator: Callable[[CaseContext, Agent], Simulator],
        settings: InferenceSettings,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.cases = cases
        self.make_agent = make_agent
        self.make_simulator = make_simulator
        self.settings = settings
        self.sleep = sleep
        self.slots = asyncio.Semaphore(settings.concurrency)

    async def _attempt(self, context: CaseContext) -> CaseInference:
        case, run = context.case, context.run
        try:
            made = self.make_agent(context)
            agent = await made if isinstance(made, Awaitable) else made
        except Exception as exc:  # a factory that fails for this case only
            return CaseInference(
                case.eval_id, run, error=f"making the agent failed: {exc}", retryable=True
            )
        try:
            simulator = self.make_simulator(context, agent)
            return await infer_case(case, run, agent, simulator, self.settings)
        finally:
            await agent.aclose()

    async def run(self, case: EvalCase, run: int, where: tuple[int, ...]) -> CaseInference:
        """``case``'s run ``run``; ``where`` places its LLM calls in the run's order."""
        settings = self.settings
        context = CaseContext(case=case, cases=self.cases, run=run)
        async with self.slots:
            with working_on(where) as clock:
                started = time.perf_counter()
                for tried in range(1, settings.attempts + 1):
                    done = await self._attempt(context)
                    done.attempts = tried
                    if done.error is None or not done.retryable or tried == settings.attempts:
                        break
                    await self.sleep(settings.backoff_s * 2 ** (tried - 1))
                done.working_s = clock.working_s(time.perf_counter() - started)
        if done.error is not None and done.attempts > 1:
            done.error += f" (after {done.attempts} attempts)"
        return done


async def run_inference(
    cases: Sequence[EvalCase],
    make_agent: AgentFactory,
    make_simulator: Callable[[CaseContext, Agent], Simulator],
    settings: InferenceSettings,
    on_done: Callable[[CaseInference], None] | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    order: CaseOrder | None = None,
) -> list[CaseInference]:
    """Every case, ``settings.num_runs`` times, at most ``settings.concurrency`` at once; the
    results in case order, runs together (all held: a run that scores as it goes streams them
    instead, :class:`~assay.runner.agent_run.InferenceStream`). ``order`` places each case's LLM
    calls (its simulated user's) in the run (by default its place in ``cases``, then the run)."""
    conversations = Conversations(cases, make_agent, make_simulator, settings, sleep)
    place = {id(case): index for index, case in enumerate(cases)}

    async def one(case: EvalCase, run: int) -> CaseInference:
        where = order(case, run) if order is not None else (place[id(case)], run)
        done = await conversations.run(case, run, where)
        if on_done is not None:
            on_done(done)
        return done

    jobs = [one(case, run) for case in cases for run in range(1, settings.num_runs + 1)]
    return list(await asyncio.gather(*jobs))
