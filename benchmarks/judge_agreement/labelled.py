"""The labelled items of the judge-agreement benchmark, and how each becomes an assay eval case.

``items.yaml`` (beside this file) lists the items by criterion, and each file in ``set/`` the items
of one criterion; :func:`load_items` reads and checks such a file, :func:`to_case` turns an item
into an actual invocation (tool calls as invocation events, tool declarations and instructions as
app details), an expected one (the reference, v2 items only) and its case, and
:func:`criterion_for` gives the criterion it is scored under.

Items of ``per_turn_user_simulator_quality_v1`` (:class:`SimItem`) judge a simulated user, not the
agent: a scenario (starting prompt, conversation plan), a conversation of several turns, and the
human verdict on one turn's user message. :func:`to_case` makes them a scenario case and one
actual invocation per turn. ``run.py`` does not score them; ``build.py`` writes them into the
labelled eval set that ``assay judge agree`` scores.

Items of the criteria judged once on the whole conversation (:data:`CONVERSATION_CRITERIA`:
``rubric_based_multi_turn_trajectory_quality_v1`` and the three ``multi_turn_*_v1``) are
:class:`ConvItem`: a conversation of several turns, each the user's message, the agent's tool
calls and its reply, labelled on the last turn: per rubric (``rubrics``, the rubric criterion)
or as a whole (``label``: the conversation meets the metric). ``response_evaluation_score``
items are :class:`Item` (one turn) labelled ``coherent`` or ``incoherent``. ``run.py`` scores
none of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from assay.config import (
    BaseCriterion,
    HallucinationsCriterion,
    JudgeModelOptions,
    LlmAsAJudgeCriterion,
    RubricsBasedCriterion,
)
from assay.evalset import EvalCase, Invocation, Rubric, RubricContent
from assay.evalset.case import ConversationScenario

ITEMS = Path(__file__).resolve().parent / "items.yaml"
AGENT = "agent"
THRESHOLD = 0.5  # no verdict depends on it: verdicts are read off the scores

V2 = "final_response_match_v2"
RUBRIC_RESPONSE = "rubric_based_final_response_quality_v1"
RUBRIC_TOOLS = "rubric_based_tool_use_quality_v1"
HALLUCINATIONS = "hallucinations_v1"
SAFETY = "safety_v1"
SIMULATOR = "per_turn_user_simulator_quality_v1"
RUBRIC_MULTI_TURN = "rubric_based_multi_turn_trajectory_quality_v1"
TASK_SUCCESS = "multi_turn_task_success_v1"
TRAJECTORY = "multi_turn_trajectory_quality_v1"
TOOL_USE = "multi_turn_tool_use_quality_v1"
COHERENCE = "response_evaluation_score"
CONVERSATION_CRITERIA = (RUBRIC_MULTI_TURN, TASK_SUCCESS, TRAJECTORY, TOOL_USE)
"""The criteria judged once on the whole conversation; their items are :class:`ConvItem`."""

LANG = r"^[a-z]{2,3}$"
"""An item's language: an ISO 639 code (``en``, ``de``, ``zh``, ...)."""

RUBRIC_TYPES = {
    RUBRIC_RESPONSE: "FINAL_RESPONSE_QUALITY",
    RUBRIC_TOOLS: "TOOL_USE_QUALITY",
    RUBRIC_MULTI_TURN: "TRAJECTORY_QUALITY",
}
"""The ``type`` a rubric on a case has, by criterion (it picks the metric that asks about it)."""

# --------------------------------------------------------------------------- the items


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Param(_Strict):
    """One parameter of a declared tool."""

    type: str = "string"
    description: str | None = None
    enum: list[str] | None = None


class Tool(_Strict):
    """A tool declared to the agent."""

    name: str
    description: str = ""
    parameters: dict[str, Param] = Field(default_factory=dict)
    required: list[str] = Field(default_factory=list)


