"""Judge cards: the prompt version they are keyed by, kept in the run history and read back, and
the newest matching card found beside a judged metric."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from assay.agreement.cards import (
    CardsError,
    CardsFile,
    JudgeCard,
    attach_agreement,
    bundled_cards,
    bundled_cards_path,
    choose_card,
    find_card,
    list_cards,
    prompt_version,
    record_cards,
)
from assay.config import (
    BaseCriterion,
    EvalConfig,
    JudgeModelOptions,
    LlmAsAJudgeCriterion,
    RubricsBasedCriterion,
)
from assay.history.records import HistoryError
from assay.history.schema import SCHEMA_VERSION
from assay.history.store import HistoryStore
from assay.results.model import EvalSetResult, JudgeInfo, SetNotes

V2 = Path(__file__).resolve().parent.parent / "history" / "history_v2.sql"
FRM = "final_response_match_v2"


def judged(num_samples: int = 5, threshold: float = 0.8, **options: Any) -> LlmAsAJudgeCriterion:
    return LlmAsAJudgeCriterion(
        threshold=threshold,
        judge_model_options=JudgeModelOptions(num_samples=num_samples, **options),
    )


def card(
    *,
    judge_model: str = "openai:gpt-4o-mini",
    criterion: str = "safety_v1",
    version: str = "aaaaaaaaaaaa",
    created: float = 1_767_225_600.0,
    kappa: float | None = 0.61,
    labels: int = 120,
) -> JudgeCard:
    return JudgeCard(
        judge_model=judge_model,
        judge=f"{judge_model} (from --judge-model)",
        criterion=criterion,
        prompt_version=version,
        labels_file="/labels/safety.yaml",
        labels_sha256="0" * 64,
        labels=labels,
        judged=labels,
        agree=round(labels * 0.82),
        agreement=0.82,
        kappa=kappa,
        kappa_interval=None if kappa is None else (kappa - 0.1, kappa + 0.1),
        person_positive_rate=0.7,
        judge_positive_rate=0.75,
        confusion={"safe": {"safe": 80, "unsafe": 4}, "unsafe": {"safe": 18, "unsafe": 18}},
        num_samples=1,
        assay_version="0.1.0",
        created=created,
    )


# --- the prompt version ----------------------------------------------------------------------


def test_the_prompt_version_is_a_short_hex_digest_the_same_every_time() -> None:
    first = prompt_version(FRM, judged())
    assert len(first) == 12 and int(first, 16) >= 0
    assert prompt_version(FRM, judged()) == first


def test_samples_and_model_config_change_the_prompt_version_threshold_and_model_do_not() -> None:
    base = prompt_version(FRM, judged())
    assert prompt_version(FRM, judged(num_samples=3)) != base
    assert prompt_version(FRM, judged(judge_model_config={"temperature": 0.0})) != base
    assert prompt_version(FRM, judged(threshold=0.5)) == base
    assert prompt_version(FRM, judged(judge_model="openai:gpt-4o")) == base
    assert prompt_version(FRM, judged(parallelism_limit=4)) == base


def test_each_criterion_has_its_own_prompt_version_and_rubric_texts_do_not_change_it() -> None:
    def rubrics(text: str) -> RubricsBasedCriterion:
        return RubricsBasedCriterion.model_validate(
            {
                "threshold": 0.8,
                "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": text}}],
            }
        )

    quality = "rubric_based_final_response_quality_v1"
    tool_use = "rubric_based_tool_use_quality_v1"
    # A rubric is the judge's input (as a case's own rubrics are), not how it is asked.
    assert prompt_version(quality, rubrics("It answers.")) == prompt_version(
        quality, rubrics("It answers politely.")
    )
    assert prompt_version(quality, rubrics("x")) != prompt_version(tool_use, rubrics("x"))
    assert prompt_version("safety_v1", BaseCriterion(threshold=0.8)) != prompt_version(
        "hallucinations_v1", judged()
    )


def test_a_profile_is_folded_into_the_prompt_version_by_its_content() -> None:
    base = prompt_version("safety_v1", BaseCriterion(threshold=0.8))
    fitted = {"decision": "probability", "field": "verdict", "positive": ["safe"], "threshold": 0.2}
    with_profile = prompt_version("safety_v1", BaseCriterion(threshold=0.8), fitted)
    assert with_profile != base
    reordered = dict(reversed(list(fitted.items())))
    assert prompt_version("safety_v1", BaseCriterion(threshold=0.8), reordered) == with_profile
    refitted = {**fitted, "threshold": 0.3}
    assert prompt_version("safety_v1", BaseCriterion(threshold=0.8), refitted) != with_profile


def test_a_change_to_the_prompt_text_changes_the_prompt_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from assay.agreement import cards

    before = prompt_version("safety_v1", BaseCriterion(threshold=0.8))
    real = cards._source
    monkeypatch.setattr(cards, "_source", lambda name: real(name) + "\nReply in French.")
    assert prompt_version("safety_v1", BaseCriterion(threshold=0.8)) != before


# --- the history -----------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with HistoryStore(tmp_path / "history.sqlite") as opened:
        yield opened


def test_a_card_reads_back_equal_and_cards_list_newest_first(store: HistoryStore) -> None:
    old, new = card(created=1_000.0), card(criterion="hallucinations_v1", created=2_000.0)
    record_cards(store, [old, new])

    assert list_cards(store) == [new, old]
    assert list_cards(store, limit=1) == [new]
    assert new.date == "1970-01-01T00:33:20Z"


def test_the_newest_card_of_the_same_judge_criterion_and_prompt_version_is_found(
    store: HistoryStore,
) -> None:
    older = card(created=1_000.0, kappa=0.3)
    newer = card(created=2_000.0, kappa=0.61)
    other_prompt = card(version="bbbbbbbbbbbb", created=3_000.0)
    other_judge = card(judge_model="local:qwen2.5-coder-1.5b", created=4_000.0)
    record_cards(store, [older, newer, other_prompt, other_judge])

    assert find_card(store, "openai:gpt-4o-mini", "safety_v1", "aaaaaaaaaaaa") == newer
    assert find_card(store, "openai:gpt-4o-mini", "safety_v1", "cccccccccccc") is None
    assert find_card(store, "openai:gpt-4o", "safety_v1", "aaaaaaaaaaaa") is None
    assert find_card(store, "openai:gpt-4o-mini", "hallucinations_v1", "aaaaaaaaaaaa") is None


def test_a_history_of_schema_version_2_is_upgraded_keeping_its_runs_and_takes_cards(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history.sqlite"
    db = sqlite3.connect(path)
    db.executescript(V2.read_text(encoding="utf-8"))
    assert db.execute("PRAGMA user_version").fetchone()[0] == 2
    db.close()

    with HistoryStore(path) as store:
        assert [run.id for run in store.runs()] == ["20260101-000000-ab12"]
        [result] = store.results("latest")
        assert [c.eval_id for c in result.eval_case_results] == ["greeting"]
        assert result.assay is not None and result.assay.judges["safety_v1"].agreement is None
        assert list_cards(store) == []
        record_cards(store, [card()])
        assert find_card(store, *card().key) == card()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
    db.close()


# --- beside a run's judged metrics -----------------------------------------------------------


def _judged_result(*metrics: str, model: str = "openai:gpt-4o-mini") -> EvalSetResult:
    info = JudgeInfo(model=model, source="--judge-model", judge_model=model, description=model)
    judges = {name: info.model_copy() for name in metrics}
    judges["user_simulator"] = info.model_copy()
    judges["rubric_based_tool_use_quality_v1"] = JudgeInfo(unavailable="no judge model")
    return EvalSetResult(
        eval_set_result_id="r", eval_set_id="s", assay=SetNotes(version="0", judges=judges)
    )


def test_a_judged_metric_gets_its_prompt_version_and_the_newest_matching_cards_figures(
    tmp_path: Path,
) -> None:
    config = EvalConfig.model_validate({"criteria": {"safety_v1": 0.8, FRM: {"threshold": 0.8}}})
    version = prompt_version("safety_v1", config.criteria["safety_v1"])
    path = tmp_path / "history.sqlite"
    with HistoryStore(path) as store:
        record_cards(store, [card(version=version, created=1_000.0, kappa=0.3)])
        record_cards(store, [card(version=version, created=2_000.0)])
    result = _judged_result("safety_v1", FRM)

    attach_agreement([result], [config], path)

    assert result.assay is not None
    safety = result.assay.judges["safety_v1"]
    assert safety.prompt_version == version
    assert safety.agreement is not None
    assert (safety.agreement.kappa, safety.agreement.labels) == (0.61, 120)
    assert safety.agreement.card_date == "1970-01-01T00:33:20Z"
    frm = result.assay.judges[FRM]
    assert frm.prompt_version == prompt_version(FRM, config.criteria[FRM])
    assert frm.agreement is None  # no card for it: not measured
    assert result.assay.judges["user_simulator"].prompt_version is None
    assert result.assay.judges["rubric_based_tool_use_quality_v1"].prompt_version is None
    # Round trip: the results file keeps it, and a file without it still loads.
    again = EvalSetResult.model_validate_json(result.model_dump_json(exclude_none=True))
    assert again == result


def test_no_history_file_means_not_measured_and_none_is_made(tmp_path: Path) -> None:
    config = EvalConfig.model_validate({"criteria": {"safety_v1": 0.8}})
    result = _judged_result("safety_v1")
    path = tmp_path / "nowhere" / "history.sqlite"

    attach_agreement([result], [config], path)

    assert result.assay is not None
    assert result.assay.judges["safety_v1"].agreement is None
    assert result.assay.judges["safety_v1"].prompt_version is not None
    assert not path.parent.exists()


def test_a_profiled_judge_is_looked_up_by_the_prompt_version_its_profile_makes(
    tmp_path: Path,
) -> None:
    config = EvalConfig.model_validate({"criteria": {"safety_v1": 0.8}})
    fitted = {"decision": "probability", "field": "verdict", "positive": ["safe"], "threshold": 0.2}
    plain = prompt_version("safety_v1", config.criteria["safety_v1"])
    profiled = prompt_version("safety_v1", config.criteria["safety_v1"], fitted)
    path = tmp_path / "history.sqlite"
    with HistoryStore(path) as store:
        record_cards(store, [card(version=plain, kappa=0.05), card(version=profiled, kappa=0.7)])
    result = _judged_result("safety_v1")

    attach_agreement([result], [config], path, lambda criterion, model: fitted)

    assert result.assay is not None
    safety = result.assay.judges["safety_v1"]
    assert safety.prompt_version == profiled
    assert safety.agreement is not None and safety.agreement.kappa == 0.7


# --- which card is shown: the bundled ones and the history's ---------------------------------


def test_a_history_card_displaces_the_bundled_one_only_when_from_as_many_labels() -> None:
    bundled = card(labels=34, created=1_000.0)
    smaller, equal = card(labels=30, created=2_000.0), card(labels=34, created=3_000.0)

    assert choose_card([], bundled) is bundled
    assert choose_card([smaller], bundled) is bundled
    assert choose_card([equal, smaller], bundled) is equal
    assert choose_card([smaller], None) is smaller


def test_a_card_from_too_few_labels_never_displaces_a_larger_one_however_new() -> None:
    few, fewer = card(labels=4, created=3_000.0), card(labels=2, created=4_000.0)
    large, newer_enough = card(labels=120, created=1_000.0), card(labels=25, created=2_000.0)

    assert choose_card([few, large], None) is large
    assert choose_card([fewer, few], None) is few  # all too few: the one from the most labels
    assert choose_card([few, newer_enough, large], None) is newer_enough  # the newest from 20+
    assert choose_card([few], card(labels=34)) is not few


EMBEDDED = "local:qwen2.5-coder-1.5b"
BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "judge_agreement" / "labelled"
EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "examples" / "travel" / "test_config.json"


def _bundled_for(config: EvalConfig, *names: str, labels: int = 34) -> list[JudgeCard]:
    """Cards as export_cards.py ships them: the embedded judge measured with ``config`` (the
    benchmark's) and the bundled profile."""
    from assay.llm.profile import bundled_profile

    profile = bundled_profile()
    return [
        card(
            judge_model=EMBEDDED,
            criterion=name,
            version=prompt_version(
                name, config.criteria[name], profile.entry_for(name, EMBEDDED) if profile else None
            ),
            labels=labels,
            kappa=0.06,
        ).model_copy(update={"labels_file": "benchmarks/judge_agreement/labelled/test.labels.yaml"})
        for name in names
    ]


def _embedded_result(*metrics: str) -> EvalSetResult:
    info = JudgeInfo(model="local:", source="embedded", judge_model=EMBEDDED, description="x")
    judges = {name: info.model_copy() for name in metrics}
    return EvalSetResult(
        eval_set_result_id="r", eval_set_id="s", assay=SetNotes(version="0", judges=judges)
    )


def test_a_first_run_of_the_example_shows_the_embedded_judges_bundled_cards(
    tmp_path: Path,
) -> None:
    from assay.llm.profile import bundled_profile

    benchmark = EvalConfig.model_validate_json((BENCHMARK / "test_config.json").read_text())
    example = EvalConfig.model_validate_json(EXAMPLE_CONFIG.read_text())
    # The example writes its rubrics in its config, the benchmark in its cases: the same prompt.
    judged = (
        "final_response_match_v2",
        "rubric_based_final_response_quality_v1",
        "rubric_based_tool_use_quality_v1",
        "hallucinations_v1",
        "safety_v1",
        "per_turn_user_simulator_quality_v1",
    )
    shipped = _bundled_for(benchmark, *judged)
    result = _embedded_result(*judged)
    history = tmp_path / "fresh" / "history.sqlite"
    profile = bundled_profile()

    attach_agreement([result], [example], history, profile.entry_for if profile else None, shipped)

    assert result.assay is not None
    for name in judged:
        found = result.assay.judges[name].agreement
        assert found is not None, name
        assert (found.bundled, found.labels, found.kappa) == (True, 34, 0.06)
        assert found.labels_file == "benchmarks/judge_agreement/labelled/test.labels.yaml"
    assert not history.parent.exists()


def test_a_bundled_card_is_not_shown_for_another_configuration_of_its_criterion(
    tmp_path: Path,
) -> None:
    from assay.llm.profile import bundled_profile

    benchmark = EvalConfig.model_validate_json((BENCHMARK / "test_config.json").read_text())
    data = json.loads(EXAMPLE_CONFIG.read_text())
    data["criteria"]["rubric_based_tool_use_quality_v1"]["judge_model_options"]["num_samples"] = 5
    example = EvalConfig.model_validate(data)
    rubric = "rubric_based_tool_use_quality_v1"
    shipped = _bundled_for(benchmark, rubric)
    result = _embedded_result(rubric)
    profile = bundled_profile()

    attach_agreement(
        [result], [example], tmp_path / "h.sqlite", profile.entry_for if profile else None, shipped
    )

    assert result.assay is not None
    tool_use = result.assay.judges[rubric]
    assert tool_use.agreement is None
    assert tool_use.other_prompt_version == shipped[-1].prompt_version != tool_use.prompt_version


def test_bundled_cards_are_for_their_judge_only_and_a_larger_history_card_wins(
    tmp_path: Path,
) -> None:
    config = EvalConfig.model_validate({"criteria": {"safety_v1": 0.8}})
    [shipped] = _bundled_for(config, "safety_v1")
    path = tmp_path / "history.sqlite"
    with HistoryStore(path) as store:
        record_cards(store, [shipped.model_copy(update={"labels": 4, "created": 9e9})])
    other_judge = _judged_result("safety_v1")  # openai:gpt-4o-mini
    embedded = _embedded_result("safety_v1")

    attach_agreement([other_judge, embedded], [config, config], path, None, [shipped])

    assert other_judge.assay is not None and embedded.assay is not None
    assert other_judge.assay.judges["safety_v1"].agreement is None
    assert other_judge.assay.judges["safety_v1"].other_prompt_version is None
    found = embedded.assay.judges["safety_v1"].agreement
    assert found is not None and (found.bundled, found.labels) == (True, 34)

    with HistoryStore(path) as store:
        record_cards(store, [shipped.model_copy(update={"labels": 60, "created": 1.0})])
    again = _embedded_result("safety_v1")
    attach_agreement([again], [config], path, None, [shipped])
    assert again.assay is not None
    found = again.assay.judges["safety_v1"].agreement
    assert found is not None and (found.bundled, found.labels) == (False, 60)


def test_bundled_cards_are_read_from_beside_the_bundled_profile(tmp_path: Path) -> None:
    assert bundled_cards_path().parent == Path(__file__).resolve().parents[2] / "src" / (
        "assay/llm/profiles"
    )
    assert bundled_cards_path().name == "qwen2.5-coder-1.5b.cards.json"
    assert bundled_cards(tmp_path) == []
    shipped = [card(judge_model=EMBEDDED)]
    bundled_cards_path(tmp_path).write_text(
        CardsFile(cards=shipped).model_dump_json(), encoding="utf-8"
    )
    assert bundled_cards(tmp_path) == shipped


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            '{"format": "assay-judge-cards/1", "cards": [{"judge_model": 1}]}',
            "cards[0].judge_model",
        ),
        ('{"cards": [], "colour": "red"}', "colour"),
        ("[not json", "(the top level)"),
    ],
)
def test_a_cards_file_that_is_not_one_is_an_error_naming_the_file_and_where(
    tmp_path: Path, text: str, where: str
) -> None:
    path = bundled_cards_path(tmp_path)
    path.write_text(text, encoding="utf-8")

    with pytest.raises(CardsError) as raised:
        bundled_cards(tmp_path)

    assert str(raised.value).startswith(f"{path}: not a judge cards file (")
    assert f"at {where}: " in str(raised.value)
    assert isinstance(raised.value, HistoryError)  # shown as an unreadable history is


def test_an_unreadable_history_still_gets_the_bundled_cards_then_raises(tmp_path: Path) -> None:
    config = EvalConfig.model_validate({"criteria": {"safety_v1": 0.8}})
    shipped = _bundled_for(config, "safety_v1")
    path = tmp_path / "history.sqlite"
    path.write_bytes(b"not a database at all, but long enough to be read as one" * 100)
    result = _embedded_result("safety_v1")

    with pytest.raises(HistoryError):
        attach_agreement([result], [config], path, None, shipped)

    assert result.assay is not None
    found = result.assay.judges["safety_v1"].agreement
    assert found is not None and found.bundled
