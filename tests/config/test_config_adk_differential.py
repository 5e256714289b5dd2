"""Differential test: generated configs, read by google-adk 2.13.0 and by assay.

A seeded generator writes several hundred configs: valid ones, typo'd keys, extra keys at every
level (top level, a criterion, ``judge_model_options``, rubrics and ``rubric_content``,
``custom_metrics`` and ``code_config``, ``user_simulator_config``, ``live_model_config``), wrong
types, bare thresholds, booleans and strings. ADK reads each as ``adk eval`` does, by calling its
own code: ``EvalConfig.model_validate_json``, ``get_eval_metrics_from_config``,
``register_custom_metrics_from_config``, and the registry's ``get_evaluator`` for every metric
(where each evaluator re-validates its criterion as its own model). That runs in a subprocess
(this file, run as a script), because without ADK's ``[eval]`` extra its Vertex AI modules are
stubbed to import them, and the stubs must not leak into other tests.

Checked: assay refuses exactly the configs ADK refuses; assay warns about exactly the keys ADK
ignores (unknown top-level, ``custom_metrics`` entry, ``live_model_config`` keys, the keys of a
criterion its metric's model does not read, a simulator's extra keys); a bare threshold is written
back as ADK writes it, and the keys a criterion ignores are kept.

One known departure is generated on purpose: a key of ``judge_model_config`` or a simulator's
``model_configuration`` that is not a google-genai ``GenerateContentConfig`` setting. ADK refuses
it; assay passes those settings to judges that are not Gemini, so it loads the config and warns
that ADK refuses it. Not generated: judge models other than Gemini (ADK resolves only its own
models; assay's are its own), custom metric functions that cannot be imported (ADK imports them
when it builds the evaluator; assay imports them before scoring, and a metric it cannot import
is NOT_EVALUATED).
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from assay.config import (
    CRITERION_TYPES,
    INFORMATIONAL_METRICS,
    EvalConfig,
    check_config,
)
from assay.errors import ConfigError, format_path

SEED = 20260213
COUNT = 600
GENAI_TYPOS = ("temprature", "maxOutputToken", "top_kk", "reasoning_effort")
GENAI_KEYS = ("judge_model_config", "judgeModelConfig", "model_configuration")
GENAI_KEYS += ("modelConfiguration", "audio_model_configuration")

Json = Any


# --- ADK's side (run as a script: stdin, a JSON list of configs; stdout, a verdict for each) ---


def _adk_worker() -> None:  # pragma: no cover - runs in a subprocess
    import importlib
    import logging
    import warnings
    from unittest import mock

    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    for name in ("pandas", "vertexai", "agentplatform"):  # ADK's [eval] extra, used to score
        try:
            importlib.import_module(name)
        except ImportError:
            sys.modules[name] = mock.MagicMock(name=name)

    from google.adk.evaluation import eval_config as adk_config
    from google.adk.evaluation.metric_evaluator_registry import (
        DEFAULT_METRIC_EVALUATOR_REGISTRY,
        register_custom_metrics_from_config,
    )
    from pydantic import BaseModel, ValidationError

    def keys_of(model: type[BaseModel]) -> set[str]:
        return {n for n, f in model.model_fields.items()} | {
            f.alias for f in model.model_fields.values() if f.alias
        }

    def errors(exc: BaseException) -> list[dict[str, Any]]:
        cause = exc if isinstance(exc, ValidationError) else exc.__cause__
        if isinstance(cause, ValidationError):
            return [{"loc": list(e["loc"]), "msg": e["msg"]} for e in cause.errors()]
        return [{"loc": [], "msg": f"{type(exc).__name__}: {exc}"}]

    def verdict(data: Json) -> dict[str, Any]:
        try:
            config = adk_config.EvalConfig.model_validate_json(json.dumps(data))
        except ValidationError as exc:
            return {"refused": True, "errors": errors(exc)}
        found: list[dict[str, Any]] = []
        ignored: list[list[Any]] = [[k] for k in data if k not in keys_of(adk_config.EvalConfig)]
        given = {
            key: data[key] for key in data if key in keys_of(adk_config.EvalConfig)
        }  # spelled as written
        for key, value in given.items():
            if key in {"custom_metrics", "customMetrics"} and isinstance(value, dict):
                ignored += [
                    [key, name, k]
                    for name, entry in value.items()
                    for k in entry
                    if k not in keys_of(adk_config.CustomMetricConfig)
                ]
            if key in {"live_model_config", "liveModelConfig"} and isinstance(value, dict):
                ignored += [[key, k] for k in value if k not in keys_of(adk_config.LiveModelConfig)]
            simulator = config.user_simulator_config
            if key in {"user_simulator_config", "userSimulatorConfig"} and simulator is not None:
                ignored += [[key, k] for k in simulator.model_extra or {}]
        criteria_key = "criteria"
        metrics = adk_config.get_eval_metrics_from_config(config)
        registry = register_custom_metrics_from_config(
            config, DEFAULT_METRIC_EVALUATOR_REGISTRY.fork()
        )
        custom = set(config.custom_metrics or {})
        for metric in metrics:  # each on its own: one failing metric does not hide another
            try:
                evaluator = registry.get_evaluator(metric)
            except Exception as exc:  # what LocalEvalService would log as NOT_EVALUATED
                found += [
                    {"loc": [criteria_key, metric.metric_name, *e["loc"]], "msg": e["msg"]}
                    for e in errors(exc)
                ]
                continue
            if metric.criterion is not None and metric.metric_name not in custom:
                typed = type(evaluator).criterion_type.model_validate(metric.criterion.model_dump())
                ignored += [[criteria_key, metric.metric_name, k] for k in typed.model_extra or {}]
        dumped = config.model_dump(mode="json")
        return {
            "refused": bool(found),
            "errors": found,
            "ignored": ignored,
            "criteria": dumped["criteria"],
            "simulator_extra": (
                config.user_simulator_config.model_extra if config.user_simulator_config else None
            ),
        }

    configs = json.load(sys.stdin)
    json.dump([verdict(data) for data in configs], sys.stdout)


# --- the generator ----------------------------------------------------------------------------

JUDGE_METRICS = [n for n, t in CRITERION_TYPES.items() if "judge_model_options" in t.model_fields]
TEMPLATE = "{{ stop_signal }} {{ conversation_plan }} {{ conversation_history }}"


class Gen:
    """Random config parts, each a valid value most of the time and a mistake otherwise."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, *options: Any) -> Any:
        return copy.deepcopy(self.rng.choice(options))

    def key(self, name: str) -> str:
        """``name`` in snake_case, or now and then in camelCase."""
        if self.chance(0.2):
            head, *rest = name.split("_")
            return head + "".join(w.capitalize() for w in rest)
        return name

    def typo(self, name: str) -> str:
        i = self.rng.randrange(len(name))
        return self.pick(name[:i] + name[i + 1 :], name + "s", name[:-1], name.replace("_", ""))

    def mutate(self, obj: dict[str, Any], known: list[str], p: float = 0.12) -> dict[str, Any]:
        """Now and then: a typo of a known key, an extra key, a key removed."""
        if known and self.chance(p):
            name = self.pick(*known)
            obj[self.typo(name)] = obj.pop(name, self.pick(1, "x", True, None, 0.5))
        if self.chance(p):
            obj[self.pick("foo", "notes", "version", "enabled", "weight")] = self.pick(1, "x", [])
        return obj

    def threshold(self) -> Json:
        if self.chance(0.85):
            return self.pick(round(self.rng.random(), 2), 1, 0, 1.0, "0.5", " 0.7 ", "1e-1")
        return self.pick(True, False, "high", None, [0.5], {"v": 1}, "")

    def boolean(self) -> Json:
        return self.pick(True, False) if self.chance(0.9) else self.pick("yes", 0, 1, "maybe", 2)

    def judge_options(self) -> Json:
        if self.chance(0.05):
            return self.pick(None, "gemini-2.5-flash", [], 5)
        options: dict[str, Any] = {}
        if self.chance(0.5):
            options[self.key("judge_model")] = self.pick("gemini-2.5-flash", "gemini-2.5-pro")
        if self.chance(0.4):
            options[self.key("num_samples")] = self.pick(1, 3, 5, 0, -1, True, "2", "x", 2.0, 1.5)
        if self.chance(0.3):
            options[self.key("parallelism_limit")] = self.pick(1, 2, 0, "x")
        if self.chance(0.3):
            options[self.key("judge_model_config")] = self.pick(
                {"temperature": 0.2}, {"max_output_tokens": 100, "top_p": 0.9}, None, "hot"
            )
        known = ["judge_model", "num_samples", "parallelism_limit", "judge_model_config"]
        return self.mutate(options, known, 0.25)

    def rubric(self, i: int) -> Json:
        if self.chance(0.04):
            return self.pick("polite", None, 3)
        content: Json = {self.key("text_property"): self.pick("Polite.", None, 5)}
        content = self.mutate(content, ["text_property"], 0.15)
        if self.chance(0.04):
            content = self.pick("Polite.", None)
        rubric: dict[str, Any] = {
            self.key("rubric_id"): f"r{i}",
            self.key("rubric_content"): content,
        }
        if self.chance(0.3):
            rubric["description"] = self.pick("d", None, 1)
        if self.chance(0.3):
            rubric["type"] = self.pick("FINAL_RESPONSE_QUALITY", "TOOL_USE_QUALITY", None)
        return self.mutate(rubric, ["rubric_id", "rubric_content", "description", "type"], 0.12)

    def optional_fields(self) -> dict[str, tuple[float, float, Callable[[], Json]]]:
        """Each optional criterion field: how often it is given to a metric whose model reads it,
        how often to one whose model does not, and a value for it."""
        return {
            "match_type": (
                0.6,
                0.03,
                lambda: self.pick("EXACT", "in order", "Any-Order", 0, 2, 1.0, 3, "bogus", None),
            ),
            "ignore_args": (0.3, 0.02, self.boolean),
            "judge_model_options": (0.7, 0.06, self.judge_options),
            "rubrics": (0.7, 0.04, self.rubrics),
            "evaluate_intermediate_nl_responses": (0.5, 0.03, self.boolean),
            "stop_signal": (0.5, 0.03, lambda: self.pick("<done/>", "</finished>", 5, None)),
        }

    def rubrics(self) -> Json:
        if self.chance(0.05):
            return self.pick(None, "r1", {"r": 1})
        return [self.rubric(i) for i in range(self.rng.randint(0, 2))]

    def criterion(self, name: str) -> Json:
        if self.chance(0.35):
            return self.threshold()
        kind = CRITERION_TYPES.get(name)
        fields = list(kind.model_fields) if kind else ["threshold"]
        obj: dict[str, Any] = {}
        if self.chance(0.95):
            obj["threshold"] = self.threshold()
        if self.chance(0.2):
            obj[self.key("include_intermediate_responses_in_final")] = self.boolean()
        # The fields of every criterion model, on any metric: known to some, ignored by others.
        for field, (p_known, p_other, make) in self.optional_fields().items():
            if self.chance(p_known if field in fields else p_other):
                obj[self.key(field) if field != "rubrics" else field] = make()
        if self.chance(0.1):  # a key one level too high (it belongs in judge_model_options)
            obj[self.pick("num_samples", "judge_model")] = self.pick(3, "gemini-2.5-flash")
        return self.mutate(obj, fields, 0.15)

    def custom_metrics(self, names: list[str]) -> Json:
        if self.chance(0.04):
            return self.pick(None, [], "x")
        out: dict[str, Any] = {}
        for name in names:
            code: Json = {"name": "json.dumps"}
            if self.chance(0.2):
                code["args"] = []
            code = self.mutate(code, ["name"], 0.1)
            if self.chance(0.04):
                code = self.pick("json.dumps", None)
            entry: dict[str, Any] = {self.key("code_config"): code}
            if self.chance(0.25):
                info: dict[str, Any] = {
                    self.key("metric_name"): name,
                    self.key("metric_value_info"): {
                        "interval": {self.key("min_value"): 0, self.key("max_value"): 10}
                    },
                }
                if self.chance(0.3):
                    info["description"] = self.pick("mine", 3)
                entry[self.key("metric_info")] = self.mutate(
                    info, ["metric_name", "metric_value_info", "requires_threshold"], 0.15
                )
            if self.chance(0.2):
                entry["description"] = self.pick("my metric", 5)
            out[name] = self.mutate(entry, ["code_config", "metric_info", "description"], 0.2)
        return out

    def simulator(self) -> Json:
        if self.chance(0.04):
            return self.pick(None, "llm_backed", 3)
        sim: dict[str, Any] = {}
        if self.chance(0.4):
            sim["type"] = self.pick("llm_backed", "llm_backed", "llm_audio", None, "scripted", 5)
        if self.chance(0.4):
            sim["model"] = self.pick("gemini-2.5-flash", "", 5)
        if self.chance(0.4):
            sim[self.key("max_allowed_invocations")] = self.pick(-1, 5, 20, 0, -3, True, "x", 2.5)
        if self.chance(0.3):
            sim[self.key("custom_instructions")] = self.pick(TEMPLATE, "Plan only", None, 5)
        if self.chance(0.2):
            sim[self.key("include_function_calls")] = self.boolean()
        if self.chance(0.2):
            sim[self.key("model_configuration")] = self.pick({"temperature": 0.1}, {}, "hot")
        if self.chance(0.15):
            sim[self.key("audio_model")] = self.pick("cloud_tts", 5)
        if self.chance(0.1):
            sim[self.key("include_text_with_audio")] = self.boolean()
        fields = ["type", "model", "max_allowed_invocations", "custom_instructions"]
        return self.mutate(sim, fields, 0.25)

    def config(self) -> dict[str, Any]:
        names = list(CRITERION_TYPES)
        custom = (
            [f"my_metric_{i}" for i in range(self.rng.randint(0, 2))] if self.chance(0.3) else []
        )
        chosen = self.rng.sample(names, self.rng.randint(0, 4))
        if self.chance(0.06):
            chosen.append(self.pick(*INFORMATIONAL_METRICS))
        if self.chance(0.06):
            chosen.append(self.pick("respons_match_score", "zzz", "safety"))
        chosen += [n for n in custom if self.chance(0.8)]
        if chosen and self.chance(0.08):  # a custom metric named like a built-in one
            custom.append(self.pick(*chosen))
        config: dict[str, Any] = {}
        if self.chance(0.95):
            criteria = {name: self.criterion(name) for name in chosen}
            config["criteria"] = criteria if self.chance(0.97) else self.pick(None, [], "x")
        if custom or self.chance(0.05):
            config[self.key("custom_metrics")] = self.custom_metrics(custom)
        if self.chance(0.25):
            config[self.key("user_simulator_config")] = self.simulator()
        if self.chance(0.1):
            live: Json = {self.key("timeout_seconds"): self.pick(30, "60", "x", 1.5)}
            config[self.key("live_model_config")] = self.mutate(live, ["timeout_seconds"], 0.3)
        return self.mutate(config, ["criteria", "custom_metrics", "user_simulator_config"], 0.15)

    def with_genai_typo(self, config: dict[str, Any]) -> dict[str, Any] | None:
        """``config`` with a key google-genai does not know in one generation config, or None
        when it has no LLM-judge criterion object or simulator to put one in."""
        variant = copy.deepcopy(config)
        places: list[dict[str, Any]] = []
        criteria = variant.get("criteria")
        for name, entry in criteria.items() if isinstance(criteria, dict) else ():
            if name in JUDGE_METRICS and isinstance(entry, dict):
                options = _inner(entry, "judge_model_options", "judgeModelOptions")
                settings = _inner(options, "judge_model_config", "judgeModelConfig")
                if settings is not None:
                    places.append(settings)
        sim = _inner(variant, "user_simulator_config", "userSimulatorConfig", create=False)
        settings = _inner(sim, "model_configuration", "modelConfiguration")
        if settings is not None:
            places.append(settings)
        if not places:
            return None
        self.rng.choice(places)[self.pick(*GENAI_TYPOS)] = 0.5
        return variant


