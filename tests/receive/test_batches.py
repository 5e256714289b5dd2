"""A backlog of closed sessions is scored in batches (bounded in sessions and in spans), read
from and forgotten in the buffer together, and recorded exactly as one case at a time was."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assay.receive.buffer import Limits, SpanBuffer
from assay.receive.scoring import LiveRun, Scored
from assay.receive.server import Receiver
from assay.runner.jobs import given_config
from assay.traces import Session, Span

_USER = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Weather?"}]}])
_REPLY = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}])


def _trace(number: int, children: int, *, root: bool = True, conversation: str = "") -> list[Span]:
    """One agent turn: ``children`` chat spans under an ``invoke_agent`` root (left out when
    ``root`` is False: the trace has not ended)."""
    trace_id, root_id = f"{number:032x}", f"{number:08x}{0:08x}"
    keyed = {"gen_ai.conversation.id": conversation} if conversation else {}
    spans = [
        Span(trace_id, f"{number:08x}{n + 1:08x}", root_id, "chat m", start_ns=10 + n,
             end_ns=20 + n, attributes={
                 "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                 "gen_ai.output.messages": _REPLY, "gen_ai.usage.input_tokens": 7, **keyed})
        for n in range(children)
    ]  # fmt: skip
    if root:
        spans.append(Span(trace_id, root_id, None, "invoke_agent a", start_ns=0, end_ns=100,
                          attributes={"gen_ai.operation.name": "invoke_agent",
                                      "gen_ai.agent.name": "a", "gen_ai.input.messages": _USER,
                                      "gen_ai.output.messages": _REPLY, **keyed}))  # fmt: skip
    return spans


class _Watched(LiveRun):
    """The receiver's run, keeping each batch it was given and what it scored."""

    batches: list[int]
    scored: list[Scored]

    async def score(
        self, sessions: Sequence[tuple[Session, str]], noting: Any = None
    ) -> list[Scored]:
        self.batches.append(len(sessions))
        scored = await super().score(sessions, noting)
        self.scored.extend(scored)
        return scored


def _receiver(folder: Path, batch: int, batch_spans: int) -> Receiver:
    config = given_config({"criteria": {"tool_trajectory_avg_score": 1.0}})[0]
    run = _Watched(folder / "runs.sqlite", config, "<test>")
    run.batches, run.scored = [], []
    buffer = SpanBuffer(folder / "runs.sqlite.receive", Limits(max_sessions=50))
    run.open(None)
    return Receiver(buffer, run, batch=batch, batch_spans=batch_spans)


def test_a_backlog_is_scored_in_batches_bounded_in_sessions_and_spans(tmp_path: Path) -> None:
    receiver = _receiver(tmp_path, batch=3, batch_spans=8)
    sizes = [3, 3, 3, 3, 3, 12, 1]  # spans a session: the 12-span one is over the span bound
    for number, size in enumerate(sizes, start=1):
        receiver.buffer.add(_trace(number, size - 1), now=1.0)
    try:
        scored = asyncio.run(receiver.score_due())
        again = asyncio.run(receiver.score_due())
        run = receiver.run
        assert isinstance(run, _Watched)
        # at most 3 sessions and 8 spans a batch; a session over 8 spans is taken alone
        assert run.batches == [2, 2, 1, 1, 1]
        assert (scored, again, run.cases, receiver.buffer.open_sessions) == (7, 0, 7, 0)
    finally:
        receiver.run.close()
        receiver.buffer.close()


def test_cases_scored_in_a_batch_are_recorded_as_record_case_writes_them(tmp_path: Path) -> None:
    """One transaction for the batch, each row the case's full JSON, as before batching."""
    receiver = _receiver(tmp_path, batch=128, batch_spans=5_000)
    for number in range(1, 6):
        receiver.buffer.add(_trace(number, 2), now=1.0)
    try:
        asyncio.run(receiver.score_due())
        run = receiver.run
        assert isinstance(run, _Watched)
        expected = {
            item.result.eval_id: item.result.model_dump_json(exclude_none=True)
            for item in run.scored
        }
    finally:
        receiver.run.close()
        receiver.buffer.close()
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:
        stored = dict(db.execute("SELECT eval_id, result FROM case_results").fetchall())
    db.close()
    assert run.batches == [5]
    assert stored == expected


def test_sessions_taken_together_are_the_sessions_taken_one_at_a_time(tmp_path: Path) -> None:
    """Same spans in the same order (a session of two traces, one sent over two requests),
    same problems, same digests."""
    buffer = SpanBuffer(tmp_path / "b.receive", Limits(settle_s=1.0, max_spans=9))
    first = _trace(1, 4, conversation="talk")
    buffer.add(first[:2], now=1.0)
    buffer.add(first[2:] + _trace(2, 3), now=2.0)
    buffer.add(_trace(3, 5, conversation="talk"), now=3.0)  # 11 spans, over 9: a problem
    buffer.add(_trace(4, 1, root=False), now=3.0)
    keys = sorted(buffer.due(now=1_000.0))
    try:
        together = buffer.take_many(keys)
        alone = [buffer.take(key) for key in keys]
        assert keys == [f"{2:032x}", f"{4:032x}", "talk"]  # the 4th never ended (idle)
        assert together == alone
        talk = next(item for item in together if item.key == "talk")
        assert [s.span_id for s in talk.spans][:4] == [s.span_id for s in first[:4]]
        assert talk.problem is not None and "more than 9 spans" in talk.problem
        assert len(talk.spans) == 9
        never = together[1].problem
        assert never is not None and "never ended" in never
    finally:
        buffer.close()


def test_sessions_forgotten_together_stay_forgotten_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "b.receive"
    buffer = SpanBuffer(path)
    for number in range(1, 5):
        buffer.add(_trace(number, 2), now=1.0)
    closed = buffer.take_many(buffer.due(now=2.0))
    buffer.done_many(closed[:3], now=2.0)
    digests = [item.digest for item in closed]
    buffer.close()

    reopened = SpanBuffer(path)
    try:
        assert reopened.scored_among(digests) == set(digests[:3])
        assert reopened.due(now=3.0) == [closed[3].key]
        assert reopened.open_sessions == 1
    finally:
        reopened.close()


def test_after_a_restart_the_session_idle_longest_is_still_closed_early_for_a_new_one(
    tmp_path: Path,
) -> None:
    """The open sessions are counted again from the file: at the cap, a new session closes the
    one idle longest early, with the problem saying so; an ended session is never closed
    early (it only waits to be scored)."""
    path = tmp_path / "b.receive"
    limits = Limits(max_sessions=2, idle_timeout_s=3_600, settle_s=3_600)
    buffer = SpanBuffer(path, limits)
    buffer.add(_trace(3, 2, conversation="ended"), now=0.5)
    buffer.add(_trace(1, 2, root=False), now=1.0)
    buffer.add(_trace(2, 2, root=False), now=2.0)
    assert buffer.due(now=2.0) == []  # two open, one ended: nothing closed early yet
    buffer.close()

    reopened = SpanBuffer(path, limits)
    try:
        assert reopened.due(now=3.0) == []
        reopened.add(_trace(4, 2, root=False), now=3.0)
        [early] = reopened.due(now=3.0)
        assert early == f"{1:032x}"
        problem = reopened.take(early).problem
        assert problem is not None and "closed early" in problem
        assert "never ended" not in problem
    finally:
        reopened.close()