class ToolCall(_Strict):
    """A call the agent made, and what the tool answered."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    response: Any = None


class RubricLabel(_Strict):
    """A rubric and the human verdict on it (YAML reads yes/no as booleans)."""

    text: str
    verdict: bool


class Item(_Strict):
    """One labelled item (see the header of items.yaml)."""

    id: str
    note: str | None = None
    lang: str = Field(default="en", pattern=LANG)
    instructions: str | None = None
    tools: list[Tool] | None = None
    prompt: str
    tool_calls: list[ToolCall] = Field(default_factory=list)
    answer: str | None = None
    reference: str | None = None
    label: str | None = None
    rubrics: list[RubricLabel] | None = None


@dataclass(frozen=True)
class Criterion:
    """A criterion's labels: the positive and negative words, or rubric verdicts."""

    name: str
    positive: str
    negative: str
    rubric: bool = False
    needs_reference: bool = False
    needs_answer: bool = True

    def check(self, item: Item) -> None:
        """Raise ValueError when the item lacks what this criterion needs."""
        if self.rubric:
            if not item.rubrics:
                raise ValueError(f"{item.id}: needs rubrics")
            if item.label is not None:
                raise ValueError(f"{item.id}: a rubric item has verdicts per rubric, no label")
        elif item.label not in (self.positive, self.negative):
            raise ValueError(f"{item.id}: label must be {self.positive} or {self.negative}")
        if self.needs_reference != (item.reference is not None):
            raise ValueError(f"{item.id}: 'reference' is for {V2} items, and needed there")
        if self.needs_answer and item.answer is None:
            raise ValueError(f"{item.id}: needs an answer")


class Turn(_Strict):
    """One turn of a simulated conversation: the user's message and the agent's reply."""

    user: str
    agent: str


class SimItem(_Strict):
    """A labelled turn of a simulated user (``per_turn_user_simulator_quality_v1``).

    Turn 1's user message is the scenario's starting prompt (the metric checks that without a
    judge). The label is on ``labelled_turn``, never the first (not judged) nor the last (the
    metric's stop-signal check may replace the last turn's result).
    """

    id: str
    note: str | None = None
    lang: str = Field(default="en", pattern=LANG)
    scenario: ConversationScenario
    turns: list[Turn] = Field(min_length=3)
    labelled_turn: int = 2
    label: bool
    """The human verdict on the labelled turn's user message (YAML reads yes/no as booleans)."""

    @model_validator(mode="after")
    def _a_judged_turn(self) -> SimItem:
        if self.turns[0].user.strip() != self.scenario.starting_prompt.strip():
            raise ValueError(f"{self.id}: turn 1's user message must be the starting prompt")
        if not 2 <= self.labelled_turn < len(self.turns):
            raise ValueError(
                f"{self.id}: labelled_turn must be 2 to {len(self.turns) - 1} "
                "(not the first turn, not the last)"
            )
        return self


class ConvTurn(_Strict):
    """One turn of a labelled conversation: the user's message, the agent's tool calls (with
    what each tool answered) and its reply."""

    user: str
    tool_calls: list[ToolCall] = Field(default_factory=list)
    agent: str


class ConvItem(_Strict):
    """A labelled conversation (one of :data:`CONVERSATION_CRITERIA`), judged as a whole and
    labelled on its last turn: per rubric (``rubrics``, for the rubric criterion) or as a whole
    (``label``: whether the conversation meets the metric; YAML reads yes/no as booleans)."""

    id: str
    note: str | None = None
    lang: str = Field(default="en", pattern=LANG)
    instructions: str | None = None
    tools: list[Tool] | None = None
    turns: list[ConvTurn] = Field(min_length=2)
    label: bool | None = None
    rubrics: list[RubricLabel] | None = None

    @model_validator(mode="after")
    def _labelled_once(self) -> ConvItem:
        if (self.label is None) == (self.rubrics is None):
            raise ValueError(f"{self.id}: give either 'label' or 'rubrics'")
        return self


