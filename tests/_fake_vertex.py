"""Stand-ins for the Vertex AI SDK (``vertexai``, ``agentplatform``) and ``pandas``, none of which
the test environment installs, so that assay's Vertex path and google-adk 2.13's own facade can
both run against the same fake service and be compared.

:func:`fake_sdk` puts the fakes in ``sys.modules`` and imports ADK's Vertex-backed evaluators
against them; every SDK type is a recording :class:`types.SimpleNamespace` tagged with its
``kind``, so :func:`plain` turns what either side built into comparable JSON.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

RUBRIC_METRICS = (
    "MULTI_TURN_TASK_SUCCESS",
    "MULTI_TURN_TRAJECTORY_QUALITY",
    "MULTI_TURN_TOOL_USE_QUALITY",
)


def _factory(kind: str) -> Callable[..., types.SimpleNamespace]:
    def make(**fields: Any) -> types.SimpleNamespace:
        return types.SimpleNamespace(kind=kind, **fields)

    return make


def ns(**fields: Any) -> types.SimpleNamespace:
    """A result object with these attributes."""
    return types.SimpleNamespace(**fields)


def plain(value: Any) -> Any:
    """A fake SDK object, a pydantic model (ADK's genai contents) or a container, as JSON."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, types.SimpleNamespace):
        return {k: plain(v) for k, v in vars(value).items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def vertex_result(
    mean: object,
    *,
    verdicts: Sequence[types.SimpleNamespace] = (),
    explanation: str | None = None,
    error: str | None = None,
) -> types.SimpleNamespace:
    """An ``EvaluationResult`` with one case, one candidate and one metric."""
    metric = ns(rubric_verdicts=list(verdicts), explanation=explanation, error_message=error)
    candidate = ns(metric_results={"metric": metric})
    return ns(
        summary_metrics=[ns(mean_score=mean)],
        eval_case_results=[ns(response_candidate_results=[candidate])],
    )


def verdict(
    description: str | None, met: bool | None, reasoning: str | None = None, rubric_id: str = ""
) -> types.SimpleNamespace:
    """A ``RubricVerdict`` (``met`` None: Vertex left the verdict out)."""
    rubric = ns(rubric_id=rubric_id or None, content=ns(property=ns(description=description)))
    return ns(evaluated_rubric=rubric, verdict=met, reasoning=reasoning)


@dataclass
class FakeService:
    """The fake ``client.evals``: records each call's dataset and metrics, answers in turn."""

    answers: list[Any]
    calls: list[dict[str, Any]] = field(default_factory=list)

    def evaluate(self, *, dataset: Any, metrics: list[Any]) -> Any:
        self.calls.append({"dataset": plain(dataset), "metrics": list(metrics)})
        answer = self.answers[min(len(self.calls), len(self.answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer


def fake_modules(service: FakeService) -> dict[str, types.ModuleType]:
    """``vertexai``, ``agentplatform`` and ``pandas`` modules that talk to ``service``."""
    evals = ns(
        AgentData=_factory("AgentData"),
        AgentConfig=_factory("AgentConfig"),
        ConversationTurn=_factory("ConversationTurn"),
        AgentEvent=_factory("AgentEvent"),
    )
    sdk_types = ns(
        evals=evals,
        EvalCase=_factory("EvalCase"),
        EvaluationDataset=_factory("EvaluationDataset"),
        RubricMetric=ns(**{name: f"RubricMetric.{name}" for name in RUBRIC_METRICS}),
        PrebuiltMetric=ns(
            COHERENCE="PrebuiltMetric.COHERENCE",
            SAFETY=lambda version: f"PrebuiltMetric.SAFETY/{version}",
        ),
    )

    def client(**settings: Any) -> types.SimpleNamespace:
        return ns(settings=settings, evals=service)

    modules = {}
    for name in ("vertexai", "agentplatform"):
        module = types.ModuleType(name)
        module.types = sdk_types  # type: ignore[attr-defined]
        module.Client = client  # type: ignore[attr-defined]
        modules[name] = module
    pandas = types.ModuleType("pandas")
    pandas.DataFrame = lambda records: [dict(r) for r in records]  # type: ignore[attr-defined]
    modules["pandas"] = pandas
    return modules


@contextmanager
def fake_sdk(monkeypatch: pytest.MonkeyPatch, service: FakeService) -> Iterator[None]:
    """The fake SDK in ``sys.modules``, with assay told it is installed; ADK's Vertex-backed
    evaluators imported within are dropped again afterwards."""
    for name, module in fake_modules(service).items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr("assay.metrics.vertex.sdk_installed", lambda: True)
    before = set(sys.modules)
    try:
        yield
    finally:
        for name in set(sys.modules) - before:
            if name.startswith("google.adk"):
                del sys.modules[name]
