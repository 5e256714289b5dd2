"""A metric is one thing: a judged metric defined here alone, registered with one line, is scored,
listed by ``assay metrics``, labelled (agreement) and reported, with no table elsewhere to edit."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from rich.console import Console

from assay.agreement.agree import agree
from assay.agreement.labels import LABEL_SETS, load_labels
from assay.config import CRITERION_TYPES, LlmAsAJudgeCriterion, load_config
from assay.errors import LabelsError
from assay.evalset import EvalCase, EvalSet, Invocation, load_eval_set, write_eval_set
from assay.evalset.content import content_text
from assay.llm.base import LlmRequest
from assay.llm.judge import Judge
from assay.metrics.base import (
    EvalStatus,
    MetricInfo,
    MetricResult,
    PerInvocationResult,
    mean_result,
    status_for,
)
from assay.metrics.declaration import Labelling, MetricDeclaration
from assay.metrics.judging import Parsed, ask_samples, json_objects
from assay.metrics.notes import InvocationNotes, MetricNotes
from assay.metrics.registry import (
    default_registry,
    register_metric,
    unregister_metric,
)
from assay.report.console import results_table
from assay.report.markdown import escape_markdown, render_markdown
from assay.results import load_traces
from assay.runner.evaluate import EvalSetJob, JudgeSettings, evaluate
from tests._support import RunCli

NAME = "politeness_v1"
PROMPT = "Is the agent's reply polite? Answer in JSON, verdict yes or no.\n\nReply: {reply}"


def _parse(text: str) -> Parsed[str]:
    for obj in json_objects(text):
        verdict = obj.get("verdict")
        if verdict in ("yes", "no"):
            return Parsed(verdict, score=1.0 if verdict == "yes" else 0.0, verdict=verdict)
    return Parsed(None, "no verdict")


class PolitenessMetric:
    """A judged yes/no metric per invocation: is the reply polite?"""

    info: ClassVar[MetricInfo] = MetricInfo(
        name=NAME,
        description="Whether each reply is polite, as an LLM judge says (1.0 yes, 0.0 no).",
        needs_judge=True,
        source="custom",
    )

    def __init__(self, criterion: LlmAsAJudgeCriterion, judge: Judge) -> None:
        self.criterion = criterion
        self.judge = judge

    async def evaluate(
        self, actual: Sequence[Invocation], expected: Sequence[Invocation] | None, case: EvalCase
    ) -> MetricResult:
        per_invocation = []
        notes = []
        for invocation in actual:
            request = LlmRequest.user(
                PROMPT.format(reply=content_text(invocation.final_response)),
                schema_name="politeness_verdict",
            )
            (outcome,) = await ask_samples(
                self.judge, request, num_samples=1, case_id=case.eval_id, parse=_parse
            )
            score = outcome.note.score
            per_invocation.append(
                PerInvocationResult(
                    invocation, score=score, status=status_for(score, self.criterion.threshold)
                )
            )
            notes.append(
                InvocationNotes(invocation_id=invocation.invocation_id, samples=[outcome.note])
            )
        result = mean_result(NAME, self.criterion, per_invocation)
        result.notes = MetricNotes(judge_model=self.judge.model, per_invocation=notes)
        return result


POLITENESS = MetricDeclaration(
    PolitenessMetric,
    criterion=LlmAsAJudgeCriterion,
    labelling=Labelling(labels=("polite", "rude"), field="verdict", positive=("yes",)),
)


@pytest.fixture
def registered() -> Iterator[MetricDeclaration]:
    register_metric(POLITENESS)  # the one line
    yield POLITENESS
    unregister_metric(NAME)


def _turn(case: str, reply: str) -> Invocation:
    return Invocation.model_validate(
        {
            "invocation_id": f"{case}-1",
            "user_content": {"role": "user", "parts": [{"text": "Where is my order?"}]},
            "final_response": {"role": "model", "parts": [{"text": reply}]},
        }
    )


REPLIES = {"kind": "Happy to help: it ships today.", "curt": "Figure it out yourself."}


def _project(tmp_path: Path) -> Path:
    cases = [
        EvalCase.model_validate(
            {"eval_id": name, "conversation": [_turn(name, reply).model_dump(mode="json")]}
        )
        for name, reply in REPLIES.items()
    ]
    write_eval_set(EvalSet(eval_set_id="shop", eval_cases=cases), tmp_path / "shop.evalset.json")
    traces = {
        name: [_turn(name, reply).model_dump(mode="json", exclude_none=True)]
        for name, reply in REPLIES.items()
    }
    (tmp_path / "traces.json").write_text(json.dumps(traces), encoding="utf-8")
    config = {"criteria": {NAME: {"threshold": 1.0, "judge_model_options": {"num_samples": 1}}}}
    (tmp_path / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    rules = [
        {"match": "Happy to help", "reply": {"verdict": "yes"}},
        {"match": "Figure it out", "reply": {"verdict": "no"}},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rules": rules, "default": "no"}), encoding="utf-8")
    return script


def _settings(script: Path) -> JudgeSettings:
    return JudgeSettings(model=f"scripted:{script}", cache=False, profile=None)


def _scored(tmp_path: Path) -> Any:
    script = _project(tmp_path)
    job = EvalSetJob(
        load_eval_set(tmp_path / "shop.evalset.json"),
        load_config(tmp_path / "test_config.json"),
    )
    traces = load_traces([tmp_path / "traces.json"])
    (result,) = asyncio.run(evaluate([job], traces, judges=_settings(script), progress=False))
    return result


def test_a_registered_metric_is_known_to_the_config_and_forgotten_when_unregistered() -> None:
    assert NAME not in CRITERION_TYPES
    register_metric(POLITENESS)
    try:
        assert CRITERION_TYPES[NAME] is LlmAsAJudgeCriterion
        assert default_registry().is_judged(NAME)
        with pytest.raises(ValueError, match="already registered"):
            register_metric(POLITENESS)
    finally:
        unregister_metric(NAME)
    assert NAME not in CRITERION_TYPES
    assert not default_registry().is_registered(NAME)


def test_a_new_judged_metric_is_scored_with_its_judge(
    registered: MetricDeclaration, tmp_path: Path
) -> None:
    result = _scored(tmp_path)

    status = {
        case.eval_id: next(r for r in case.overall_eval_metric_results if r.metric_name == NAME)
        for case in result.eval_case_results
    }
    assert (status["kind"].eval_status, status["kind"].score) == (EvalStatus.PASSED, 1.0)
    assert (status["curt"].eval_status, status["curt"].score) == (EvalStatus.FAILED, 0.0)


def test_a_new_judged_metric_is_reported_in_the_console_and_markdown(
    registered: MetricDeclaration, tmp_path: Path
) -> None:
    result = _scored(tmp_path)

    console = Console(file=io.StringIO(), width=240, color_system=None, highlight=False)
    console.print(results_table(result))
    table = console.file.getvalue()  # type: ignore[attr-defined]
    assert NAME in table
    curt = next(line for line in table.splitlines() if "curt" in line)
    assert "FAIL" in curt.upper()
    markdown = render_markdown([result])
    assert escape_markdown(NAME) in markdown
    assert "judge said no" in markdown  # why it failed: the judge's verdict, as declared


def test_a_new_judged_metric_is_listed_by_assay_metrics(
    registered: MetricDeclaration, run_cli: RunCli
) -> None:
    listed = run_cli("metrics", "--json")

    assert listed.code == 0
    entry = next(e for e in json.loads(listed.out) if e["name"] == NAME)
    assert entry["needs_judge"] and entry["implemented"]
    assert entry["source"] == "custom"
    assert entry["description"] == PolitenessMetric.info.description
    assert NAME in run_cli("metrics").out


def test_a_new_judged_metric_takes_labels_and_its_agreement_is_measured(
    registered: MetricDeclaration, tmp_path: Path
) -> None:
    script = _project(tmp_path)
    labels = [
        {"case": "kind", "invocation": 1, "criterion": NAME, "label": "polite"},
        {"case": "curt", "invocation": 1, "criterion": NAME, "label": "polite"},
    ]
    path = tmp_path / "labels.json"
    data = {"eval_set": "shop.evalset.json", "traces": "traces.json", "labels": labels}
    path.write_text(json.dumps(data), encoding="utf-8")

    run = load_labels(path)
    report = asyncio.run(agree(run, _settings(script)))

    assert LABEL_SETS[NAME] == ("polite", "rude")
    said = {c.label.case: c.judge for c in report.compared}
    assert said == {"kind": "polite", "curt": "rude"}
    found = report.by_criterion[NAME]
    assert (found.pairs, found.judged, found.agree) == (2, 2, 1)


def test_a_label_the_new_metric_does_not_take_is_refused(
    registered: MetricDeclaration, tmp_path: Path
) -> None:
    _project(tmp_path)
    path = tmp_path / "labels.json"
    bad = [{"case": "kind", "invocation": 1, "criterion": NAME, "label": "yes"}]
    data = {"eval_set": "shop.evalset.json", "traces": "traces.json", "labels": bad}
    path.write_text(json.dumps(data), encoding="utf-8")

    with pytest.raises(LabelsError, match="expected polite or rude; got 'yes'"):
        load_labels(path)
