"""EvalConfig: which criteria to score and how, in ADK's ``test_config.json`` shape.

``criteria`` maps a metric name to a number (its threshold) or to the metric's criterion object.

The rule: a config google-adk 2.13.0 runs is never refused, and what ADK refuses is an error
with its JSON path (:class:`~assay.errors.ConfigError`). ADK reads a config in two steps: its
``EvalConfig`` (which ignores unknown top-level keys, and keeps unknown keys in a criterion),
then, for each metric, the evaluator re-validates the criterion as the metric's own criterion
model (extra keys allowed; ``judge_model_options`` and rubrics strict) and an unknown metric or a
threshold on an informational one fails. assay checks both steps when the file is loaded, not
twenty minutes into a run. Where ADK accepts a key and ignores it (a typo it does not report),
assay loads the config and warns, with a "did you mean" and the key's JSON path: see
:attr:`EvalConfig.warnings`, and :class:`~assay.errors.ConfigWarning`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from warnings import warn

from pydantic import (
    Field,
    PrivateAttr,
    SerializationInfo,
    SerializeAsAny,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

from assay._internal.files import load_data, type_name
from assay.config.criteria import (
    CRITERION_TYPES,
    DEFAULT_CRITERIA,
    DEFAULT_JUDGE_MODEL,
    INFORMATIONAL_METRICS,
    BaseCriterion,
    HallucinationsCriterion,
    JudgeModelOptions,
    LlmAsAJudgeCriterion,
    LlmBackedUserSimulatorCriterion,
    MatchType,
    RubricsBasedCriterion,
    ToolTrajectoryCriterion,
)
from assay.config.simulator import AudioUserSimulatorConfig, UserSimulatorConfig
from assay.errors import (
    ConfigError,
    ConfigWarning,
    Problem,
    closest_key,
    format_path,
    keys_at,
    problems_from_validation,
)
from assay.evalset._base import AssayModel

__all__ = [
    "CRITERION_TYPES",
    "DEFAULT_CONFIG_DATA",
    "DEFAULT_CRITERIA",
    "DEFAULT_JUDGE_MODEL",
    "GENERATE_CONTENT_CONFIG_KEYS",
    "INFORMATIONAL_METRICS",
    "BaseCriterion",
    "CodeConfig",
    "CustomMetricConfig",
    "EvalConfig",
    "HallucinationsCriterion",
    "Interval",
    "JudgeModelOptions",
    "LiveModelConfig",
    "LlmAsAJudgeCriterion",
    "LlmBackedUserSimulatorCriterion",
    "MatchType",
    "MetricInfo",
    "MetricValueInfo",
    "RubricsBasedCriterion",
    "ToolTrajectoryCriterion",
    "check_config",
    "default_config",
    "emit_warnings",
    "load_config",
    "parse_config",
    "read_config",
]

DEFAULT_LIVE_TIMEOUT_S = 300

GENERATE_CONTENT_CONFIG_KEYS = frozenset(
    {
        "audio_timestamp", "audio_transcription_config", "automatic_continuation",
        "automatic_function_calling", "cached_content", "candidate_count", "continuation_token",
        "enable_enhanced_civic_answers", "frequency_penalty", "generation_output_config",
        "http_options", "image_config", "labels", "logprobs", "max_output_tokens",
        "media_resolution", "model_armor_config", "model_selection_config", "presence_penalty",
        "response_json_schema", "response_logprobs", "response_mime_type",
        "response_modalities", "response_schema", "routing_config", "safety_settings", "seed",
        "service_tier", "should_return_http_response", "speech_config", "stop_sequences",
        "store", "system_instruction", "temperature", "thinking_config", "tool_config", "tools",
        "top_k", "top_p",
    }
)  # fmt: skip
"""The settings of google-genai's ``GenerateContentConfig`` (2.34, as ADK 2.13 uses it): what
ADK accepts in ``judge_model_config`` and a simulator's ``model_configuration``."""


class CodeConfig(AssayModel):
    """Where a custom metric's function lives (``package.module.function``)."""

    name: str


class Interval(AssayModel):
    """The range of a custom metric's values."""

    min_value: float
    open_at_min: bool = False
    max_value: float
    open_at_max: bool = False


class MetricValueInfo(AssayModel):
    """What a custom metric's values are."""

    interval: Interval | None = None


