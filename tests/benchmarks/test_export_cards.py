"""benchmarks/judge_agreement/export_cards.py: the embedded judge's bundled cards, made from a
run history (checked against today's prompt versions) or from ``assay judge agree --json``,
written in the file ``assay eval`` reads them from."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _support import BENCHMARKS, load_script

from assay.agreement.cards import (
    JudgeCard,
    bundled_cards,
    bundled_cards_path,
    load_cards_file,
    record_cards,
)
from assay.agreement.labels import LabelledRun, load_labels
from assay.history.store import HistoryStore

EMBEDDED = "local:qwen2.5-coder-1.5b"
SHOWN = "benchmarks/judge_agreement/labelled/test.labels.yaml"
CRITERIA = ("safety_v1", "final_response_match_v2")  # the second comes first in the labels


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_script("export_cards", BENCHMARKS / "judge_agreement" / "export_cards.py")


@pytest.fixture(scope="module")
def run(script: ModuleType) -> LabelledRun:
    return load_labels(script.LABELS)


def measured(script: ModuleType, run: LabelledRun, criterion: str, **changes: Any) -> JudgeCard:
    """A card as ``assay judge agree`` records it for the embedded judge on the test half."""
    labels = sum(label.criterion == criterion for label in run.labels)
    card = JudgeCard(
        judge_model=EMBEDDED,
        judge="embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M (from --judge-model)",
        criterion=criterion,
        prompt_version="0" * 12,
        labels_file=str(script.LABELS),
        labels_sha256=script._sha256(script.LABELS),
        labels=labels,
        judged=labels,
        agree=labels // 2,
        agreement=(labels // 2) / labels,
        kappa=0.06,
        kappa_interval=(0.0, 0.21),
        num_samples=_samples(run, criterion),
        assay_version="0.1.0",
        created=1_000.0,
    )
    version = script.expected_version(run, card, script._profile_for(None))
    return card.model_copy(update={"prompt_version": version, **changes})


def _samples(run: LabelledRun, criterion: str) -> int | None:
    options = getattr(run.config.criteria[criterion], "judge_model_options", None)
    return None if options is None else int(options.num_samples)


def _history(path: Path, cards: list[JudgeCard]) -> Path:
    with HistoryStore(path) as store:
        record_cards(store, cards)
    return path


def test_cards_from_a_history_are_written_where_assay_eval_reads_them(
    script: ModuleType, run: LabelledRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    safety, frm = (measured(script, run, name) for name in CRITERIA)
    newer = safety.model_copy(update={"created": 2_000.0, "kappa": -0.12})
    other_judge = safety.model_copy(update={"judge_model": "openai:gpt-4o", "created": 3e3})
    other_labels = frm.model_copy(update={"labels_sha256": "f" * 64, "created": 3e3})
    history = _history(tmp_path / "h.sqlite", [safety, frm, newer, other_judge, other_labels])
    out = bundled_cards_path(tmp_path)

    code = script.main(["--history", str(history), "--out", str(out)])

    assert code == 0, capsys.readouterr().err
    shipped = bundled_cards(tmp_path)
    assert [card.criterion for card in shipped] == ["final_response_match_v2", "safety_v1"]
    assert shipped[0] == frm.model_copy(update={"labels_file": SHOWN})
    assert shipped[1] == newer.model_copy(update={"labels_file": SHOWN})
    said = capsys.readouterr()
    assert f"2 card(s) written to {out}" in said.out
    assert "warning: no card for hallucinations_v1, " in said.err  # the rest are not measured
    assert json.loads(out.read_text(encoding="utf-8"))["format"] == "assay-judge-cards/1"


def test_a_card_measured_for_another_prompt_is_refused_and_nothing_is_written(
    script: ModuleType, run: LabelledRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = measured(script, run, "safety_v1", prompt_version="0123456789ab")
    history = _history(tmp_path / "h.sqlite", [stale])
    out = tmp_path / "cards.json"

    code = script.main(["--history", str(history), "--out", str(out)])

    assert code == 2
    err = capsys.readouterr().err
    assert "error: cards measured for another prompt than today's" in err
    assert "safety_v1: measured for prompt version 0123456789ab, but today's code" in err
    assert not out.exists()


def test_nothing_to_export_is_an_error_not_an_empty_file(
    script: ModuleType, run: LabelledRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cards.json"
    assert script.main(["--history", str(tmp_path / "none.sqlite"), "--out", str(out)]) == 2
    assert "none.sqlite: no such history file" in capsys.readouterr().err
    other = measured(script, run, "safety_v1", judge_model="openai:gpt-4o")
    history = _history(tmp_path / "other.sqlite", [other])
    assert script.main(["--history", str(history), "--out", str(out)]) == 2
    assert f"no card of {EMBEDDED} measured on" in capsys.readouterr().err
    assert not out.exists()


def test_cards_from_agree_json_take_todays_prompt_versions_and_the_files_time(
    script: ModuleType, run: LabelledRun, tmp_path: Path
) -> None:
    figures = {
        "pairs": 32,
        "judged": 32,
        "agree": 14,
        "kappa": -0.12,
        "kappa_interval": [-0.41, 0.18],
        "confusion": {"safe": {"safe": 10, "unsafe": 6}, "unsafe": {"safe": 12, "unsafe": 4}},
        "person_positive_rate": 0.5,
        "judge_positive_rate": 0.69,
    }
    agree_json = tmp_path / "agree.json"
    agree_json.write_text(
        json.dumps(
            {
                "judges": {"safety_v1": "embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M"},
                "judge_models": {"safety_v1": EMBEDDED},
                "criteria": {"safety_v1": figures},
                "overall": figures,
            }
        ),
        encoding="utf-8",
    )
    os.utime(agree_json, (1_800_000_000, 1_800_000_000))
    out = tmp_path / "cards.json"

    assert script.main(["--agree-json", str(agree_json), "--out", str(out)]) == 0

    [card] = load_cards_file(out)
    expected = measured(script, run, "safety_v1")
    assert card.prompt_version == expected.prompt_version
    assert (card.labels, card.agree, card.kappa, card.kappa_interval) == (
        32,
        14,
        -0.12,
        (-0.41, 0.18),
    )
    assert card.labels_file == SHOWN and card.labels_sha256 == expected.labels_sha256
    assert card.created == 1_800_000_000