CRITERIA: dict[str, Criterion] = {
    c.name: c
    for c in (
        Criterion(V2, "valid", "invalid", needs_reference=True),
        Criterion(RUBRIC_RESPONSE, "yes", "no", rubric=True),
        Criterion(RUBRIC_TOOLS, "yes", "no", rubric=True, needs_answer=False),
        Criterion(HALLUCINATIONS, "grounded", "ungrounded"),
        Criterion(SAFETY, "safe", "unsafe"),
    )
}
"""The criteria whose items are :class:`Item` (the ones ``run.py`` scores)."""

SIMULATOR_CRITERION = Criterion(SIMULATOR, "yes", "no", needs_answer=False)
COHERENCE_CRITERION = Criterion(COHERENCE, "coherent", "incoherent")
CONVERSATION: dict[str, Criterion] = {
    RUBRIC_MULTI_TURN: Criterion(RUBRIC_MULTI_TURN, "yes", "no", rubric=True),
    TASK_SUCCESS: Criterion(TASK_SUCCESS, "yes", "no"),
    TRAJECTORY: Criterion(TRAJECTORY, "yes", "no"),
    TOOL_USE: Criterion(TOOL_USE, "yes", "no"),
}
ALL_CRITERIA: dict[str, Criterion] = {
    **CRITERIA,
    SIMULATOR: SIMULATOR_CRITERION,
    **CONVERSATION,
    COHERENCE: COHERENCE_CRITERION,
}
"""Every criterion an items file may hold, in the order of the file's keys."""


class ItemFile(_Strict):
    """The items, by criterion; a file may hold any of the criteria (the others are empty)."""

    final_response_match_v2: list[Item] = Field(default_factory=list)
    rubric_based_final_response_quality_v1: list[Item] = Field(default_factory=list)
    rubric_based_tool_use_quality_v1: list[Item] = Field(default_factory=list)
    hallucinations_v1: list[Item] = Field(default_factory=list)
    safety_v1: list[Item] = Field(default_factory=list)
    per_turn_user_simulator_quality_v1: list[SimItem] = Field(default_factory=list)
    rubric_based_multi_turn_trajectory_quality_v1: list[ConvItem] = Field(default_factory=list)
    multi_turn_task_success_v1: list[ConvItem] = Field(default_factory=list)
    multi_turn_trajectory_quality_v1: list[ConvItem] = Field(default_factory=list)
    multi_turn_tool_use_quality_v1: list[ConvItem] = Field(default_factory=list)
    response_evaluation_score: list[Item] = Field(default_factory=list)

    @model_validator(mode="after")
    def _complete_and_unique(self) -> ItemFile:
        for name, criterion in CRITERIA.items():
            for item in self.items(name):
                criterion.check(item)
        for item in self.response_evaluation_score:
            COHERENCE_CRITERION.check(item)
        for name in CONVERSATION_CRITERIA:
            rubric = CONVERSATION[name].rubric
            for conv in self.conversations(name):
                if rubric != (conv.rubrics is not None):
                    need = "'rubrics', no 'label'" if rubric else "a 'label', no 'rubrics'"
                    raise ValueError(f"{conv.id}: a {name} item has {need}")
        seen: set[str] = set()
        for _, any_item in self.all_items():
            if any_item.id in seen:
                raise ValueError(f"duplicate item id {any_item.id}")
            seen.add(any_item.id)
        return self

    def items(self, criterion: str) -> list[Item]:
        """The items of one of :data:`CRITERIA` (the simulator's are :attr:`simulator_items`)."""
        if criterion not in CRITERIA:
            raise KeyError(f"{criterion} items are not Items; see simulator_items")
        items: list[Item] = getattr(self, criterion)
        return items

    @property
    def simulator_items(self) -> list[SimItem]:
        """The items of ``per_turn_user_simulator_quality_v1``."""
        return self.per_turn_user_simulator_quality_v1

    def conversations(self, criterion: str) -> list[ConvItem]:
        """The items of one of :data:`CONVERSATION_CRITERIA`."""
        if criterion not in CONVERSATION:
            raise KeyError(f"{criterion} items are not conversations")
        items: list[ConvItem] = getattr(self, criterion)
        return items

    def all_items(self) -> list[tuple[str, Item | SimItem | ConvItem]]:
        """Every item with its criterion, in the order of :data:`ALL_CRITERIA`."""
        found: list[tuple[str, Item | SimItem | ConvItem]] = [
            (name, item) for name in CRITERIA for item in self.items(name)
        ]
        found.extend((SIMULATOR, item) for item in self.simulator_items)
        found.extend((name, conv) for name in CONVERSATION for conv in self.conversations(name))
        found.extend((COHERENCE, item) for item in self.response_evaluation_score)
        return found


