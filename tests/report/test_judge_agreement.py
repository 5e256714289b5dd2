"""The words every view of a run uses for a judge's agreement with people: the figure with its
interval, its labels and the labels file behind it, and a plain reading by band; a count, never
a bare percentage, from too few labels; what is said where there is no figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.report.judge_agreement import (
    BUNDLED_LABELS,
    NOT_MEASURED,
    OTHER_PROMPT,
    agreement_words,
    is_smoke_test,
    judged_metrics,
    labels_source,
)
from assay.results.model import EvalSetResult, JudgeAgreement, JudgeInfo, SetNotes

JUDGE = {"model": "openai:gpt-4o-mini", "source": "--judge-model"}


def figure(
    kappa: float | None,
    interval: tuple[float, float] | None = None,
    *,
    labels: int = 40,
    agreement: float = 0.75,
    labels_file: str | None = "/elsewhere/team.labels.yaml",
    bundled: bool = False,
) -> JudgeAgreement:
    return JudgeAgreement(
        labels=labels,
        judged=labels,
        agreement=agreement,
        kappa=kappa,
        kappa_interval=interval,
        prompt_version="abcdef012345",
        card_date="2026-03-01T12:00:00Z",
        labels_file=labels_file,
        bundled=bundled,
    )


def words(found: JudgeAgreement | None, **info: Any) -> tuple[str, str | None]:
    said = agreement_words("safety_v1", JudgeInfo(**JUDGE, agreement=found, **info))
    return said.text, said.warning


@pytest.mark.parametrize(
    ("kappa", "interval", "reading"),
    [
        (0.85, (0.7, 0.95), "strong agreement"),
        (0.65, (0.45, 0.8), "good agreement"),
        (0.5, (0.3, 0.7), "moderate agreement: check its failures by hand"),
        (0.3, (0.05, 0.5), "weak agreement: a hint, not a decision"),
        (0.33, (0.0, 0.63), "not told from chance on these labels: a smoke test, not a decision"),
        (0.06, (0.0, 0.21), "at chance on this criterion: a smoke test, not a decision"),
        (-0.12, (-0.41, 0.18), "at chance on this criterion: a smoke test, not a decision"),
        (-0.3, (-0.5, -0.1), "worse than chance on this criterion: a smoke test, not a decision"),
        (None, None, "not told from chance (one label throughout): a smoke test, not a decision"),
    ],
)
def test_each_kappa_band_reads_in_plain_words(
    kappa: float | None, interval: tuple[float, float] | None, reading: str
) -> None:
    text, warning = words(figure(kappa, interval))

    assert text.endswith(f"): {reading}")
    assert text.startswith("judge agrees with people on 75% (kappa ")
    assert "; 40 labels, /elsewhere/team.labels.yaml)" in text
    assert (
        (warning is not None) == ("smoke test" in reading) == is_smoke_test(figure(kappa, interval))
    )


def test_a_figure_gives_kappa_with_its_interval_its_labels_and_the_file_behind_it() -> None:
    text, warning = words(figure(0.06, (0.0, 0.21), labels=34, agreement=0.53, bundled=True))

    assert text == (
        "judge agrees with people on 53% (kappa 0.06 [+0.00, +0.21]; 34 labels, "
        f"{BUNDLED_LABELS}): at chance on this criterion: a smoke test, not a decision"
    )
    assert warning == (
        "the judge of safety_v1 is at chance on this criterion (kappa 0.06 on 34 labels): a "
        "smoke test, not a decision"
    )


def test_too_few_labels_give_a_count_and_the_interval_never_a_percentage_nor_a_warning() -> None:
    text, warning = words(figure(1.0, (1.0, 1.0), labels=4, agreement=1.0))

    assert text == (
        "judge agreed with people on 4 of 4 labels (kappa 1.00 [+1.00, +1.00]; "
        "/elsewhere/team.labels.yaml): too few labels to tell (20 needed)"
    )
    assert "%" not in text and warning is None
    assert words(figure(0.5, (0.2, 0.7), labels=20))[0].endswith(
        "moderate agreement: check its failures by hand"
    )


def test_no_figure_says_not_measured_or_measured_for_another_prompt() -> None:
    assert words(None) == (NOT_MEASURED, None)
    assert words(None, other_prompt_version="0123456789ab") == (OTHER_PROMPT, None)
    assert OTHER_PROMPT == "judge agreement measured for the default prompt, not this configuration"


def test_the_labels_file_is_named_relative_to_the_working_folder_when_inside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    inside = figure(0.5, labels_file=str(tmp_path / "labels" / "team.yaml"))
    assert labels_source(inside) == str(Path("labels") / "team.yaml")
    assert labels_source(figure(0.5, labels_file="/other/team.yaml")) == "/other/team.yaml"
    assert labels_source(figure(0.5, labels_file=None)) == "labels file not recorded"
    bundled = figure(0.5, labels_file="benchmarks/judge_agreement/labelled/test.labels.yaml")
    assert labels_source(bundled.model_copy(update={"bundled": True})) == BUNDLED_LABELS


def test_judged_metrics_carry_the_same_words_for_every_view() -> None:
    found = figure(0.65, (0.45, 0.8))
    judges = {
        "safety_v1": JudgeInfo(**JUDGE, agreement=found),
        "hallucinations_v1": JudgeInfo(**JUDGE, other_prompt_version="0123456789ab"),
        "user_simulator": JudgeInfo(**JUDGE),
        "rubric_based_tool_use_quality_v1": JudgeInfo(unavailable="no judge model"),
    }
    result = EvalSetResult(
        eval_set_result_id="r", eval_set_id="s", assay=SetNotes(version="0", judges=judges)
    )

    judged = judged_metrics(result)

    assert [(j.metric, j.measured, j.warning) for j in judged] == [
        ("safety_v1", True, None),
        ("hallucinations_v1", False, None),
    ]
    assert judged[0].text == words(found)[0]
    assert judged[1].text == OTHER_PROMPT


def test_results_written_before_the_new_fields_still_load() -> None:
    old = {
        "labels": 60,
        "judged": 58,
        "agreement": 0.5,
        "kappa": 0.05,
        "prompt_version": "abcdef012345",
        "card_date": "2026-03-01T12:00:00Z",
    }
    info = JudgeInfo.model_validate({**JUDGE, "agreement": old})

    assert info.agreement is not None and info.agreement.bundled is False
    assert info.other_prompt_version is None
    assert words(info.agreement)[0].startswith("judge agrees with people on 50% (kappa 0.05; 60")
