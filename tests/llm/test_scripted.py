"""The scripted backend: replies in turn, rules from JSON or YAML, functions that fail."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from assay.llm.backends.scripted import ScriptedBackend, ScriptRules
from assay.llm.base import LlmCallError, LlmError, LlmRequest, LlmResponse, LlmUnavailableError


def _ask(backend: ScriptedBackend, text: str, *, system: str | None = None) -> LlmResponse:
    return asyncio.run(backend.generate(LlmRequest.user(text, system=system)))


def _texts(backend: ScriptedBackend, n: int) -> list[str]:
    async def run() -> list[str]:
        return [(await backend.generate(LlmRequest.user(f"q{i}"))).text for i in range(n)]

    return asyncio.run(run())


def test_a_list_of_replies_is_used_in_turn_and_starts_again_after_the_last() -> None:
    assert _texts(ScriptedBackend(["a", "b", "c"]), 5) == ["a", "b", "c", "a", "b"]


def test_a_single_string_is_one_reply_not_a_list_of_characters() -> None:
    assert _texts(ScriptedBackend("valid"), 2) == ["valid", "valid"]


def test_usage_counts_words_of_every_message_and_of_the_reply() -> None:
    response = _ask(ScriptedBackend(["one two three"]), "four five", system="six")
    assert response.usage.prompt_tokens == 3
    assert response.usage.completion_tokens == 3
    assert response.usage.calls == 1
    assert response.model == "scripted:"


def test_an_error_in_the_list_is_raised_in_its_turn() -> None:
    backend = ScriptedBackend([LlmCallError("overloaded", retryable=True, status=503), "ok"])
    with pytest.raises(LlmCallError, match="overloaded") as caught:
        _ask(backend, "x")
    assert caught.value.retryable
    assert _ask(backend, "x").text == "ok"


def test_a_function_sees_the_request_and_can_return_or_raise_an_error() -> None:
    def reply(request: LlmRequest) -> str | LlmError:
        text = request.messages[-1].content
        if text == "raise":
            raise LlmCallError("boom", retryable=False)
        if text == "return":
            return LlmCallError("returned", retryable=True)
        return text.upper()

    backend = ScriptedBackend(reply)
    assert _ask(backend, "hi").text == "HI"
    with pytest.raises(LlmCallError, match="boom"):
        _ask(backend, "raise")
    with pytest.raises(LlmCallError, match="returned"):
        _ask(backend, "return")
    assert [r.messages[-1].content for r in backend.requests] == ["hi", "raise", "return"]


def test_rules_match_a_regex_in_the_last_user_message(tmp_path: Path) -> None:
    script = tmp_path / "judge.json"
    script.write_text(
        json.dumps(
            {
                "rules": [
                    {"match": "(?i)paris", "reply": "valid"},
                    {"match": "Berlin", "reply": {"verdict": "invalid"}},
                ],
                "default": "unsure",
            }
        )
    )
    backend = ScriptedBackend.from_file(script)
    assert _ask(backend, "The capital is PARIS", system="Berlin is in the system prompt").text == (
        "valid"
    )
    assert json.loads(_ask(backend, "Berlin").text) == {"verdict": "invalid"}
    assert _ask(backend, "Rome").text == "unsure"
    assert backend.model == f"scripted:{script}"


def test_rules_read_from_yaml_without_a_default_fail_when_nothing_matches(tmp_path: Path) -> None:
    script = tmp_path / "judge.yaml"
    script.write_text("rules:\n  - match: yes\n    reply: 'ok'\n")
    backend = ScriptedBackend.from_file(script)
    assert _ask(backend, "say yes").text == "ok"
    with pytest.raises(LlmCallError, match="no rule matches") as caught:
        _ask(backend, "no")
    assert not caught.value.retryable


def test_a_yaml_list_of_replies_is_read_in_order(tmp_path: Path) -> None:
    script = tmp_path / "replies.yml"
    script.write_text("- first\n- {label: second}\n")
    assert _texts(ScriptedBackend.from_file(script), 2) == ["first", '{"label": "second"}']


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[]", "has no replies"),
        ('"just text"', "is not a script"),
        ('{"rules": [{"match": "(", "reply": "x"}]}', "rules.0.match"),
        ('{"rules": [], "defualt": "x"}', "defualt"),
        ("{not json", "cannot read the script"),
    ],
)
def test_a_bad_script_file_says_what_is_wrong_and_what_a_script_looks_like(
    tmp_path: Path, content: str, message: str
) -> None:
    script = tmp_path / "bad.json"
    script.write_text(content)
    with pytest.raises(LlmUnavailableError, match=message) as caught:
        ScriptedBackend.from_file(script)
    assert "list of replies" in str(caught.value) or "cannot read" in str(caught.value)


def test_cache_identity_changes_with_the_script() -> None:
    first = ScriptedBackend(["a"]).cache_identity()
    assert first == ScriptedBackend(["a"]).cache_identity()
    assert first != ScriptedBackend(["b"]).cache_identity()
    rules = ScriptRules.model_validate({"rules": [{"match": "x", "reply": "y"}]})
    assert ScriptedBackend(rules).cache_identity() != first


def test_an_empty_list_is_refused() -> None:
    with pytest.raises(LlmUnavailableError, match="no replies"):
        ScriptedBackend([])
