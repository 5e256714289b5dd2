"""Vertex AI's Gen AI evaluation service, called as google-adk 2.13 calls it: the opt-in path of
the metrics ADK hands to Vertex (``safety_v1``, ``response_evaluation_score`` and the three
``multi_turn_*_v1`` metrics), which assay otherwise scores with its own judge.

**Opting in.** ``ASSAY_VERTEX_METRICS`` names the metrics Vertex AI scores, separated by commas
or spaces, or ``all``; a name that is not one of :data:`VERTEX_METRIC_NAMES` is a mistake that
leaves every one of them NOT_EVALUATED with the reason, never a silent fallback to the judge.
``ASSAY_SAFETY_BACKEND`` (``judge`` or ``vertex``), the older switch, still decides ``safety_v1``
when it is set. Vertex needs the ``assay[vertex]`` extra (google-cloud-aiplatform[evaluation])
and either ``GOOGLE_CLOUD_PROJECT`` and ``GOOGLE_CLOUD_LOCATION`` or ``GOOGLE_API_KEY``: without
them an opted-in metric is NOT_EVALUATED and says what is missing. ``GOOGLE_VERTEX_BASE_URL``, the
variable google-genai reads for its own Vertex AI endpoint, points the evaluation client at another
endpoint too (a proxy, or a local server in tests); unset, the SDK picks Google's endpoint.

**Calls.** Single-turn metrics send one row (``prompt``, ``reference``, ``response``) per call
(:func:`score_rows`); the multi-turn ones send the whole conversation once as ``AgentData``
(:func:`agent_data`, :func:`score_agent_data`): one turn per invocation holding the user's
message (author ``user``), every recorded event that has content (its own author), and the final
response (author ``agent``), plus each agent's id, instructions and tool declarations, the first
time an agent appears (bare function declarations gathered into one ``Tool``, :func:`sdk_tools`).
Static intermediate data (``tool_uses``) is not sent, as in ADK.

**Results** are read as ADK reads them (:func:`read_result`): the score is the first summary
metric's ``mean_score`` when it is a number and not NaN; each rubric verdict becomes a
:class:`~assay.evalset.rubric.RubricScore` named by the rubric's description (else its id, else
``rubric_<n>``), 1.0 when the verdict is set and 0.0 when it is not; the metric's explanation and
error message follow as the ``explanation`` and ``error`` entries, which carry only a rationale.
Retries are the SDK's: it tries 429 and 5xx answers up to five times with backoff and reports
what still fails (401, 403, a malformed answer) as the metric's error message, which becomes the
reason, with keys and tokens masked (in what the SDK logs of it too, :func:`redact_sdk_logs`).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import math
import os
import re
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from assay.config import BaseCriterion
from assay.evalset.content import Content, JsonObject
from assay.evalset.invocation import Invocation, InvocationEvents
from assay.evalset.rubric import RubricScore
from assay.llm.judge import Judge
from assay.llm.redact import redact, secret_env_values
from assay.metrics.base import MetricInfo

BASE_URL_VARIABLE = "GOOGLE_VERTEX_BASE_URL"
"""google-genai's variable for the Vertex AI endpoint, which the evaluation client honours too."""

VERTEX_METRICS_VARIABLE = "ASSAY_VERTEX_METRICS"
"""The environment variable naming the metrics Vertex AI scores (or ``all``)."""

ALL = "all"

VERTEX_METRIC_NAMES = (
    "safety_v1",
    "response_evaluation_score",
    "multi_turn_task_success_v1",
    "multi_turn_trajectory_quality_v1",
    "multi_turn_tool_use_quality_v1",
)
"""The metrics ADK 2.13 hands to Vertex AI, which ``ASSAY_VERTEX_METRICS`` may name."""

EXPLANATION_RUBRIC_ID = "explanation"
"""The rubric id of the entry carrying the metric's overall explanation (as ADK names it)."""

ERROR_RUBRIC_ID = "error"
"""The rubric id of the entry carrying the error Vertex AI reported (as ADK names it)."""

VertexMetric = Callable[[Any], Any]
"""Picks the SDK's metric object from the ``vertexai`` module (``PrebuiltMetric.SAFETY(...)``)."""