class MetricInfo(AssayModel):
    """A custom metric's description, as ADK's ``MetricInfo``."""

    metric_name: str
    description: str | None = None
    metric_value_info: MetricValueInfo
    requires_threshold: bool = True


class CustomMetricConfig(AssayModel):
    """A custom metric declared in the config."""

    code_config: CodeConfig
    metric_info: MetricInfo | None = None
    description: str = ""


class LiveModelConfig(AssayModel):
    """ADK's settings for agents on Live (bidirectional streaming) models."""

    timeout_seconds: int = DEFAULT_LIVE_TIMEOUT_S


class ModelPrice(AssayModel):
    """What a judge model costs, in US dollars per million tokens: ``input`` (prompt) and
    ``output`` (completion), and, where the provider's batch API prices them otherwise,
    ``batch_input`` and ``batch_output`` (left out: half the ordinary price, as OpenAI's and
    Gemini's batch APIs charge). assay's own key (``prices`` in a config), which ADK ignores."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    batch_input: float | None = Field(default=None, ge=0)
    batch_output: float | None = Field(default=None, ge=0)


class EvalConfig(AssayModel):
    """What to score: ``criteria`` (metric name -> threshold or criterion) and related settings.

    ``EvalConfig.model_validate`` checks a config as :func:`parse_config` does, raising a
    ``ValidationError`` for its problems; what it ignores is in :attr:`warnings`."""

    criteria: dict[str, SerializeAsAny[BaseCriterion]] = Field(default_factory=dict)
    custom_metrics: dict[str, CustomMetricConfig] | None = None
    user_simulator_config: UserSimulatorConfig | None = None
    live_model_config: LiveModelConfig | None = None
    prices: dict[str, ModelPrice] | None = None
    """assay's addition: judge model prices (model string or name -> :class:`ModelPrice`), read
    before the bundled table (:mod:`assay.llm.prices`); ADK ignores the key."""

    _warnings: tuple[Problem, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _check_as_adk_does(
        cls, data: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Any:
        if not isinstance(data, dict) or (info.context or {}).get(_CHECKED):
            return handler(data)
        checked = _check(data, "<config>")
        if checked.problems:
            raise ValueError("; ".join(f"{p.path}: {p.message}" for p in checked.problems))
        config = handler(checked.values)
        if isinstance(config, EvalConfig):
            config._warnings = tuple(checked.warnings)
        return config

    @field_serializer("criteria")
    def _criteria_as_written(
        self, criteria: dict[str, BaseCriterion], info: SerializationInfo
    ) -> dict[str, Any]:
        return {
            name: criterion.threshold
            if criterion.written_bare
            else criterion.model_dump(
                mode=info.mode,
                by_alias=info.by_alias,
                exclude_unset=info.exclude_unset,
                exclude_defaults=info.exclude_defaults,
                exclude_none=info.exclude_none,
                round_trip=info.round_trip,
            )
            for name, criterion in criteria.items()
        }

    @property
    def warnings(self) -> tuple[Problem, ...]:
        """What the config holds that ADK accepts but ignores or reads loosely (an unknown key in
        a criterion, a boolean threshold), each with its file and JSON path."""
        return self._warnings

    def criterion(self, metric_name: str) -> BaseCriterion:
        """The criterion configured for a metric."""
        return self.criteria[metric_name]

    def criteria_as_written(self) -> dict[str, Any]:
        """The criteria as JSON, as ADK writes them: a bare threshold stays a number, and keys
        the metrics ignore are kept."""
        dumped: dict[str, Any] = self.model_dump(mode="json", include={"criteria"})
        return dict(dumped["criteria"])


_CHECKED = "assay.config:checked"
"""Validation context: the data was checked by :func:`_check` already."""


@dataclass(frozen=True)
class _Shape:
    """A type a part of the config is validated as, and its validator."""

    annotation: Any
    adapter: TypeAdapter[Any]


def _shape(annotation: Any) -> _Shape:
    return _Shape(annotation, TypeAdapter(annotation))


_CUSTOM = _shape(dict[str, CustomMetricConfig])
_LIVE = _shape(LiveModelConfig)
_PRICES = _shape(dict[str, ModelPrice])
_SIMULATORS = {
    "llm_backed": _shape(UserSimulatorConfig),
    "llm_audio": _shape(AudioUserSimulatorConfig),
}
_CRITERIA = {kind: _shape(kind) for kind in {*CRITERION_TYPES.values(), BaseCriterion}}


@dataclass
class _Checked:
    """A config's parts, validated, with what is wrong with it and what it ignores."""

    file: str
    values: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def warn(self, at: Iterable[str | int], message: str) -> None:
        self.warnings.append(Problem(self.file, format_path(at), message))

    def error(self, at: Iterable[str | int], message: str) -> None:
        self.problems.append(Problem(self.file, format_path(at), message))

    def validate(self, shape: _Shape, value: Any, at: list[str | int]) -> Any:
        """``value`` validated, or None with its problems recorded."""
        try:
            return shape.adapter.validate_python(value)
        except ValidationError as exc:
            self.problems += problems_from_validation(
                exc, self.file, value, at, lambda loc: keys_at(shape.annotation, loc)
            )
            return None

    def split(
        self, data: Mapping[str, Any], model: type[AssayModel], at: list[str | int]
    ) -> tuple[dict[str, tuple[str, Any]], list[str]]:
        """What ``model`` reads of ``data`` (field name -> the key as written and its value; a
        camelCase key wins over its snake_case twin, as in pydantic), and the keys it does not
        read, each warned about."""
        given, unknown = _read(data, model)
        fields = _keys(model)
        for key in unknown:
            if key in fields:  # the snake_case twin of a camelCase key
                twin = given[fields[key]][0]
                message = f"'{key}' ignored, as ADK ignores it: '{twin}' is given too, and read"
            else:
                message = _ignored(key, model)
            self.warn([*at, key], message)
        return given, unknown

    def genai_settings(self, value: Any, at: list[str | int], used_by: str) -> None:
        """Warn about each key of a generation config that google-genai does not know."""
        if not isinstance(value, dict):
            return
        for key in value:
            if str(key) in _GENAI_KEYS:
                continue
            close = closest_key(str(key), GENERATE_CONTENT_CONFIG_KEYS)
            hint = f" (did you mean '{close}'?)" if close else ""
            self.warn(
                [*at, key],
                f"'{key}' is not a setting of google-genai's GenerateContentConfig{hint}, so "
                f"ADK refuses this config; assay passes it to {used_by} as it is",
            )


