"""Runs recorded for the case and compare page tests: the travel example scored twice by
``assay eval`` (its traces, then its regressed traces) into one history, and a run written
straight into the history whose agent, user, tool and judge text is hostile, with a judge card
behind one judged metric's agreement figure."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from _judge_server import JudgeServer
from _support import Example
from report._html_cases import HOSTILE, aligned_case, case

from assay.agreement.cards import JudgeCard, record_cards
from assay.cli.main import main
from assay.history.store import HistoryStore
from assay.results.model import EvalCaseResult, EvalSetResult, JudgeInfo, SetNotes

PASSED, FAILED = 1, 2
RUBRIC = "rubric_based_final_response_quality_v1"
HOSTILE_SET = "hostile_set"
CARD_CREATED = 1_780_000_000.0


@dataclass(frozen=True)
class Recorded:
    """A history with the example's two runs and the hostile run, by id."""

    history: Path
    base: str
    candidate: str
    hostile: str


def record_example(history: Path, judge: JudgeServer, cache: Path) -> tuple[str, str]:
    """``assay eval`` of the travel example on its traces, then on its regressed traces, into
    ``history`` (the judged metrics asked of ``judge``): the two runs' ids, oldest first."""
    example = Example()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ASSAY_JUDGE_MODEL", "openai:stub-judge")
        patch.setenv("OPENAI_BASE_URL", judge.base_url)
        patch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
        patch.setenv("ASSAY_CACHE_DIR", str(cache))
        for traces in (example.traces, example.regressed):
            args = ["eval", example.evalset, "--config", example.config, "--traces", traces]
            with pytest.raises(SystemExit) as ended:
                main([str(arg) for arg in [*args, "--history-file", history]])
            assert ended.value.code in (0, 1)  # 1: some cases fail
    with HistoryStore(history) as store:
        newest, older = (run.id for run in store.runs(limit=2))
    return older, newest


def judge_card(labels: int = 40) -> JudgeCard:
    """A judge card of the stub judge on the rubric criterion, as ``assay judge agree`` keeps
    one."""
    return JudgeCard(
        judge_model="openai:stub-judge",
        judge="openai:stub-judge (from ASSAY_JUDGE_MODEL)",
        criterion=RUBRIC,
        prompt_version="pv-test",
        labels_file="labels.yaml",
        labels_sha256="0" * 64,
        labels=labels,
        judged=labels,
        agree=labels - 6,
        agreement=(labels - 6) / labels,
        kappa=0.55,
        kappa_interval=(0.31, 0.79),
        assay_version="0",
        created=CARD_CREATED,
    )


def hostile_cases() -> list[EvalCaseResult]:
    """A failing case whose user, agent, tool arguments and judge rationale are hostile, a case
    whose rubric verdict a judge profile decided otherwise, and a passing case."""
    bad = case(
        "hostile_case",
        FAILED,
        score=0.0,
        user=f"user says {HOSTILE}",
        agent=f"agent says {HOSTILE}",
        rationale=f"judge says {HOSTILE}",
        actual_calls=[{"name": "search_flights", "args": {"to": HOSTILE}}],
    )
    bad["eval_set_id"] = HOSTILE_SET
    aligned = aligned_case("aligned_case")
    good = case("fine_case", PASSED)
    for item in (aligned, good):
        item["eval_set_id"] = HOSTILE_SET
    return [EvalCaseResult.model_validate(item) for item in (bad, aligned, good)]


def record_hostile(history: Path) -> str:
    """The hostile run written into ``history`` with a judge card behind the rubric metric's
    agreement figure; its id."""
    card = judge_card()
    cases = hostile_cases()
    info = JudgeInfo(
        model="openai:stub-judge",
        source="ASSAY_JUDGE_MODEL",
        judge_model="openai:stub-judge",
        prompt_version=card.prompt_version,
        agreement=card.agreement_info(),
    )
    result = EvalSetResult(
        eval_set_result_id="hostile",
        eval_set_id=HOSTILE_SET,
        eval_case_results=cases,
        assay=SetNotes(version="0", judges={RUBRIC: info}),
    )
    with HistoryStore(history) as store:
        record_cards(store, [card])
        run_id = store.start_run([HOSTILE_SET], {"sets": []}, source="test")
        for item in cases:
            store.record_case(run_id, item)
        store.finish_run(run_id, [result])
    return run_id


def record_all(folder: Path, judge: JudgeServer) -> Recorded:
    """The three runs in one history under ``folder``."""
    history = folder / "history.sqlite"
    base, candidate = record_example(history, judge, folder / "cache")
    return Recorded(history, base, candidate, record_hostile(history))