def _inner(obj: Any, snake: str, camel: str, *, create: bool = True) -> dict[str, Any] | None:
    """The object under ``obj``'s key (as written, camelCase first as pydantic reads it),
    added when missing; None when there is none to add to."""
    if not isinstance(obj, dict):
        return None
    key = camel if camel in obj else snake
    if key not in obj and create:
        obj[key] = {}
    found = obj.get(key)
    return found if isinstance(found, dict) else None


@dataclass
class Case:
    data: dict[str, Any]
    base: int | None = None
    """For a variant with a google-genai typo: the index of the config it was made from."""


def generate() -> list[Case]:
    gen = Gen(random.Random(SEED))
    cases = [Case(gen.config()) for _ in range(COUNT)]
    for index in range(0, COUNT, 2):
        variant = gen.with_genai_typo(cases[index].data)
        if variant is not None:
            cases.append(Case(variant, base=index))
    return cases


# --- the comparison ---------------------------------------------------------------------------


@dataclass
class Outcome:
    case: Case
    adk: dict[str, Any]
    config: EvalConfig | None
    problems: list[str]


def _assay(data: dict[str, Any]) -> tuple[EvalConfig | None, list[str]]:
    try:
        return check_config(data, "c.json"), []
    except ConfigError as exc:
        return None, [str(p) for p in exc.problems]


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    cases = generate()
    done = subprocess.run(
        [sys.executable, __file__],
        input=json.dumps([case.data for case in cases]),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    verdicts = json.loads(done.stdout)
    assert len(verdicts) == len(cases)
    return [
        Outcome(case, adk, *_assay(case.data)) for case, adk in zip(cases, verdicts, strict=True)
    ]


def _show(outcome: Outcome) -> str:
    return (
        f"\nconfig: {json.dumps(outcome.case.data)}\nADK: {json.dumps(outcome.adk['errors'])}"
        f"\nassay: {outcome.problems}"
    )


def _mismatches(outcomes: list[Outcome], check: Callable[[Outcome], bool]) -> list[str]:
    return [_show(o) for o in outcomes if not check(o)]


def test_the_generated_configs_exercise_both_verdicts_and_the_warnings(
    outcomes: list[Outcome],
) -> None:
    plain = [o for o in outcomes if o.case.base is None]
    accepted = [o for o in plain if not o.adk["refused"]]
    refused = [o for o in plain if o.adk["refused"]]
    warned = [o for o in accepted if o.config is not None and o.config.warnings]
    departures = [o for o in outcomes if o.case.base is not None]

    assert len(plain) == COUNT
    assert len(accepted) >= 150 and len(refused) >= 150, (len(accepted), len(refused))
    assert len(warned) >= 75, len(warned)
    assert len(departures) >= 60, len(departures)
    refused_when_built = [
        o for o in refused if any(e["loc"][:1] == ["criteria"] for e in o.adk["errors"])
    ]
    assert len(refused_when_built) >= 30  # ADK's second step, when it builds the evaluators


def test_assay_refuses_exactly_the_configs_adk_refuses(outcomes: list[Outcome]) -> None:
    plain = [o for o in outcomes if o.case.base is None]

    wrong = _mismatches(plain, lambda o: bool(o.problems) == o.adk["refused"])

    assert not wrong, f"{len(wrong)} of {len(plain)} differ:" + "".join(wrong[:5])


def test_assay_warns_about_exactly_the_keys_adk_ignores(outcomes: list[Outcome]) -> None:
    def same(o: Outcome) -> bool:
        if o.config is None or o.adk["refused"]:
            return True
        ours = {w.path for w in o.config.warnings if w.message.startswith("unknown key")}
        return ours == {format_path(path) for path in o.adk["ignored"]}

    plain = [o for o in outcomes if o.case.base is None]
    wrong = _mismatches(plain, same)

    assert not wrong, f"{len(wrong)} differ:" + "".join(wrong[:5])


def test_a_generation_setting_adk_refuses_is_a_warning_not_an_error(
    outcomes: list[Outcome],
) -> None:
    by_index = {i: o for i, o in enumerate(outcomes) if o.case.base is None}
    variants = [o for o in outcomes if o.case.base is not None]
    shown = 0
    for variant in variants:
        base = by_index[variant.case.base or 0]
        assert bool(variant.problems) == base.adk["refused"], _show(variant)
        if base.adk["refused"] or not variant.adk["refused"]:
            continue
        shown += 1
        assert all(set(map(str, e["loc"])) & set(GENAI_KEYS) for e in variant.adk["errors"]), _show(
            variant
        )
        assert variant.config is not None
        assert any("so ADK refuses this config" in w.message for w in variant.config.warnings)
    assert shown >= 20, shown


def test_bare_thresholds_and_ignored_keys_are_written_back_as_adk_writes_them(
    outcomes: list[Outcome],
) -> None:
    checked = 0
    for o in outcomes:
        if o.config is None or o.adk["refused"] or o.case.base is not None:
            continue
        ours = o.config.criteria_as_written()
        for name, adk in o.adk["criteria"].items():
            if isinstance(adk, float):
                assert ours[name] == adk, _show(o)
                checked += 1
            else:
                ignored = o.config.criteria[name].ignored_keys
                assert {k: ours[name][k] for k in ignored} == {k: adk[k] for k in ignored}
        if o.adk["simulator_extra"] is not None:
            assert o.config.user_simulator_config is not None
            assert o.config.user_simulator_config.model_extra == o.adk["simulator_extra"]
        again = check_config(o.config.model_dump(mode="json"), "again.json")
        assert again == o.config or again.model_dump() == o.config.model_dump(), _show(o)
    assert checked >= 80, checked


if __name__ == "__main__":
    _adk_worker()
