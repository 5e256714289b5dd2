"""Judge cards: the prompt version they are keyed by, kept in the run history and read back, and
the newest matching card found beside a judged metric."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from assay.agreement.cards import (
    JudgeCard,
    attach_agreement,
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


def test_each_criterion_and_each_rubric_text_has_its_own_prompt_version() -> None:
    def rubrics(text: str) -> RubricsBasedCriterion:
        return RubricsBasedCriterion.model_validate(
            {
                "threshold": 0.8,
                "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": text}}],
            }
        )

    quality = "rubric_based_final_response_quality_v1"
    tool_use = "rubric_based_tool_use_quality_v1"
    assert prompt_version(quality, rubrics("It answers.")) != prompt_version(
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
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
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
