"""Which judge each metric gets, and the pool of clients the judges share.

The judge model of a metric is, first to last:

1. ``--judge-model`` (the ``override``);
2. ``ASSAY_JUDGE_MODEL`` in the environment;
3. the criterion's ``judge_model_options.judge_model``, when the config set it;
4. ADK's default, ``gemini-2.5-flash``, when google-genai is installed and Gemini credentials
   are set;
5. ``local:``, the embedded offline judge, when its runtime (xllamacpp) and model are installed;
6. none: the metric is NOT_EVALUATED, with a reason that says how to get a judge.

Steps 4 and 5 only check what is installed and set; nothing is imported, built or loaded.

Results name the judge that scored them the same way everywhere: :func:`judged_model` is the
model string written into each judged criterion's ``judge_model_options.judge_model`` (the
embedded judge's concrete name, ``local:qwen2.5-coder-1.5b``, rather than ``local:``), and
:func:`describe_judge` is the judge in words, with why it was chosen, for the console, the
HTML report and the run history (``embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M (no
--judge-model, no ASSAY_JUDGE_MODEL, no Gemini credentials)``, ``openai:gpt-4o-mini (from
--judge-model)``). The simulated user's model is named the same way.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from assay.config import DEFAULT_JUDGE_MODEL, BaseCriterion, LlmAsAJudgeCriterion
from assay.llm.backends.gemini import gemini_credentials, genai_available
from assay.llm.backends.local_runtime import INSTALL_RUNTIME, runtime_available
from assay.llm.base import LlmBackend, LlmUnavailableError, UsageLedger
from assay.llm.budget import CostMeter
from assay.llm.cache import ResponseCache
from assay.llm.client import LlmClient, RetryPolicy
from assay.llm.endpoint import Endpoint, Endpoints
from assay.llm.judge import Judge
from assay.llm.models import DEFAULT_MODEL, builtin_model, installed
from assay.llm.profile import CriterionProfile, JudgeProfile
from assay.llm.redact import redact
from assay.llm.registry import resolve_backend

if TYPE_CHECKING:
    from assay.llm.shared import ResponseStore, SharedLimit

JudgeSource = Literal["--judge-model", "ASSAY_JUDGE_MODEL", "config", "default", "embedded"]

EMBEDDED_MODEL = "local:"


@dataclass(frozen=True)
class JudgeChoice:
    """A judge model and why it was chosen (``source``, one of :data:`JudgeSource`).

    ``why`` says more than ``source`` where the choice depended on what was missing (the
    embedded judge: no Gemini credentials, or no google-genai); it is words for people, so two
    choices of the same model from the same source are equal whatever it says."""

    model: str
    source: str
    why: str | None = field(default=None, compare=False)


_REASONS: Mapping[str, str] = {
    "--judge-model": "from --judge-model",
    "ASSAY_JUDGE_MODEL": "from ASSAY_JUDGE_MODEL",
    "config": "from the config",
    "default": "ADK's default: Gemini credentials present",
    "embedded": "no --judge-model, no ASSAY_JUDGE_MODEL, no Gemini credentials",
}
"""Why a judge was chosen, in words, by :data:`JudgeSource`."""


def judged_model(model: str) -> str:
    """The model string that names the judge in results (each judged criterion's
    ``judge_model_options.judge_model``): a built-in local model by its concrete name
    (``local:`` is ``local:qwen2.5-coder-1.5b``), so the file says which model scored it
    whatever a later assay's default is, and giving the string back as ``--judge-model`` picks
    the same judge; any other string as given. Secrets are masked."""
    spec = builtin_model(model)
    if spec is not None:
        return f"local:{spec.name}"
    return redact(model.strip())


def judge_name(model: str) -> str:
    """A judge model in words: a built-in local model by its display name from the catalogue
    (``embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M``), another ``local:`` file as
    ``embedded local:<path>``, anything else as its model string. Secrets are masked."""
    spec = builtin_model(model)
    if spec is not None:
        return f"embedded {spec.shown_name}"
    shown = redact(model.strip())
    return f"embedded {shown}" if shown.startswith("local:") else shown


def describe_judge(choice: JudgeChoice) -> str:
    """The judge in words, with why it was chosen: ``embedded Qwen2.5-Coder-1.5B-Instruct
    Q4_K_M (no --judge-model, no ASSAY_JUDGE_MODEL, no Gemini credentials)``,
    ``openai:gpt-4o-mini (from --judge-model)``; just the model when the source is unknown."""
    reason = choice.why or _REASONS.get(choice.source, choice.source)  # assay's words
    name = judge_name(choice.model)
    return f"{name} ({reason})" if reason else name


def judge_backend(judge: Judge) -> str | None:
    """The kind of backend that serves ``judge`` (``local``, ``openai``, ``ollama``,
    ``gemini``, ``litellm``, ``scripted``), when its client is an :class:`LlmClient`."""
    client = judge.client
    return client.backend.name if isinstance(client, LlmClient) else None


def no_judge_reason() -> str:
    """Why there is no judge, and the ways to get one."""
    return (
        "no judge model: pass --judge-model (or set ASSAY_JUDGE_MODEL) to "
        "openai:<model> (OPENAI_API_KEY) or ollama:<model> (a local Ollama server); "
        "or set GOOGLE_API_KEY for ADK's default gemini-2.5-flash (pip install 'assay[gemini]'); "
        f"or install the offline judge: {INSTALL_RUNTIME} and its model: {DEFAULT_MODEL.install}"
    )


def configured_judge_model(criterion: BaseCriterion | None) -> str | None:
    """The criterion's judge model when the config set it explicitly, else None."""
    if not isinstance(criterion, LlmAsAJudgeCriterion):
        return None
    options = criterion.judge_model_options
    if "judge_model_options" in criterion.model_fields_set and (
        "judge_model" in options.model_fields_set
    ):
        return options.judge_model
    return None


