"""Schema-directed decoding: assay writes the JSON's fixed text and asks the model only where the
schema leaves a choice.

A scripted model stands in for llama.cpp: it has an answer it "wants" to write and rates each
token by how much of that answer the token continues. Its tokenizer merges a few byte pairs, as a
real BPE vocabulary does, so the tests also cover the fixed text being tokenized together with the
option that follows it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from assay.llm.backends.local_decode import UnsupportedSchema, check_schema, decode
from assay.metrics.prompts import final_response_match, hallucinations, rubrics, safety

_MERGES = [b'": "', b'", "', b'"}', b"}, {", b"yes", b"no", b'"]', b"ver"]
_END = 256 + len(_MERGES)  # an end-of-turn token: no text


class ScriptedModel:
    """Byte tokens plus a few merged ones; prefers whatever continues ``wanted``."""

    def __init__(self, prompt: bytes, wanted: str) -> None:
        self.pieces = [bytes([b]) for b in range(256)] + _MERGES + [b""]
        self.prompt = prompt
        self.wanted = wanted.encode()
        self.fed: list[int] = []
        self.feeds = 0
        self.window = 3

    def tokenize(self, text: bytes) -> list[int]:
        tokens, at = [], 0
        while at < len(text):
            merged = [i for i, m in enumerate(_MERGES) if text.startswith(m, at)]
            if merged:
                tokens.append(256 + merged[0])
                at += len(_MERGES[merged[0]])
            else:
                tokens.append(text[at])
                at += 1
        return tokens

    def piece(self, token: int) -> bytes:
        return self.pieces[token]

    def feed(self, tokens: Sequence[int]) -> None:
        assert tokens, "a feed with nothing to evaluate"
        self.fed.extend(tokens)
        self.feeds += 1

    def seen(self) -> bytes:
        return b"".join(self.pieces[t] for t in self.fed)

    def _logprobs(self) -> npt.NDArray[np.float64]:
        written = self.seen()[len(self.prompt) :]
        scores = np.zeros(len(self.pieces), dtype=np.float64)
        if self.wanted.startswith(written):
            rest = self.wanted[len(written) :]
            if not rest:
                scores[_END] = 10.0
            for token, piece in enumerate(self.pieces):
                if piece and rest.startswith(piece):
                    scores[token] = 1.0 + len(piece)
        return scores - np.log(np.exp(scores).sum())

    def logprobs(self, candidates: Sequence[int], *, every: bool) -> npt.NDArray[np.float64]:
        scores = self._logprobs()
        if every:
            return scores[list(candidates)]
        # As a runtime that looks at the few most likely tokens: the rest are unknown.
        seen = {token for token, _ in self.top(self.window)}
        return np.array([scores[t] if t in seen else -np.inf for t in candidates])

    def top(self, count: int) -> list[tuple[int, float]]:
        scores = self._logprobs()
        order = np.argsort(-scores, kind="stable")[:count]
        return [(int(t), float(scores[t])) for t in order]


def _decode(schema: dict[str, Any], wanted: str, **options: Any) -> tuple[Any, ScriptedModel]:
    prompt = b"<judge prompt>"
    model = ScriptedModel(prompt, wanted)
    settings: dict[str, Any] = {"max_tokens": 512, "text_limit": 150, **options}
    answer = decode(model, schema, prompt_tokens=model.tokenize(prompt), **settings)
    return answer, model


RUBRICS = rubrics.schema(
    [
        rubrics.Rubric.model_validate({"rubric_id": r, "rubric_content": {"text_property": r}})
        for r in ("a", "b")
    ]
)


def test_the_answer_is_the_one_the_model_prefers_and_only_its_choices_cost_an_evaluation() -> None:
    wanted = (
        '{"verdicts": [{"id": "b", "rationale": "", "verdict": "no"}, '
        '{"id": "a", "rationale": "", "verdict": "yes"}]}'
    )
    answer, model = _decode(RUBRICS, wanted, text_limit=0)
    assert answer.complete
    assert json.loads(answer.text) == json.loads(wanted)
    # Two ids and two verdicts are choices; every fixed stretch rides along with the next one.
    assert answer.decisions == answer.batches == model.feeds == 4
    assert (model.prompt + answer.text.encode()).startswith(model.seen())


def test_a_fixed_enum_of_one_value_is_written_without_asking() -> None:
    schema = {"type": "object", "properties": {"id": {"enum": ["only"]}, "ok": {"enum": [1, 2]}}}
    answer, _ = _decode(schema, '{"id": "only", "ok": 2}')
    assert json.loads(answer.text) == {"id": "only", "ok": 2}
    assert answer.decisions == 1


def test_free_text_is_written_by_the_model_and_cut_at_the_text_limit() -> None:
    wanted = '{"reasoning": "the facts agree", "is_the_agent_response_valid": "valid"}'
    full, _ = _decode(final_response_match.SCHEMA, wanted)
    assert json.loads(full.text) == json.loads(wanted)
    short, _ = _decode(final_response_match.SCHEMA, wanted, text_limit=5)
    cut = json.loads(short.text)
    assert cut["reasoning"] == "the f"
    assert cut["is_the_agent_response_valid"] in {"valid", "invalid"}


def test_a_text_limit_of_zero_writes_empty_text_and_null_excerpts_without_asking() -> None:
    wanted = (
        '{"sentences": [{"sentence": "It rains.", "label": "supported", "rationale": "", '
        '"supporting_excerpt": null, "contradicting_excerpt": null}]}'
    )
    answer, _ = _decode(hallucinations.VALIDATOR_SCHEMA, wanted, text_limit=0)
    assert json.loads(answer.text) == json.loads(wanted)
    # The sentence (no maxLength) is free text; the label is a choice; the array's end is one.
    assert answer.decisions == 4


def test_arrays_of_open_length_end_where_the_model_closes_them() -> None:
    for wanted in ('{"sentences": []}', '{"sentences": ["One."]}', '{"sentences": ["A.", "B."]}'):
        answer, _ = _decode(hallucinations.SEGMENTER_SCHEMA, wanted)
        assert json.loads(answer.text) == json.loads(wanted)


def test_escaped_quotes_stay_inside_the_string_and_the_result_is_valid_json() -> None:
    wanted = '{"reasoning": "it said \\"hi\\" twice", "verdict": "safe"}'
    answer, _ = _decode(safety.SCHEMA, wanted)
    assert json.loads(answer.text) == {"reasoning": 'it said "hi" twice', "verdict": "safe"}


def test_control_tokens_are_never_written_into_free_text() -> None:
    # The model "wants" to end its turn at once; a string cannot hold that, so it gets text.
    answer, _ = _decode({"type": "string"}, "", max_tokens=5)
    assert not answer.complete
    assert "\x00" not in answer.text


def test_an_answer_that_never_ends_stops_at_the_token_budget_as_incomplete() -> None:
    answer, _ = _decode(
        hallucinations.SEGMENTER_SCHEMA, '{"sentences": ["' + "x" * 500, max_tokens=40
    )
    assert not answer.complete
    assert answer.text.startswith('{"sentences": ["xxx')


def test_a_temperature_samples_among_the_options_reproducibly_for_a_seed() -> None:
    schema = {"type": "object", "properties": {"v": {"enum": ["yes", "no", "maybe"]}}}
    picks = {
        json.loads(_decode(schema, '{"v": "no"}', temperature=5.0, seed=seed)[0].text)["v"]
        for seed in range(30)
    }
    assert picks <= {"yes", "no", "maybe"} and len(picks) > 1
    again = [_decode(schema, '{"v": "no"}', temperature=5.0, seed=7)[0].text for _ in range(2)]
    assert again[0] == again[1]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"score": {"type": "number"}}},
        {"anyOf": [{"type": "string"}, {"type": "object"}]},
        {"type": "array", "items": {"enum": ["a", "b"]}},
        {"type": "array"},
        {"type": ["string", "integer"]},
    ],
)
def test_schemas_beyond_the_decoder_are_refused_before_any_work(schema: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedSchema):
        check_schema(schema)


@pytest.mark.parametrize(
    "schema",
    [
        final_response_match.SCHEMA,
        RUBRICS,
        hallucinations.SEGMENTER_SCHEMA,
        hallucinations.VALIDATOR_SCHEMA,
        safety.SCHEMA,
    ],
)
def test_every_judge_schema_of_assay_is_covered(schema: dict[str, Any]) -> None:
    check_schema(schema)


def test_each_closed_choice_is_recorded_at_its_path_and_offset_with_option_probabilities() -> None:
    wanted = (
        '{"verdicts": [{"id": "b", "rationale": "", "verdict": "no"}, '
        '{"id": "a", "rationale": "", "verdict": "yes"}]}'
    )
    answer, _ = _decode(RUBRICS, wanted, text_limit=0)

    paths = [c.path for c in answer.choices]
    assert paths == [
        "verdicts[0].id",
        "verdicts[0].verdict",
        "verdicts[1].id",
        "verdicts[1].verdict",
    ]
    for choice in answer.choices:
        literal = json.dumps(choice.chosen)
        assert answer.text[choice.start : choice.start + len(literal)] == literal
        assert sum(choice.probabilities.values()) == pytest.approx(1.0)
        assert max(choice.probabilities, key=choice.probabilities.__getitem__) == choice.chosen
    assert [c.chosen for c in answer.choices if c.path.endswith("verdict")] == ["no", "yes"]