_GENAI_KEYS = GENERATE_CONTENT_CONFIG_KEYS | {to_camel(k) for k in GENERATE_CONTENT_CONFIG_KEYS}


def _read(
    data: Mapping[str, Any], model: type[AssayModel]
) -> tuple[dict[str, tuple[str, Any]], list[str]]:
    """What ``model`` reads of ``data``, and the keys it does not read (:meth:`_Checked.split`)."""
    given: dict[str, tuple[str, Any]] = {}
    for name, info in model.model_fields.items():
        for key in (info.alias, name):
            if key is not None and key in data:
                given[name] = (key, data[key])
                break
    used = {key for key, _ in given.values()}
    return given, [key for key in data if key not in used]


def _keys(model: type[AssayModel]) -> dict[str, str]:
    """Each key a model reads (field names and their camelCase aliases) -> its field name."""
    found: dict[str, str] = {}
    for name, info in model.model_fields.items():
        found[name] = name
        if info.alias:
            found[info.alias] = name
    return found


def _ignored(key: str, model: type[AssayModel]) -> str:
    """The warning for a key ``model`` does not read, with the known key it is closest to (at
    its level, else one level down: ``num_samples`` in a criterion is judge options')."""
    close = closest_key(key, model.model_fields)
    for name, info in model.model_fields.items():
        inner = info.annotation
        if close is None and isinstance(inner, type) and issubclass(inner, AssayModel):
            found = closest_key(key, inner.model_fields)
            close = f"{_spelled(name, key)}.{found}" if found else None
    suggestion = f"; did you mean '{close}'?" if close else ""
    return f"unknown key '{key}' ignored, as ADK does{suggestion}"


def _spelled(name: str, like: str) -> str:
    """``name`` in camelCase when ``like`` is written in camelCase."""
    return to_camel(name) if "_" not in like and like != like.lower() else name


