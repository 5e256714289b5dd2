"""Which config scores an eval set: one rule for ``assay eval``, ``evaluate_agent`` and the
``AgentEvaluator`` drop-in (:mod:`assay.runner.jobs`).

The config given, else ``test_config.json`` in the eval set file's folder, else ADK's defaults; a
given config that is missing or malformed is an error, never replaced; every problem of every
file is reported at once, each config file's once.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from assay.config import EvalConfig, default_config, parse_config
from assay.errors import ConfigError, EvalSetError, InputError
from assay.evalset.io import LoadedEvalSet, load_eval_set
from assay.runner.jobs import config_for, jobs_for
from assay.testing import AgentEvaluator, load_jobs

STRICT = {"criteria": {"response_match_score": 0.95}}
LENIENT = {"criteria": {"response_match_score": 0.2}}
TYPO = {"criteria": {"respons_match_score": 0.8}}
LEGACY_TURNS = [{"query": "hi", "expected_tool_use": [], "reference": "hello"}]


def _eval_set(eval_set_id: str) -> dict[str, Any]:
    turn = {"user_content": {"parts": [{"text": "hi"}]}}
    return {"eval_set_id": eval_set_id, "eval_cases": [{"eval_id": "a", "conversation": [turn]}]}


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def thresholds(config: EvalConfig) -> dict[str, float | None]:
    return {name: criterion.threshold for name, criterion in config.criteria.items()}


def test_each_eval_set_gets_the_test_config_json_of_its_own_folder(tmp_path: Path) -> None:
    first = write(tmp_path / "a" / "one.evalset.json", _eval_set("one"))
    second = write(tmp_path / "b" / "two.evalset.json", _eval_set("two"))
    write(tmp_path / "a" / "test_config.json", STRICT)
    write(tmp_path / "b" / "test_config.json", LENIENT)

    one, two = jobs_for([first, second])

    assert thresholds(one.config) == {"response_match_score": 0.95}
    assert one.config_source == str(tmp_path / "a" / "test_config.json")
    assert thresholds(two.config) == {"response_match_score": 0.2}


def test_adks_legacy_test_json_finds_the_test_config_json_beside_it(tmp_path: Path) -> None:
    legacy = write(tmp_path / "simple.test.json", LEGACY_TURNS)
    write(tmp_path / "test_config.json", STRICT)

    [job] = jobs_for([legacy])

    assert job.loaded.format == "legacy_turns"
    assert thresholds(job.config) == {"response_match_score": 0.95}


def test_without_a_test_config_json_adks_defaults_are_used(tmp_path: Path) -> None:
    path = write(tmp_path / "one.evalset.json", _eval_set("one"))

    [job] = jobs_for([path])

    assert job.config == default_config() and job.config_source == "defaults"


def test_a_given_config_file_replaces_the_one_beside_and_is_named_as_given(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "one.evalset.json", _eval_set("one"))
    write(tmp_path / "test_config.json", TYPO)  # not read: the given one wins
    given = write(tmp_path / "strict.yaml", "criteria:\n  response_match_score: 0.95\n")

    [job] = jobs_for([path], str(given))

    assert thresholds(job.config) == {"response_match_score": 0.95}
    assert job.config_source == str(given)


@pytest.mark.parametrize("given", [parse_config(STRICT), STRICT])
def test_a_given_config_object_or_its_data_is_named_given(tmp_path: Path, given: Any) -> None:
    path = write(tmp_path / "one.evalset.json", _eval_set("one"))

    assert config_for(path, given)[1] == "given"
    [job] = jobs_for([path], given)
    assert thresholds(job.config) == {"response_match_score": 0.95}


def test_a_missing_given_config_is_an_error_not_the_defaults(tmp_path: Path) -> None:
    # adk eval falls back to the defaults when --config_file_path does not exist
    path = write(tmp_path / "one.evalset.json", _eval_set("one"))
    write(tmp_path / "test_config.json", STRICT)
    missing = tmp_path / "nope.json"

    with pytest.raises(ConfigError) as failed:
        jobs_for([path], missing)

    assert str(failed.value) == f"{missing}: file not found"


def test_bad_given_data_names_config_as_its_file(tmp_path: Path) -> None:
    path = write(tmp_path / "one.evalset.json", _eval_set("one"))

    with pytest.raises(ConfigError, match=r"^<config>: criteria\.respons_match_score: unknown"):
        jobs_for([path], TYPO)


def test_a_bad_given_config_is_reported_once_with_every_eval_sets_problems(
    tmp_path: Path,
) -> None:
    good = write(tmp_path / "one.evalset.json", _eval_set("one"))
    bad = write(tmp_path / "bad.evalset.json", "[")
    given = write(tmp_path / "cfg.json", TYPO)

    with pytest.raises(InputError) as failed:
        jobs_for([good, bad, good], given)

    assert type(failed.value) is InputError
    assert [p.file for p in failed.value.problems] == [str(given), str(bad)]


def test_a_broken_test_config_json_is_reported_once_however_many_sets_share_it(
    tmp_path: Path,
) -> None:
    first = write(tmp_path / "one.evalset.json", _eval_set("one"))
    second = write(tmp_path / "two.evalset.json", _eval_set("two"))
    config = write(tmp_path / "test_config.json", TYPO)

    with pytest.raises(ConfigError) as failed:
        jobs_for([first, second])

    assert [p.file for p in failed.value.problems] == [str(config)]


def test_the_config_beside_an_eval_set_that_does_not_load_is_checked_too(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.evalset.json", "[")
    config = write(tmp_path / "test_config.json", TYPO)

    with pytest.raises(InputError) as failed:
        jobs_for([bad])

    assert type(failed.value) is InputError
    assert {p.file for p in failed.value.problems} == {str(config), str(bad)}


def test_problems_only_in_eval_sets_are_an_eval_set_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.evalset.json"
    bad = write(tmp_path / "bad.evalset.json", "[")

    with pytest.raises(EvalSetError) as failed:
        jobs_for([missing, bad])

    assert [p.file for p in failed.value.problems] == [str(missing), str(bad)]


def test_an_eval_set_not_read_from_a_file_gets_no_config_from_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "test_config.json", STRICT)
    eval_set = load_eval_set(write(tmp_path / "x.json", _eval_set("x"))).eval_set
    in_memory = LoadedEvalSet(eval_set, Path("<x>"), "evalset")

    [job] = jobs_for([in_memory])

    assert job.config_source == "defaults"


def test_config_for_does_not_read_the_eval_set(tmp_path: Path) -> None:
    write(tmp_path / "test_config.json", STRICT)

    config, source = config_for(tmp_path / "not_there.test.json")

    assert thresholds(config) == {"response_match_score": 0.95}
    assert source == str(tmp_path / "test_config.json")


# --- the three callers: one behaviour --------------------------------------------------------


def test_adk_find_config_for_test_file_is_config_for(tmp_path: Path) -> None:
    test_file = tmp_path / "simple.test.json"
    assert AgentEvaluator.find_config_for_test_file(str(test_file)) == default_config()
    write(tmp_path / "test_config.json", STRICT)
    assert AgentEvaluator.find_config_for_test_file(str(test_file)) == config_for(test_file)[0]
    write(tmp_path / "test_config.json", TYPO)
    with pytest.raises(ConfigError, match="respons_match_score"):
        AgentEvaluator.find_config_for_test_file(str(test_file))


def test_adk_evaluate_reports_every_files_problems_before_running_anything(
    tmp_path: Path,
) -> None:
    # it used to raise on the first test_config.json that did not load
    write(tmp_path / "a" / "simple.test.json", LEGACY_TURNS)
    config = write(tmp_path / "a" / "test_config.json", TYPO)
    bad = write(tmp_path / "b" / "broken.test.json", "[")

    with pytest.raises(InputError) as failed:  # before the agent module is even imported
        asyncio.run(AgentEvaluator.evaluate("no_such_agent_module", str(tmp_path)))

    assert {p.file for p in failed.value.problems} == {str(config), str(bad)}


def test_evaluate_agents_load_jobs_reports_a_bad_given_config_with_bad_eval_sets(
    tmp_path: Path,
) -> None:
    # it used to raise the config's problems alone, before reading any eval set
    bad = write(tmp_path / "bad.evalset.json", "[")
    given = write(tmp_path / "cfg.json", TYPO)

    with pytest.raises(InputError) as failed:
        load_jobs(tmp_path, given)

    assert {p.file for p in failed.value.problems} == {str(given), str(bad)}