def model_name(metric: str) -> str:
    """What the notes name as the judge when Vertex AI scores ``metric``."""
    return f"vertex-ai:{metric}"


# --------------------------------------------------------------------------- opting in


@dataclass(frozen=True)
class Backend:
    """Who scores a metric: Vertex AI (``vertex``) or the judge. ``variable`` is the environment
    variable that chose Vertex and ``opt_in`` how it was set (for messages); ``problem`` is a
    setting that cannot be read, which leaves the metric NOT_EVALUATED."""

    vertex: bool
    variable: str | None = None
    opt_in: str = ""
    problem: str | None = None


_SEPARATORS = re.compile(r"[\s,]+")


def choose_backend(
    env: Mapping[str, str], metric: str, *, legacy_variable: str | None = None
) -> Backend:
    """The backend of ``metric``: ``legacy_variable`` (``judge`` or ``vertex``) when set, else
    whether ``ASSAY_VERTEX_METRICS`` names the metric or ``all``."""
    if legacy_variable is not None:
        value = env.get(legacy_variable, "").strip().lower()
        if value == "vertex":
            return Backend(True, legacy_variable, f"{legacy_variable}=vertex")
        if value == "judge":
            return Backend(False)
        if value:
            return Backend(
                False, problem=f"{legacy_variable} must be 'judge' or 'vertex', not {value!r}"
            )
    raw = env.get(VERTEX_METRICS_VARIABLE, "").strip()
    names = [name for name in _SEPARATORS.split(raw.lower()) if name]
    unknown = [name for name in names if name != ALL and name not in VERTEX_METRIC_NAMES]
    if unknown:
        listed = ", ".join(repr(name) for name in unknown)
        return Backend(
            False,
            problem=(
                f"{VERTEX_METRICS_VARIABLE} names {listed}, which Vertex AI cannot score; it takes "
                f"'{ALL}' or a comma-separated list of: {', '.join(VERTEX_METRIC_NAMES)}"
            ),
        )
    if ALL in names or metric in names:
        return Backend(True, VERTEX_METRICS_VARIABLE, f"{VERTEX_METRICS_VARIABLE}={raw}")
    return Backend(False)


def sdk_installed() -> bool:
    """Whether the ``assay[vertex]`` extra (the Vertex AI SDK and pandas) can be imported."""
    return all(importlib.util.find_spec(name) is not None for name in ("vertexai", "pandas"))


def settle(
    env: Mapping[str, str],
    metric: str,
    *,
    scorer_given: bool,
    legacy_variable: str | None = None,
    sdk_check: Callable[[], bool] | None = None,
) -> tuple[Backend, str | None]:
    """``metric``'s backend (:func:`choose_backend`) and why it cannot be used here (None: it
    can). A ``scorer_given`` in place of the Vertex AI call needs no SDK; ``sdk_check`` (default
    :func:`sdk_installed`) says whether the SDK is there."""
    choice = choose_backend(env, metric, legacy_variable=legacy_variable)
    if not choice.vertex:
        return choice, choice.problem
    installed = scorer_given or (sdk_check or sdk_installed)()
    return choice, unavailable_reason(env, opt_in=choice.opt_in, sdk_installed=installed)


Scorer = TypeVar("Scorer")


class VertexBacked(Generic[Scorer]):
    """What the metrics ADK hands to Vertex AI share: built from a criterion and a judge, they
    choose their backend from ``env`` (default: the process environment; see :func:`settle`),
    and ``vertex``, a :data:`Scorer`, replaces the Vertex AI call (tests, or another service)."""

    info: ClassVar[MetricInfo]
    legacy_variable: ClassVar[str | None] = None
    """A metric's own backend variable (``ASSAY_SAFETY_BACKEND``), which wins when set."""

    def __init__(
        self,
        criterion: BaseCriterion,
        judge: Judge,
        *,
        env: Mapping[str, str] | None = None,
        vertex: Scorer | None = None,
    ) -> None:
        self.criterion = criterion
        self.judge = judge
        self._env = dict(os.environ if env is None else env)
        self._choice, self._unavailable = settle(
            self._env,
            self.info.name,
            scorer_given=vertex is not None,
            legacy_variable=self.legacy_variable,
            sdk_check=self.sdk_installed,
        )
        self._vertex: Scorer = vertex if vertex is not None else self.vertex_scorer()

    def sdk_installed(self) -> bool:
        """Whether the Vertex AI SDK can be imported."""
        return sdk_installed()

    def vertex_scorer(self) -> Scorer:
        """The call to Vertex AI used when none is given."""
        raise NotImplementedError

    @property
    def uses_vertex(self) -> bool:
        """Whether Vertex AI scores this metric here (opted in, and able to)."""
        return self._choice.vertex and self._unavailable is None


