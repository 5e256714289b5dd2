"""Judge profiles: a fitted threshold deciding an answer's choices, vote shares, exemplars, and
profile files that are not profiles."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.errors import ProfileError
from assay.llm.base import Choice, LlmResponse
from assay.llm.profile import (
    CriterionProfile,
    Exemplar,
    JudgeProfile,
    bundled_profile,
    bundled_source,
    load_profile,
    save_profile,
)


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


def test_align_keeps_the_judges_own_choices_beside_the_decided_answer() -> None:
    response = _response(("yes", 0.7), ("no", 0.85), ("yes", 0.95))

    decided = PROFILE.align(response)

    assert decided.response.text == PROFILE.decide(response).text
    assert [(c.path, c.chosen, d) for c, d in decided.changed] == [
        ("verdicts[0].verdict", "yes", "no"),
        ("verdicts[1].verdict", "no", "yes"),
    ]  # the judge's own choices, in the order of the text, and what the rule picked
    assert [c.start for c, _ in decided.changed] == [c.start for c in response.choices[:2]]
    agreeing = _response(("yes", 0.9))
    assert PROFILE.align(agreeing).changed == ()
    assert PROFILE.align(agreeing).response is agreeing


def test_the_rule_is_said_in_plain_words_naming_where_it_came_from() -> None:
    bundled = bundled_source()
    assert PROFILE.rule_words(bundled) == (
        "the embedded judge's calibration asks P(yes) >= 0.80 on this criterion"
    )
    assert PROFILE.rule_words("/teams/x/judge.profile.json") == (
        "the judge profile judge.profile.json asks P(yes) >= 0.80 on this criterion"
    )
    explained = PROFILE.explain("/teams/x/judge.profile.json")
    assert explained.startswith("verdicts re-decided by the judge profile /teams/x/judge.profile")
    assert '"yes" needs the judge\'s P(yes) >= 0.80' in explained
    assert "judge's own answer" in explained
    votes = PROFILE.model_copy(update={"decision": "votes", "threshold": 0.6})
    assert '"yes" needs 60% of the judge\'s samples to say so' in votes.explain(bundled)
    assert "aligned by" not in explained + votes.explain(bundled)


def test_a_card_prompt_version_folds_in_what_decides_not_how_it_was_fitted() -> None:
    fitted = PROFILE.model_copy(update={"fit": {"held_out": {"labels": 34}}})
    profile = JudgeProfile(judge_model="local:x", criteria={"safety_v1": fitted})

    entry = profile.entry_for("safety_v1", "local:x")

    assert entry is not None and "fit" not in entry
    assert entry["threshold"] == 0.8 and entry["positive"] == ["yes"]
    assert profile.entry_for("safety_v1", "openai:other") is None  # fitted for another judge
    refitted = profile.model_copy(
        update={"criteria": {"safety_v1": fitted.model_copy(update={"threshold": 0.7})}}
    )
    assert refitted.entry_for("safety_v1", "local:x") != entry


def test_every_bundled_rule_has_a_held_out_gain_whose_interval_excludes_no_gain() -> None:
    profile = bundled_profile()
    assert profile is not None and profile.criteria
    for name, rule in profile.criteria.items():
        held_out = rule.fit.get("held_out")
        assert held_out, f"{name}: no held-out figures recorded in its fit"
        unaided, aligned = held_out["unaided"], held_out["aligned"]
        low = aligned["kappa_interval"][0]
        # The aligned kappa's whole interval lies above the unaided one: a gain, not noise.
        assert low > unaided["kappa_interval"][1], f"{name}: held-out interval includes no gain"
        assert aligned["kappa"] > unaided["kappa"] and held_out["labels"] >= 20


RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "travel_traces_judge.json"


def _decided_otherwise(profile: JudgeProfile, recorded: dict[str, Any]) -> list[str]:
    """Each recorded verdict of the documented example that a rule of ``profile`` would decide
    negative: ``criterion case turn: P(yes) 0.94``."""
    found = []
    for answer in recorded["answers"]:
        rule = profile.for_criterion(answer["criterion"])
        for choice in answer["choices"] if rule is not None else []:
            if rule is None or choice["path"].rsplit(".", 1)[-1] != rule.field:
                continue
            if rule.decided(choice["probabilities"]) not in rule.positive:
                positive = sum(choice["probabilities"].get(p, 0.0) for p in rule.positive)
                where = f"{answer['criterion']} {answer['case']} {answer['invocation']}"
                found.append(f"{where}: P({'/'.join(rule.positive)}) {positive:.3f}")
    return found


def test_no_bundled_rule_fails_the_documented_examples_recorded_run() -> None:
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    profile = bundled_profile()
    assert profile is not None and recorded["judge_model"] == profile.judge_model

    checked = [
        a for a in recorded["answers"] if a["criterion"] in profile.criteria and a["choices"]
    ]
    assert checked, "no recorded answer is decided by a bundled rule"
    # examples/travel/README.md: that --traces run passes every case, so every verdict a
    # bundled rule decides must stay positive.
    assert _decided_otherwise(profile, recorded) == []


REPO = Path(__file__).resolve().parents[2]


def test_the_committed_fit_labels_have_the_hash_the_bundled_profile_names() -> None:
    profile = bundled_profile()
    assert profile is not None
    labels = REPO / profile.labels["path"]

    assert hashlib.sha256(labels.read_bytes()).hexdigest() == profile.labels["sha256"]
    # the labels each rule was fitted on are all still there, no more and no fewer
    committed = yaml.safe_load(labels.read_text(encoding="utf-8"))["labels"]
    for name, rule in profile.criteria.items():
        count = sum(1 for label in committed if label["criterion"] == name)
        assert count == rule.fit["before"]["labels"], name
