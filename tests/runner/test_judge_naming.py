"""Every result names the judge that produced it: the ADK fields (each judged criterion's
``judge_model_options.judge_model``, overall and per invocation) and assay's own ``assay.judges``
(model, backend, why chosen, the judge in words), for the embedded judge chosen by default."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest
from _judges import approve
from _support import Example

from assay.config import LlmAsAJudgeCriterion, load_config
from assay.evalset.io import load_eval_set
from assay.history.compact import CaseEncoder, Inputs, decode
from assay.llm import selection
from assay.llm.base import LlmBackend, LlmRequest, LlmResponse, TokenUsage
from assay.llm.models import DEFAULT_MODEL
from assay.llm.selection import JudgePool
from assay.report.console import judges_line
from assay.results.captured import Captures
from assay.results.model import EvalSetResult, JudgeInfo
from assay.results.traces import load_traces
from assay.runner.evaluate import EvalSetJob, _RecordingProvider, evaluate, judge_infos

EMBEDDED = "local:qwen2.5-coder-1.5b"
DESCRIPTION = (
    "embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M "
    "(no --judge-model, no ASSAY_JUDGE_MODEL, no Gemini credentials)"
)
WITH_JUDGE_OPTIONS = (
    "final_response_match_v2",
    "rubric_based_final_response_quality_v1",
    "rubric_based_tool_use_quality_v1",
    "hallucinations_v1",
)


class FakeLocal:
    """Stands in for the embedded judge (no model is loaded): a ``local`` backend that approves
    of everything, in the format each judge asks for."""

    def __init__(self, model: str) -> None:
        self._model = model

    @property
    def name(self) -> str:
        return "local"

    @property
    def model(self) -> str:
        return self._model

    def cache_identity(self) -> Mapping[str, Any]:
        return {}

    async def generate(self, request: LlmRequest) -> LlmResponse:
        body: dict[str, Any] = {"messages": [m.model_dump() for m in request.messages]}
        if request.response_schema is not None:
            body["response_format"] = {"json_schema": {"name": request.schema_name}}
        return LlmResponse(text=approve(body), model=self._model, usage=TokenUsage(calls=1))

    async def aclose(self) -> None:
        pass


def _backend(model: str) -> LlmBackend:
    return FakeLocal(model)


@pytest.fixture
def embedded_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """No --judge-model, no ASSAY_JUDGE_MODEL, no Gemini credentials; the embedded judge is
    installed."""
    monkeypatch.delenv("ASSAY_JUDGE_MODEL")
    monkeypatch.setattr(selection, "genai_available", lambda: True)
    monkeypatch.setattr(selection, "runtime_available", lambda: True)
    monkeypatch.setattr(selection, "installed", lambda spec: spec is DEFAULT_MODEL)


def _run(example: Example, captures: Captures | None = None) -> tuple[EvalSetResult, EvalSetJob]:
    job = EvalSetJob(load_eval_set(example.evalset), load_config(example.config), "config")
    traces = load_traces([example.traces])
    pool = JudgePool(env={}, backend_factory=_backend, cache=None)

    async def go() -> list[EvalSetResult]:
        try:
            return await evaluate([job], traces, judges=pool, captures=captures)
        finally:
            await pool.aclose()

    [result] = asyncio.run(go())
    return result, job


def _criteria(result: EvalSetResult, name: str) -> list[dict[str, Any]]:
    found = []
    for case in result.eval_case_results:
        rows = list(case.overall_eval_metric_results)
        for invocation in case.eval_metric_result_per_invocation:
            rows += invocation.eval_metric_results
        found += [row.criterion or {} for row in rows if row.metric_name == name]
    return found


@pytest.mark.usefixtures("embedded_by_default")
def test_the_embedded_judge_is_named_in_every_judged_criterion_and_in_assay_judges(
    example: Example,
) -> None:
    result, job = _run(example)

    for name in WITH_JUDGE_OPTIONS:
        criteria = _criteria(result, name)
        assert len(criteria) >= 5, name
        assert all(c["judge_model_options"]["judge_model"] == EMBEDDED for c in criteria), name
    assert result.assay is not None
    assert result.assay.judges["final_response_match_v2"] == JudgeInfo(
        model="local:",
        source="embedded",
        backend="local",
        judge_model=EMBEDDED,
        description=DESCRIPTION,
    )
    # the config is left as it was, and assay's record of it says what it said
    configured = job.config.criteria["final_response_match_v2"]
    assert isinstance(configured, LlmAsAJudgeCriterion)
    assert configured.judge_model_options.judge_model == "gemini-2.5-flash"
    recorded = result.assay.criteria["final_response_match_v2"]
    assert recorded["judge_model_options"]["judge_model"] == "gemini-2.5-flash"
    line = judges_line(result)
    assert line is not None and line.startswith(f"judge [bold]{DESCRIPTION}[/]: ")
    # the results file says the same
    written = json.loads(result.model_dump_json(exclude_none=True))
    assert written["assay"]["judges"]["safety_v1"]["description"] == DESCRIPTION


@pytest.mark.usefixtures("embedded_by_default")
def test_the_history_keeps_the_judge_each_criterion_names(example: Example) -> None:
    captures: Captures = {}
    result, job = _run(example, captures)
    encoder = CaseEncoder(Inputs([job.loaded.eval_set], load_traces([example.traces])))

    for case in result.eval_case_results:
        text = encoder.encode(case, captures.pop(id(case))).text
        back = decode(text, dict(enumerate(encoder.headers)), encoder.inputs)
        assert back == case
    assert len(encoder.headers) == 1  # one judge per metric: the rows share one header


def test_the_simulated_users_model_is_named_as_the_judges_are() -> None:
    pool = JudgePool(env={}, backend_factory=_backend)
    recording = _RecordingProvider(pool)
    plays_the_user = LlmAsAJudgeCriterion.model_validate(
        {"threshold": 0, "judge_model_options": {"judge_model": "local:smollm2"}}
    )
    recording.judge_for("user_simulator", plays_the_user)

    assert judge_infos(recording)["user_simulator"] == JudgeInfo(
        model="local:smollm2",
        source="config",
        backend="local",
        judge_model="local:smollm2",
        description="embedded SmolLM2-135M-Instruct Q4_1 (from the config)",
    )