def _check(data: Mapping[str, Any], file: str) -> _Checked:
    """ADK's two steps (its ``EvalConfig``, then each metric's criterion as its evaluator reads
    it) on ``data``: the validated parts, the problems, the warnings."""
    checked = _Checked(file)
    given, _ = checked.split(data, EvalConfig, [])
    if "custom_metrics" in given:
        checked.values["custom_metrics"] = _custom_metrics(checked, *given["custom_metrics"])
    if "user_simulator_config" in given:
        key, value = given["user_simulator_config"]
        checked.values["user_simulator_config"] = _simulator(checked, key, value)
    if "live_model_config" in given:
        key, value = given["live_model_config"]
        if isinstance(value, dict):  # ADK ignores unknown keys here
            value = {k: v for k, (_, v) in checked.split(value, LiveModelConfig, [key])[0].items()}
        checked.values["live_model_config"] = (
            None if value is None else checked.validate(_LIVE, value, [key])
        )
    if "prices" in given:
        key, value = given["prices"]
        checked.values["prices"] = (
            None if value is None else checked.validate(_PRICES, value, [key])
        )
    key, criteria = given.get("criteria", ("criteria", {}))
    if not isinstance(criteria, dict):
        checked.error(
            [key],
            f"expected an object mapping metric names to criteria; got {type_name(criteria)}",
        )
        return checked
    declared = _declared_custom_names(given)  # an invalid declaration is reported once
    checked.values["criteria"] = {}
    for name, entry in criteria.items():
        criterion = _criterion(checked, [key, str(name)], entry, declared)
        if criterion is not None:
            checked.values["criteria"][str(name)] = criterion
    return checked


def _declared_custom_names(given: Mapping[str, tuple[str, Any]]) -> list[str]:
    """The metric names declared under ``custom_metrics``, valid or not."""
    _, raw = given.get("custom_metrics", ("", None))
    return [str(name) for name in raw] if isinstance(raw, dict) else []


def _custom_metrics(checked: _Checked, key: str, value: Any) -> Any:
    if isinstance(value, dict):
        kept = {}
        for name, entry in value.items():
            if isinstance(entry, dict):  # ADK ignores unknown keys here (but not in code_config)
                read, _ = checked.split(entry, CustomMetricConfig, [key, name])
                entry = {written: v for written, v in read.values()}
            kept[name] = entry
        value = kept
    return None if value is None else checked.validate(_CUSTOM, value, [key])


def _simulator(checked: _Checked, key: str, value: Any) -> Any:
    if not isinstance(value, dict):
        return None if value is None else checked.validate(_SIMULATORS["llm_backed"], value, [key])
    kind = "llm_audio" if value.get("type") == "llm_audio" else "llm_backed"
    model = AudioUserSimulatorConfig if kind == "llm_audio" else UserSimulatorConfig
    read, _ = checked.split(value, model, [key])  # unknown keys are kept, as ADK keeps them
    for name, (given, raw) in read.items():
        at: list[str | int] = [key, given]
        if name == "type" and raw == "llm_audio":
            checked.warn(
                at,
                "ADK's audio user simulator is not available in assay: a case with a "
                "conversation_scenario is NOT_EVALUATED with this config",
            )
        elif name == "model" and raw == "":
            checked.warn(at, "no model named: a conversation_scenario cannot be played")
        elif name == "max_allowed_invocations" and isinstance(raw, bool):
            checked.warn(at, f"a boolean limit, read as {int(raw)} as ADK reads it; write a number")
        elif name == "max_allowed_invocations" and isinstance(raw, int) and raw < 1 and raw != -1:
            checked.warn(
                at,
                f"a limit of {raw} stops every simulated conversation before its first message, "
                "as in ADK (-1 is no limit)",
            )
        elif name in {"model_configuration", "audio_model_configuration"}:
            checked.genai_settings(raw, at, "the simulated user's model")
    return checked.validate(_SIMULATORS[kind], value, [key])


def _criterion(
    checked: _Checked, at: list[str | int], value: Any, custom: Iterable[str]
) -> BaseCriterion | None:
    name = str(at[-1])
    declared = name in custom  # ADK runs its function, and leaves the criterion to it
    kind = BaseCriterion if declared else CRITERION_TYPES.get(name)
    if name in INFORMATIONAL_METRICS and not declared:
        checked.error(
            at,
            "this metric takes no threshold: it is reported on every run and never fails; "
            "remove it from 'criteria'",
        )
        return None
    if kind is None:
        hint = closest_key(name, CRITERION_TYPES)
        suggestion = f"did you mean '{hint}'? " if hint else ""
        checked.error(
            at,
            f"unknown metric; {suggestion}known metrics: {', '.join(CRITERION_TYPES)} "
            "(or declare it under 'custom_metrics')",
        )
        return None
    if isinstance(value, BaseCriterion):
        if type(value) is kind:
            return value
        value = value.threshold if value.written_bare else value.model_dump()
    if isinstance(value, bool):
        checked.warn(
            at, f"a boolean threshold, read as {float(value)} as ADK reads it; write a number"
        )
        value = float(value)
    if isinstance(value, int | float | str):
        return _typed(checked, at, kind, {"threshold": value}, bare=True)
    if isinstance(value, dict):
        if isinstance(value.get("threshold"), bool):
            threshold = value["threshold"]
            checked.warn(
                [*at, "threshold"],
                f"a boolean threshold, read as {float(threshold)} as ADK reads it; write a number",
            )
            value = {**value, "threshold": float(threshold)}
        return _typed(checked, at, kind, value, bare=False, report_unknown=not declared)
    checked.error(at, f"expected a threshold number or a criterion object; got {type_name(value)}")
    return None


