"""redact: secrets named, secrets in the environment, and credential-shaped text are masked."""

from __future__ import annotations

import pytest

from assay.llm.redact import _known_values_pattern, redact, secret_env_values


def test_given_secrets_are_masked_longest_first() -> None:
    text = "key abcdefgh1234 and its prefix abcdefgh"
    assert redact(text, ["abcdefgh", "abcdefgh1234"]) == "key *** and its prefix ***"


def test_empty_secrets_are_ignored() -> None:
    assert redact("nothing to hide", ["", ""]) == "nothing to hide"


@pytest.mark.parametrize(
    "name",
    ["OPENAI_API_KEY", "MY_KEY", "GITHUB_TOKEN", "CLIENT_SECRET", "DB_PASSWORD", "password_2"],
)
def test_values_of_secret_looking_variables_are_masked(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv(name, "v4lue-0f-the-secret")
    assert redact("server said v4lue-0f-the-secret is wrong") == "server said *** is wrong"


def test_short_or_innocent_variables_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEBUG_KEY", "1234567")  # shorter than 8 characters
    monkeypatch.setenv("MODEL_NAME", "gpt-4o-mini-judge")  # not a secret name
    text = "retry 1234567 with gpt-4o-mini-judge"
    assert redact(text) == text


def test_secret_env_values_reads_a_given_mapping() -> None:
    env = {"X_TOKEN": "abcdefghij", "KEYBOARD": "qwertyuiop", "Y_KEY": "short"}
    assert secret_env_values(env) == ("abcdefghij",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.DEF-123_x", "Authorization: Bearer ***"),
        ("bad key sk-proj-AbCdEf0123456789xyz given", "bad key *** given"),
        ("key sk-test-SECRET123456.", "key ***."),
        ("AIzaSyA1234567890abcdefghijklmnopqrstu rejected", "*** rejected"),
        (
            "GET https://x.googleapis.com/v1/models?key=AIzaSyXYZ&alt=json failed",
            "GET https://x.googleapis.com/v1/models?key=***&alt=json failed",
        ),
        ("https://h/p?a=1&api_key=abc123", "https://h/p?a=1&api_key=***"),
        ("https://h/p?access_token=t0k#frag", "https://h/p?access_token=***#frag"),
    ],
)
def test_credential_shaped_text_is_masked(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "HTTP 503 from http://127.0.0.1:8080/v1 (service unavailable)",
        "a risk-free task-based skeleton",
        "the monkey=1 keyboard",
    ],
)
def test_ordinary_text_is_unchanged(text: str) -> None:
    assert redact(text) == text


def test_the_pattern_of_known_values_is_compiled_once_for_every_error_message() -> None:
    """Every LLM error passes through redact: its pattern of secret values is compiled once per
    distinct set of values, not once a message."""
    message = "HTTP 500 from http://127.0.0.1:8080/v1 (internal server error): " + "x" * 200
    _known_values_pattern.cache_clear()
    for _ in range(200):
        assert redact(message, ["sk-test-SECRET123456"]) == message
    redact(message + " sk-test-SECRET123456", ["sk-test-SECRET123456", "other-secret-value"])
    info = _known_values_pattern.cache_info()
    assert (info.misses, info.hits) == (2, 199)