def load_items(path: Path = ITEMS) -> ItemFile:
    """Read and check an items file; ValueError says what is wrong."""
    try:
        return ItemFile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise ValueError(f"{path}: {exc}") from None


# --------------------------------------------------------------------------- items as eval cases

_JSON_TYPES = {str: "STRING", bool: "BOOLEAN", int: "INTEGER", float: "NUMBER"}


def _schema_type(value: Any) -> str:
    if isinstance(value, dict):
        return "OBJECT"
    if isinstance(value, list):
        return "ARRAY"
    return _JSON_TYPES.get(type(value), "STRING")


def _declaration(tool: Tool) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for name, param in tool.parameters.items():
        prop: dict[str, Any] = {"type": param.type.upper()}
        if param.description:
            prop["description"] = param.description
        if param.enum:
            prop["enum"] = param.enum
        properties[name] = prop
    parameters: dict[str, Any] = {"type": "OBJECT", "properties": properties}
    if tool.required:
        parameters["required"] = tool.required
    return {"name": tool.name, "description": tool.description, "parameters": parameters}


def declared_tools(item: Item) -> list[Tool]:
    """The item's tools; when it declares none, each called tool with the arguments it got."""
    if item.tools is not None:
        return item.tools
    tools: dict[str, Tool] = {}
    for call in item.tool_calls:
        params = {k: Param(type=_schema_type(v)) for k, v in call.args.items()}
        tools.setdefault(call.name, Tool(name=call.name, parameters=params))
    return list(tools.values())


def _events(calls: Sequence[ToolCall], turn: int | None = None) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for n, call in enumerate(calls, 1):
        call_id = f"call-{n}" if turn is None else f"call-{turn}-{n}"
        response = call.response if isinstance(call.response, dict) else {"result": call.response}
        function_call = {"id": call_id, "name": call.name, "args": call.args}
        function_response = {"id": call_id, "name": call.name, "response": response}
        events.append(
            {
                "author": AGENT,
                "content": {"role": "model", "parts": [{"function_call": function_call}]},
            }
        )
        events.append(
            {
                "author": AGENT,
                "content": {"role": "user", "parts": [{"function_response": function_response}]},
            }
        )
    return events


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": text}]}


@overload
def to_case(
    item: Item, criterion: str | None = None
) -> tuple[Invocation, Invocation | None, EvalCase]: ...


@overload
def to_case(
    item: SimItem | ConvItem, criterion: str | None = None
) -> tuple[list[Invocation], None, EvalCase]: ...


def to_case(
    item: Item | SimItem | ConvItem, criterion: str | None = None
) -> tuple[Invocation | list[Invocation], Invocation | None, EvalCase]:
    """The item as an actual invocation, an expected one (v2 items only) and its case.

    A :class:`SimItem` gives one actual invocation per turn, no expected one, and a case with
    its scenario and no conversation. ``criterion``, when it is a rubric criterion, puts the
    item's rubrics on the case with that criterion's rubric type (ids :func:`rubric_id`), so
    that an eval set holding items of every criterion is scored with one config; left out, the
    rubrics are the criterion's (:func:`criterion_for`), as ``run.py`` scores them.
    """
    if isinstance(item, SimItem):
        return _simulated(item), None, _scenario_case(item)
    if isinstance(item, ConvItem):
        turns = _conversation(item)
        rubrics = _rubrics(item.rubrics, RUBRIC_TYPES.get(criterion or ""))
        return turns, None, EvalCase(eval_id=item.id, conversation=turns, rubrics=rubrics)
    agent = _agent(item.instructions, declared_tools(item))
    actual = Invocation.model_validate(
        {
            "invocation_id": item.id,
            "user_content": _text("user", item.prompt),
            "final_response": None if item.answer is None else _text("model", item.answer),
            "intermediate_data": {"invocation_events": _events(item.tool_calls)},
            "app_details": {"agent_details": {AGENT: agent}},
        }
    )
    expected = None
    if item.reference is not None:
        expected = Invocation.model_validate(
            {
                "invocation_id": f"{item.id}-expected",
                "user_content": _text("user", item.prompt),
                "final_response": _text("model", item.reference),
            }
        )
    rubrics = _rubrics(item.rubrics, RUBRIC_TYPES.get(criterion or ""))
    case = EvalCase(eval_id=item.id, conversation=[expected or actual], rubrics=rubrics)
    return actual, expected, case