def unavailable_reason(env: Mapping[str, str], *, opt_in: str, sdk_installed: bool) -> str | None:
    """Why Vertex AI cannot score here (what to install or set), or None if it can. ``opt_in``
    names the setting that asked for it (``ASSAY_VERTEX_METRICS=all``)."""
    if not sdk_installed:
        return (
            f"{opt_in} needs the Vertex AI SDK: pip install 'assay[vertex]' "
            "(google-cloud-aiplatform[evaluation])"
        )
    if env.get("GOOGLE_API_KEY"):
        return None
    project, location = env.get("GOOGLE_CLOUD_PROJECT"), env.get("GOOGLE_CLOUD_LOCATION")
    if project and location:
        return None
    missing = [
        name
        for name, value in (("GOOGLE_CLOUD_PROJECT", project), ("GOOGLE_CLOUD_LOCATION", location))
        if not value
    ]
    return (
        f"{opt_in} needs {' and '.join(missing)} set (or GOOGLE_API_KEY), "
        "and Google Cloud credentials"
    )


def client(env: Mapping[str, str]) -> Any:
    """The SDK client ADK 2.13 builds: ``agentplatform.Client`` (google-cloud-aiplatform 2.x),
    else ``vertexai.Client``; by API key when one is set, else by project and location; at
    ``GOOGLE_VERTEX_BASE_URL`` when it is set (the SDK's client reads no variable for it)."""
    sdk: Any
    try:
        sdk = importlib.import_module("agentplatform")
    except ImportError:
        sdk = importlib.import_module("vertexai")
    base_url = env.get(BASE_URL_VARIABLE, "").strip()
    where: dict[str, Any] = {"http_options": {"base_url": base_url}} if base_url else {}
    if env.get("GOOGLE_API_KEY"):
        return sdk.Client(api_key=env["GOOGLE_API_KEY"], **where)
    return sdk.Client(
        project=env["GOOGLE_CLOUD_PROJECT"], location=env["GOOGLE_CLOUD_LOCATION"], **where
    )


_SDK_LOGGERS = tuple(
    f"{sdk}._genai.{module}"
    for sdk in ("agentplatform", "vertexai")
    for module in ("_evals_metric_handlers", "_evals_common", "evals")
)