def choose_judge_model(
    criterion: BaseCriterion | None, *, override: str | None, env: Mapping[str, str]
) -> JudgeChoice | str:
    """The judge model for a metric configured by ``criterion``, or why there is none."""
    if override and override.strip():
        return JudgeChoice(override.strip(), "--judge-model")
    from_env = env.get("ASSAY_JUDGE_MODEL", "").strip()
    if from_env:
        return JudgeChoice(from_env, "ASSAY_JUDGE_MODEL")
    configured = configured_judge_model(criterion)
    if configured is not None:
        return JudgeChoice(configured, "config")
    credentials = gemini_credentials(env) is not None
    if genai_available() and credentials:
        return JudgeChoice(DEFAULT_JUDGE_MODEL, "default", _REASONS["default"])
    if runtime_available() and installed(DEFAULT_MODEL):
        gemini = "google-genai not installed" if credentials else "no Gemini credentials"
        why = f"no --judge-model, no ASSAY_JUDGE_MODEL, {gemini}"
        return JudgeChoice(EMBEDDED_MODEL, "embedded", why)
    return no_judge_reason()


@dataclass
class _Resolved:
    client: LlmClient | None = None
    reason: str | None = None


REMOTE_TIMEOUT_S = 120.0
"""Seconds one attempt at a remote judge may take, unless the run says otherwise."""
LOCAL_TIMEOUT_S = 600.0
"""Seconds one call to the embedded judge may take (a long prompt on 2 CPU cores is slow)."""