def _agent(instructions: str | None, tools: Sequence[Tool]) -> dict[str, Any]:
    declarations = [_declaration(t) for t in tools]
    return {
        "name": AGENT,
        "instructions": instructions or "",
        "tool_declarations": [{"function_declarations": declarations}] if declarations else [],
    }


def _rubrics(labelled: list[RubricLabel] | None, rubric_type: str | None) -> list[Rubric] | None:
    """The item's rubrics on its case, with the criterion's rubric type (None: not a rubric
    criterion, or no rubrics)."""
    if rubric_type is None or not labelled:
        return None
    return [
        Rubric(
            rubric_id=rubric_id(n),
            rubric_content=RubricContent(text_property=r.text),
            type=rubric_type,
        )
        for n, r in enumerate(labelled, 1)
    ]


def conversation_tools(item: ConvItem) -> list[Tool]:
    """The item's tools; when it declares none, each called tool with the arguments it got."""
    if item.tools is not None:
        return item.tools
    calls = [call for turn in item.turns for call in turn.tool_calls]
    return declared_tools(Item(id=item.id, prompt="", tool_calls=calls))


def _conversation(item: ConvItem) -> list[Invocation]:
    agent = _agent(item.instructions, conversation_tools(item))
    return [
        Invocation.model_validate(
            {
                "invocation_id": f"{item.id}-{n}",
                "user_content": _text("user", turn.user),
                "final_response": _text("model", turn.agent),
                "intermediate_data": {"invocation_events": _events(turn.tool_calls, n)},
                "app_details": {"agent_details": {AGENT: agent}},
            }
        )
        for n, turn in enumerate(item.turns, 1)
    ]


def _simulated(item: SimItem) -> list[Invocation]:
    return [
        Invocation.model_validate(
            {
                "invocation_id": f"{item.id}-{n}",
                "user_content": _text("user", turn.user),
                "final_response": _text("model", turn.agent),
            }
        )
        for n, turn in enumerate(item.turns, 1)
    ]


def _scenario_case(item: SimItem) -> EvalCase:
    return EvalCase(eval_id=item.id, conversation_scenario=item.scenario)


def rubric_id(n: int) -> str:
    """The id of an item's n-th rubric (from 1)."""
    return f"r{n}"


def criterion_for(name: str, item: Item, num_samples: int) -> BaseCriterion:
    """The criterion the item is scored under (a rubric item's rubrics are the criterion's)."""
    options = JudgeModelOptions(num_samples=num_samples)
    if name in (RUBRIC_RESPONSE, RUBRIC_TOOLS):
        rubrics = [
            Rubric(rubric_id=rubric_id(n), rubric_content=RubricContent(text_property=r.text))
            for n, r in enumerate(item.rubrics or [], 1)
        ]
        return RubricsBasedCriterion(
            threshold=THRESHOLD, judge_model_options=options, rubrics=rubrics
        )
    if name == HALLUCINATIONS:
        return HallucinationsCriterion(threshold=THRESHOLD, judge_model_options=options)
    if name == SAFETY:
        return BaseCriterion(threshold=THRESHOLD)
    return LlmAsAJudgeCriterion(threshold=THRESHOLD, judge_model_options=options)
