"""Judge profiles: a fitted threshold deciding an answer's choices, vote shares, exemplars, and
profile files that are not profiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import ProfileError
from assay.llm.base import Choice, LlmResponse
from assay.llm.profile import CriterionProfile, Exemplar, JudgeProfile, load_profile, save_profile


def _response(*verdicts: tuple[str, float]) -> LlmResponse:
    entries = ", ".join(f'{{"id": "r{i}", "verdict": "{v}"}}' for i, (v, _) in enumerate(verdicts))
    text = f'{{"verdicts": [{entries}]}}'
    choices = []
    at = 0
    for i, (verdict, yes) in enumerate(verdicts):
        at = text.index(f'"{verdict}"', text.index(f'"r{i}"'))
        choices.append(
            Choice(
                path=f"verdicts[{i}].verdict",
                start=at,
                chosen=verdict,
                probabilities={"yes": yes, "no": 1 - yes},
            )
        )
    return LlmResponse(text=text, model="m", choices=tuple(choices))


PROFILE = CriterionProfile(decision="probability", field="verdict", positive=["yes"], threshold=0.8)


def test_a_probability_threshold_rewrites_each_verdict_it_decides_otherwise() -> None:
    response = _response(("yes", 0.7), ("no", 0.85), ("yes", 0.95))

    decided = PROFILE.decide(response)

    verdicts = [v["verdict"] for v in json.loads(decided.text)["verdicts"]]
    assert verdicts == ["no", "yes", "yes"]
    for choice in decided.choices:  # offsets follow the rewritten text
        assert decided.text[choice.start :].startswith(f'"{choice.chosen}"')


def test_answers_without_probabilities_and_votes_profiles_are_left_as_written() -> None:
    plain = LlmResponse(text='{"verdict": "yes"}', model="m")
    assert PROFILE.decide(plain) is plain
    votes = PROFILE.model_copy(update={"decision": "votes", "threshold": 0.6})
    response = _response(("yes", 0.1))
    assert votes.decide(response) is response
    assert votes.positive_by_votes(2, 3) is True
    assert votes.positive_by_votes(1, 3) is False
    assert votes.positive_by_votes(0, 0) is None


def test_exemplars_follow_the_instructions_but_never_from_the_case_judged() -> None:
    profile = PROFILE.model_copy(
        update={
            "exemplars": [
                Exemplar(input="reply A", verdict="yes", case="a"),
                Exemplar(input="reply B", verdict="no", case="b"),
            ]
        }
    )
    system = profile.system("Judge it.", exclude_case="a")
    assert system.startswith("Judge it.")
    assert "reply B" in system and "reply A" not in system


def test_a_profile_round_trips_and_a_malformed_one_names_file_and_path(tmp_path: Path) -> None:
    path = tmp_path / "profile.json"
    profile = JudgeProfile(judge_model="local:x", criteria={"safety_v1": PROFILE})
    save_profile(profile, path)
    loaded = load_profile(path)
    assert loaded.source == str(path)
    assert loaded.model_copy(update={"source": None}) == profile

    path.write_text(json.dumps({"judge_model": "x", "criteria": {"safety_v1": {"threshold": 2}}}))
    with pytest.raises(ProfileError) as raised:
        load_profile(path)
    paths = {p.path for p in raised.value.problems}
    assert "criteria.safety_v1.threshold" in paths
    assert all(p.file == str(path) for p in raised.value.problems)
