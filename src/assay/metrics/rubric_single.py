"""The rubric judges, one rubric per question (:mod:`assay.metrics.prompts.rubric_single`).

A judge profile turns it on for a criterion (``"prompt": "one_rubric_per_call"``). Each sample
is then one call per rubric; the answers are merged into the one answer the rubric metrics read
(``{"verdicts": [{"id", "rationale", "verdict"}]}``, each rubric's choice moved to its place), so
voting, scores, notes and agreement work as for any rubric answer; the profile then decides the
merged answer's verdicts as it decides any answer's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

from assay.evalset.invocation import Invocation
from assay.evalset.rubric import Rubric
from assay.llm.base import Choice, LlmRequest, LlmResponse, TokenUsage
from assay.llm.judge import Judge
from assay.llm.profile import CriterionProfile
from assay.metrics import judge_inputs
from assay.metrics.judging import json_objects
from assay.metrics.prompts import rubric_single as prompts


def one_rubric_per_call(judge: Judge) -> bool:
    """Whether ``judge``'s profile asks for one rubric per question."""
    return judge.profile is not None and judge.profile.prompt == prompts.PROMPT


def tool_calls_text(invocation: Invocation) -> str:
    """The tool calls in order, one per line, each with what it returned."""
    lines = []
    for index, (call, response) in enumerate(judge_inputs.tool_steps(invocation), 1):
        args = json.dumps(call.args or {}, ensure_ascii=False)
        returned = json.dumps(response.response, ensure_ascii=False) if response else "(none)"
        lines.append(f"{index}. {call.name}({args}) -> {returned}")
    return "\n".join(lines) or "(no tool calls)"


def questions(
    invocation: Invocation, rubrics: Sequence[Rubric], final_answer: str | None
) -> list[tuple[str, str]]:
    """Per rubric, its id and the question about it."""
    user = judge_inputs.user_text(invocation)
    calls = tool_calls_text(invocation)
    return [
        (
            rubric.rubric_id,
            prompts.render(
                user_prompt=user,
                tool_calls=calls,
                final_answer=final_answer,
                rubric=rubric.rubric_content.text_property or "",
            ),
        )
        for rubric in rubrics
    ]


class PerRubricAsker:
    """Answers a rubric judge's request by asking ``judge`` one question per rubric."""

    def __init__(self, judge: Judge, asked: Sequence[tuple[str, str]]) -> None:
        self.judge = judge
        self.asked = list(asked)

    @property
    def profile(self) -> CriterionProfile | None:
        """The judge's profile rule, which decides the merged answer's verdicts."""
        return self.judge.profile

    @property
    def profile_source(self) -> str:
        """Where the judge's profile came from."""
        return self.judge.profile_source

    async def ask(self, request: LlmRequest, *, sample: int, case_id: str) -> LlmResponse:
        """One call per rubric (with ``request``'s generation settings), merged."""
        settings = {
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "params": request.params,
        }
        answers = await asyncio.gather(
            *(
                self.judge.ask(
                    LlmRequest.user(
                        question,
                        system=prompts.SYSTEM,
                        response_schema=prompts.SCHEMA,
                        schema_name=prompts.SCHEMA_NAME,
                        **settings,
                    ),
                    sample=sample,
                    case_id=case_id,
                )
                for _, question in self.asked
            )
        )
        return merge([rubric for rubric, _ in self.asked], answers)


def merge(rubric_ids: Sequence[str], answers: Sequence[LlmResponse]) -> LlmResponse:
    """One multi-rubric answer from one answer per rubric; a rubric whose answer says no verdict
    is left out (the metric then reports it unjudged)."""
    entries: list[str] = []
    choices: list[Choice] = []
    usage = TokenUsage()
    for rubric, answer in zip(rubric_ids, answers, strict=True):
        usage = usage + answer.usage
        verdict = _verdict(answer.text)
        if verdict is None:
            continue
        head = f'{{"id": {json.dumps(rubric, ensure_ascii=False)}, "rationale": "", "verdict": '
        at = len('{"verdicts": [') + sum(len(e) + 2 for e in entries) + len(head)
        entries.append(f"{head}{json.dumps(verdict)}}}")
        for choice in answer.choices:
            if choice.path == "verdict":
                path = f"verdicts[{len(entries) - 1}].verdict"
                choices.append(choice.model_copy(update={"path": path, "start": at}))
    text = '{"verdicts": [' + ", ".join(entries) + "]}"
    model = answers[0].model if answers else ""
    cached = bool(answers) and all(answer.cached for answer in answers)
    return LlmResponse(text=text, model=model, usage=usage, cached=cached, choices=tuple(choices))


def _verdict(text: str) -> str | None:
    for obj in json_objects(text):
        verdict = obj.get("verdict")
        if isinstance(verdict, str) and verdict.strip().lower() in ("yes", "no"):
            return verdict.strip().lower()
    return None