class _RedactingFilter(logging.Filter):
    """Masks keys in the SDK's own log records: it logs each failed call at ERROR, with the
    server's message (which may quote the key) and a traceback."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.exc_info and record.exc_info[0] is not None:
            text += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
        record.msg, record.args = redact(text, tuple(self.secrets)), ()
        record.exc_info = record.exc_text = None
        return True


_LOG_FILTER = _RedactingFilter()


def redact_sdk_logs(env: Mapping[str, str]) -> None:
    """Mask ``env``'s secrets (and key-shaped text) in what the SDK's evaluation modules log."""
    _LOG_FILTER.secrets.update(secret_env_values(env))
    for name in _SDK_LOGGERS:
        logger = logging.getLogger(name)
        if _LOG_FILTER not in logger.filters:
            logger.addFilter(_LOG_FILTER)


def describe(exc: BaseException, env: Mapping[str, str] | None = None) -> str:
    """An exception in words, with secrets (keys, tokens, and secret-looking ``env`` values)
    masked."""
    return redact(f"{type(exc).__name__}: {exc}", secret_env_values(env or {}))


# --------------------------------------------------------------------------- reading a result


@dataclass(frozen=True)
class Row:
    """One invocation as a single-turn Vertex metric reads it."""

    prompt: str
    reference: str | None
    response: str


@dataclass(frozen=True)
class VertexScore:
    """Vertex AI's answer for one row or conversation: a score, or the reason there is none,
    with the explanation and the rubric scores as ADK keeps them (None when there are none)."""

    score: float | None
    reason: str | None = None
    explanation: str | None = None
    rubric_scores: list[RubricScore] | None = field(default=None)


def _metric_results(result: object) -> list[object]:
    out: list[object] = []
    for case in getattr(result, "eval_case_results", None) or []:
        for candidate in getattr(case, "response_candidate_results", None) or []:
            by_metric = getattr(candidate, "metric_results", None)
            if isinstance(by_metric, dict):
                out.extend(by_metric.values())
    return out


def _verdict_score(index: int, verdict: object) -> RubricScore:
    rubric = getattr(verdict, "evaluated_rubric", None)
    prop = getattr(getattr(rubric, "content", None), "property", None)
    description = getattr(prop, "description", None)
    rubric_id = description or getattr(rubric, "rubric_id", None) or f"rubric_{index}"
    reasoning = getattr(verdict, "reasoning", None)
    return RubricScore(
        rubric_id=str(rubric_id),
        rationale=str(reasoning) if reasoning else None,
        score=1.0 if getattr(verdict, "verdict", None) else 0.0,  # unset when not met
    )


def read_result(result: object, secrets: Sequence[str] = ()) -> VertexScore:
    """A Vertex AI evaluation result read as ADK 2.13 reads it (see the module's docstring),
    with ``secrets`` and anything shaped like a key masked in the error message (the SDK copies
    the server's error, which may quote the key)."""
    rubric_scores: list[RubricScore] = []
    explanation = error = None
    for metric_result in _metric_results(result):
        verdicts = getattr(metric_result, "rubric_verdicts", None) or []
        rubric_scores += [_verdict_score(i, v) for i, v in enumerate(verdicts)]
        said = getattr(metric_result, "explanation", None)
        if said:
            explanation = explanation or str(said)
            rubric_scores.append(RubricScore(rubric_id=EXPLANATION_RUBRIC_ID, rationale=str(said)))
        failed = getattr(metric_result, "error_message", None)
        if failed:
            said_failed = redact(str(failed), secrets)
            error = error or said_failed
            rubric_scores.append(RubricScore(rubric_id=ERROR_RUBRIC_ID, rationale=said_failed))
    summary = getattr(result, "summary_metrics", None)
    mean: object = (
        getattr(summary[0], "mean_score", None)
        if isinstance(summary, Sequence) and summary
        else None
    )
    scores = rubric_scores or None
    if isinstance(mean, int | float) and not isinstance(mean, bool) and not math.isnan(mean):
        return VertexScore(float(mean), explanation=explanation, rubric_scores=scores)
    reason = f"Vertex AI gave no score: {error}" if error else "Vertex AI gave no score"
    return VertexScore(None, reason=reason, explanation=explanation, rubric_scores=scores)


# --------------------------------------------------------------------------- single-turn rows


def score_rows(
    rows: Sequence[Row], env: Mapping[str, str], metric: VertexMetric, *, sdk_client: Any = None
) -> list[VertexScore]:
    """Score each row with ``metric`` in its own call, as ADK's single-turn facade does.

    Imports the SDK only when called; ``sdk_client`` (default: :func:`client`) has
    ``evals.evaluate``. A call that fails gives that row a reason, not a score.
    """
    pandas: Any = importlib.import_module("pandas")
    vertexai: Any = importlib.import_module("vertexai")
    if sdk_client is None:
        sdk_client = client(env)
    redact_sdk_logs(env)
    chosen = metric(vertexai)
    scores = []
    for row in rows:
        frame = pandas.DataFrame(
            [{"prompt": row.prompt, "reference": row.reference, "response": row.response}]
        )
        dataset = vertexai.types.EvaluationDataset(eval_dataset_df=frame)
        try:
            result = sdk_client.evals.evaluate(dataset=dataset, metrics=[chosen])
        except Exception as exc:  # the SDK raises many kinds; each becomes this row's reason
            reason = f"Vertex AI call failed: {describe(exc, env)}"
            scores.append(VertexScore(None, reason=reason))
            continue
        scores.append(read_result(result, secret_env_values(env)))
    return scores


# --------------------------------------------------------------------------- a whole conversation


@dataclass(frozen=True)
class AgentEventData:
    """One event of a turn: its author and its content as genai JSON (None when it has none)."""

    author: str
    content: JsonObject | None


@dataclass(frozen=True)
class TurnData:
    """One invocation as a ``ConversationTurn``."""

    turn_index: int
    turn_id: str
    events: list[AgentEventData]


@dataclass(frozen=True)
class AgentConfigData:
    """One agent as an ``AgentConfig``: its id, instructions and tool declarations."""

    agent_id: str
    instruction: str
    tools: list[Any]


@dataclass(frozen=True)
class AgentData:
    """The conversation as Vertex AI's ``AgentData``: the agents by name, and the turns."""

    agents: dict[str, AgentConfigData]
    turns: list[TurnData]


def _json(content: Content | None) -> JsonObject | None:
    return None if content is None else content.model_dump(mode="json", exclude_none=True)


def agent_data(invocations: Sequence[Invocation]) -> AgentData:
    """The conversation as ADK 2.13's multi-turn facade builds it (see the module's docstring)."""
    agents: dict[str, AgentConfigData] = {}
    for invocation in invocations:
        details = invocation.app_details.agent_details if invocation.app_details else {}
        for name, agent in details.items():
            if name not in agents:
                agents[name] = AgentConfigData(
                    agent.name, agent.instructions, list(agent.tool_declarations)
                )
    turns = []
    for index, invocation in enumerate(invocations):
        events = [AgentEventData("user", _json(invocation.user_content))]
        data = invocation.intermediate_data
        if isinstance(data, InvocationEvents):
            events += [
                AgentEventData(event.author, _json(event.content))
                for event in data.invocation_events
                if event.content is not None
            ]
        events.append(AgentEventData("agent", _json(invocation.final_response)))
        turns.append(TurnData(index, invocation.invocation_id, events))
    return AgentData(agents, turns)


_TOOL_FIELDS = frozenset(
    {"function_declarations", "functionDeclarations", "retrieval", "google_search", "googleSearch"}
    | {"code_execution", "codeExecution", "google_search_retrieval", "googleSearchRetrieval"}
)


def sdk_tools(tools: Sequence[Any]) -> list[Any]:
    """``tools`` as the SDK's ``Tool`` list: a bare function declaration (a mapping with a
    ``name`` and no ``Tool`` field, as traces and Python agents record them) joins one
    ``{"function_declarations": [...]}`` tool where the first one stood; ``Tool``s pass as is."""
    out: list[Any] = []
    bare: list[Any] = []
    for tool in tools:
        if isinstance(tool, Mapping) and "name" in tool and not _TOOL_FIELDS & tool.keys():
            if not bare:
                out.append({"function_declarations": bare})
            bare.append(dict(tool))
        else:
            out.append(tool)
    return out


def sdk_agent_data(vertexai: Any, data: AgentData) -> Any:
    """``data`` as the SDK's ``types.evals.AgentData``."""
    evals = vertexai.types.evals
    return evals.AgentData(
        agents={
            name: evals.AgentConfig(
                agent_id=agent.agent_id, instruction=agent.instruction, tools=sdk_tools(agent.tools)
            )
            for name, agent in data.agents.items()
        },
        turns=[
            evals.ConversationTurn(
                turn_index=turn.turn_index,
                events=[
                    evals.AgentEvent(author=event.author, content=event.content)
                    for event in turn.events
                ],
                turn_id=turn.turn_id,
            )
            for turn in data.turns
        ],
    )


def score_agent_data(
    data: AgentData, env: Mapping[str, str], metric: VertexMetric, *, sdk_client: Any = None
) -> VertexScore:
    """Score a whole conversation with ``metric`` in one call, as ADK's multi-turn facade does.

    Imports the SDK only when called; a call that fails gives a reason, not a score.
    """
    vertexai: Any = importlib.import_module("vertexai")
    if sdk_client is None:
        sdk_client = client(env)
    redact_sdk_logs(env)
    case = vertexai.types.EvalCase(agent_data=sdk_agent_data(vertexai, data))
    dataset = vertexai.types.EvaluationDataset(eval_cases=[case])
    try:
        result = sdk_client.evals.evaluate(dataset=dataset, metrics=[metric(vertexai)])
    except Exception as exc:  # the SDK raises many kinds; each becomes the reason
        return VertexScore(None, reason=f"Vertex AI call failed: {describe(exc, env)}")
    return read_result(result, secret_env_values(env))