class JudgePool:
    """Hands each judged metric a :class:`~assay.llm.judge.Judge`, sharing one
    :class:`~assay.llm.client.LlmClient` per model string, one
    :class:`~assay.llm.endpoint.Endpoint` per server those call (so ``concurrency`` bounds all
    calls to one server, whatever models they name: :func:`~assay.llm.endpoint.endpoint_key`)
    and one :class:`~assay.llm.base.UsageLedger`. ``adaptive`` False keeps each endpoint's
    limit at ``concurrency`` instead of adapting it to the server's answers.

    A model whose backend cannot be made (a missing key or extra) is tried once; every metric
    that chose it gets the same reason string. ``backend_factory`` makes a backend from a model
    string (default: :func:`~assay.llm.registry.resolve_backend` with this pool's ``env``).
    """

    def __init__(
        self,
        *,
        override: str | None = None,
        env: Mapping[str, str] | None = None,
        concurrency: int = 8,
        timeout_s: float | None = None,
        retry: RetryPolicy | None = None,
        cache: ResponseCache | ResponseStore | None = None,
        backend_factory: Callable[[str], LlmBackend] | None = None,
        profile: JudgeProfile | None = None,
        transcript: dict[tuple[str, str], str] | None = None,
        limit: SharedLimit | None = None,
        early_stop: bool = False,
        meter: CostMeter | None = None,
        adaptive: bool = True,
    ) -> None:
        self.override = override
        self.early_stop = early_stop
        """Every judge stops asking an invocation's samples once the vote is decided."""
        self.meter = meter
        """The run's cost meter (``--max-cost``), shared by every judge of the pool."""
        self.profile = profile
        self.transcript = transcript
        self.unprofiled: dict[str, str] = {}
        """Metrics the profile has a rule for but whose judge is another model than it was
        fitted for (so it was not applied), with that model."""
        self.env: Mapping[str, str] = dict(os.environ) if env is None else env
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.retry = retry
        self.cache = cache
        self.limit = limit
        """Also bounds calls to each remote model across every pool sharing it (a cluster's
        workers); an embedded model, one per process, keeps its own limit."""
        self.backend_factory = backend_factory
        self.endpoints = Endpoints(adaptive)
        """The endpoints the pool's clients call, each with the limit they share."""
        self.ledger = UsageLedger()
        self._choices: dict[str, JudgeChoice] = {}
        self._resolved: dict[str, _Resolved] = {}

    def judge_for(self, metric: str, criterion: BaseCriterion | None) -> Judge | str:
        """The judge for ``metric``, or why it has none (a NOT_EVALUATED reason)."""
        choice = choose_judge_model(criterion, override=self.override, env=self.env)
        if isinstance(choice, str):
            return choice
        self._choices[metric] = choice
        resolved = self._resolve(choice.model)
        if resolved.client is None:
            return resolved.reason or f"judge {choice.model} unavailable"
        profile = self.profile_for(metric, choice)
        source = self.profile.source or "" if self.profile and profile else ""
        return Judge(
            resolved.client,
            metric,
            choice.source,
            self.ledger,
            profile,
            source,
            self.transcript,
            early_stop=self.early_stop,
            meter=self.meter,
        )

    def profile_for(self, metric: str, choice: JudgeChoice) -> CriterionProfile | None:
        """``metric``'s rule from the profile, when the profile was fitted for the judge chosen."""
        if self.profile is None or self.profile.for_criterion(metric) is None:
            return None
        if judged_model(choice.model) != self.profile.judge_model:
            self.unprofiled[metric] = judged_model(choice.model)
            return None
        return self.profile.for_criterion(metric)

    def models(self) -> dict[str, JudgeChoice]:
        """The judge chosen for each metric asked about so far."""
        return dict(self._choices)

    async def aclose(self) -> None:
        """Close every client (and its backend)."""
        clients = [r.client for r in self._resolved.values() if r.client is not None]
        self._resolved.clear()
        for client in clients:
            await client.aclose()

    def _backend(self, model: str) -> LlmBackend:
        if self.backend_factory is not None:
            return self.backend_factory(model)
        return resolve_backend(model, env=self.env)

    def _resolve(self, model: str) -> _Resolved:
        if model not in self._resolved:
            try:
                backend = self._backend(model)
            except LlmUnavailableError as exc:
                self._resolved[model] = _Resolved(reason=f"judge {model} unavailable: {exc}")
            else:
                self._resolved[model] = _Resolved(client=self._client(backend))
        return self._resolved[model]

    def _client(self, backend: LlmBackend) -> LlmClient:
        # A local model answers one call at a time, so queueing more only runs out their timeout;
        # and on a CPU one long judge prompt takes minutes, not seconds.
        local = backend.name == "local"
        concurrency = 1 if local else self.concurrency
        timeout = self.timeout_s or (LOCAL_TIMEOUT_S if local else REMOTE_TIMEOUT_S)
        retry = self.retry or RetryPolicy()
        if retry.deadline_s < timeout:
            retry = dataclasses.replace(retry, deadline_s=timeout)
        return LlmClient(
            backend,
            concurrency=concurrency,
            timeout_s=timeout,
            retry=retry,
            cache=self.cache,
            limit=None if local else self.limit,
            endpoint=self.endpoint_for(backend, concurrency),
        )

    def endpoint_for(self, backend: LlmBackend, concurrency: int | None = None) -> Endpoint:
        """The endpoint ``backend`` calls, shared with every other client of the pool calling
        it (made with ``concurrency`` slots, default the pool's, by the first)."""
        return self.endpoints.for_backend(backend, concurrency or self.concurrency)