def _typed(
    checked: _Checked,
    at: list[str | int],
    kind: type[BaseCriterion],
    data: dict[str, Any],
    *,
    bare: bool,
    report_unknown: bool = True,
) -> BaseCriterion | None:
    """The criterion as its metric's model, keeping (and, unless ``report_unknown`` is false,
    warning about) the keys the model does not read, as ADK keeps them."""
    if report_unknown:
        read, unknown = checked.split(data, kind, at)
    else:
        read, unknown = _read(data, kind)
    options = read.get("judge_model_options")
    if options is not None and isinstance(options[1], dict):
        settings = _read(options[1], JudgeModelOptions)[0].get("judge_model_config")
        if settings is not None:
            where: list[str | int] = [*at, options[0], settings[0]]
            checked.genai_settings(settings[1], where, "the judge's backend")
    before = len(checked.problems)
    criterion = checked.validate(_CRITERIA[kind], dict(read.values()), at)
    if bare and len(checked.problems) > before:  # reported where it was written, not '.threshold'
        checked.problems[before:] = [
            Problem(p.file, format_path(at), p.message) for p in checked.problems[before:]
        ]
    if not isinstance(criterion, BaseCriterion):
        return None
    criterion._bare = bare
    criterion._ignored = {key: data[key] for key in unknown}
    return criterion


DEFAULT_CONFIG_DATA: Mapping[str, Any] = {"criteria": dict(DEFAULT_CRITERIA)}


def default_config() -> EvalConfig:
    """ADK's default: ``tool_trajectory_avg_score`` 1.0 and ``response_match_score`` 0.8."""
    return EvalConfig.model_validate(DEFAULT_CONFIG_DATA)


def check_config(data: Any, file: str = "<config>") -> EvalConfig:
    """Validate config data as :func:`parse_config` does, without emitting its warnings (they
    are in :attr:`EvalConfig.warnings`): for callers that print them themselves."""
    if not isinstance(data, dict):
        raise ConfigError(
            [Problem(file, "", f"expected an object with 'criteria'; got {type_name(data)}")]
        )
    checked = _check(data, file)
    if checked.problems:  # with the warnings: 'treshold' ignored explains 'threshold' missing
        raise ConfigError([*checked.problems, *checked.warnings])
    config = EvalConfig.model_validate(checked.values, context={_CHECKED: True})
    config._warnings = tuple(checked.warnings)
    return config


def read_config(path: str | Path) -> EvalConfig:
    """Load a config file as :func:`load_config` does, without emitting its warnings."""
    path = Path(path)
    return check_config(load_data(path, ConfigError), str(path))


def emit_warnings(config: EvalConfig, stacklevel: int = 2) -> None:
    """Emit each of the config's warnings as a :class:`~assay.errors.ConfigWarning`."""
    for problem in config.warnings:
        warn(str(problem), ConfigWarning, stacklevel=stacklevel + 1)


def parse_config(data: Any, file: str = "<config>") -> EvalConfig:
    """Validate config data, reporting every problem with its JSON path (a
    :class:`~assay.errors.ConfigError`); each key ADK would ignore is a
    :class:`~assay.errors.ConfigWarning`, and is listed in :attr:`EvalConfig.warnings`."""
    config = check_config(data, file)
    emit_warnings(config, stacklevel=2)
    return config


def load_config(path: str | Path) -> EvalConfig:
    """Load an EvalConfig from a JSON or YAML file, or raise :class:`ConfigError`; warnings as
    :func:`parse_config`'s."""
    config = read_config(path)
    emit_warnings(config, stacklevel=2)
    return config
