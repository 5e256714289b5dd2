"""Closed choices read off an OpenAI-compatible server's log-probabilities, and rewritten."""

from __future__ import annotations

import json
import math

import pytest

from assay.llm.base import Choice
from assay.llm.choices import Token, choices_from_logprobs, rewrite, tokens_from_openai
from assay.metrics.prompts import final_response_match, rubrics

V2 = final_response_match.SCHEMA
FIELD = final_response_match.VALID_FIELD


def _tokens(pieces: list[str], alternatives: dict[int, list[tuple[str, float]]]) -> list[Token]:
    return [
        Token(piece, tuple((t, math.log(p)) for t, p in alternatives.get(i, [(piece, 1.0)])))
        for i, piece in enumerate(pieces)
    ]


def test_the_verdicts_probability_comes_from_the_token_that_starts_its_literal() -> None:
    text = json.dumps({"reasoning": "ok", FIELD: "invalid"})
    head, tail = text.split('"invalid"')
    pieces = [head, '"in', 'valid"', tail]
    tokens = _tokens(pieces, {1: [('"in', 0.7), ('"valid', 0.2), ("maybe", 0.1)]})

    [choice] = choices_from_logprobs(text, V2, tokens)

    assert choice.path == FIELD
    assert choice.chosen == "invalid"
    assert text[choice.start :].startswith('"invalid"')
    # "maybe" begins no option: the two that do are normalised between themselves.
    assert choice.probabilities == pytest.approx({"valid": 0.2 / 0.9, "invalid": 0.7 / 0.9})


def test_rubric_verdicts_are_found_by_index_and_ids_with_one_option_are_not_choices() -> None:
    schema = rubrics.schema(
        [
            rubrics.Rubric.model_validate(
                {"rubric_id": "a", "rubric_content": {"text_property": "a"}}
            ),
        ]
    )
    text = '{"verdicts": [{"id": "a", "rationale": "", "verdict": "yes"}]}'
    at = text.index('"yes"')
    pieces = [text[:at], '"yes"', text[at + 5 :]]
    tokens = _tokens(pieces, {1: [('"yes"', 0.6), ('"no"', 0.4)]})

    [choice] = choices_from_logprobs(text, schema, tokens)

    assert choice.path == "verdicts[0].verdict"
    assert choice.probability("yes") == pytest.approx(0.6)


def test_no_choices_when_the_tokens_do_not_spell_the_text_or_there_is_no_schema() -> None:
    text = json.dumps({"reasoning": "", FIELD: "valid"})
    assert choices_from_logprobs(text, V2, _tokens(["{}"], {})) == ()
    assert choices_from_logprobs(text, None, _tokens([text], {})) == ()
    assert choices_from_logprobs("not json at all", V2, _tokens(["not json at all"], {})) == ()


def test_openai_logprobs_objects_are_read_and_anything_else_gives_none() -> None:
    body = {
        "content": [
            {"token": "{", "logprob": -0.1, "top_logprobs": [{"token": "{", "logprob": -0.1}]},
            {"token": "}", "logprob": -0.2},
        ]
    }
    tokens = tokens_from_openai(body)
    assert tokens is not None
    assert [t.text for t in tokens] == ["{", "}"]
    assert tokens[1].alternatives == (("}", -0.2),)
    assert tokens_from_openai(None) is None
    assert tokens_from_openai({"content": [{"bad": 1}]}) is None


def test_rewrite_replaces_only_the_choices_literal() -> None:
    text = '{"a": "valid", "b": "valid"}'
    choice = Choice(path="b", start=text.rindex('"valid"'), chosen="valid", probabilities={})
    assert rewrite(text, choice, "invalid") == '{"a": "valid", "b": "invalid"}'
    moved = choice.model_copy(update={"start": 0})
    assert rewrite(text, moved, "invalid") == text  # not where it says: left alone
