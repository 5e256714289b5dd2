"""Judge cards end to end: ``assay judge agree`` records one per criterion it measured (not with
``--no-record``), ``assay judge cards`` lists them, and ``assay eval`` shows the newest matching
card beside each judged metric, in the console, the results, and the HTML, JUnit and Markdown
reports; ``agree --html`` is a page a real browser shows. The judge is the approving stub of
tests/_judges.py over real HTTP, so its agreement with the example's labels is what chance
gives: a smoke test, as every view must say."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import _browser
from _support import EXAMPLE_DIR, Example, RunCli

from assay.agreement.cards import JudgeCard, list_cards, prompt_version, record_cards
from assay.config import EvalConfig
from assay.history.records import default_history_path
from assay.history.store import HistoryStore
from assay.report.markdown import escape_markdown

browser = _browser.browser

LABELS = EXAMPLE_DIR / "labels.yaml"
MEASURED = (
    "final_response_match_v2",
    "safety_v1",
    "rubric_based_final_response_quality_v1",
    "rubric_based_tool_use_quality_v1",
    "hallucinations_v1",
)


def _shown(path: Path) -> str:
    """A labels file as the reports name it: relative to the working folder when inside it."""
    resolved = path.resolve()
    return (
        str(resolved.relative_to(Path.cwd()))
        if resolved.is_relative_to(Path.cwd())
        else str(resolved)
    )


FRM_TEXT = (
    "judge agreed with people on 3 of 4 labels (kappa 0.00 [+0.00, +0.00]; "
    f"{_shown(LABELS)}): too few labels to tell (20 needed)"
)
FRM_LINE = f"final_response_match_v2: {FRM_TEXT}"


def _cards() -> list[JudgeCard]:
    path = default_history_path()  # in the test's cache folder (tests/conftest.py)
    if not path.is_file():
        return []
    with HistoryStore(path) as store:
        return list_cards(store)


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_agree_records_a_card_per_criterion_and_judge_cards_lists_them(run_cli: RunCli) -> None:
    run = run_cli("judge", "agree", LABELS)

    assert run.code == 0, run.output
    assert "judge cards recorded in" in run.out
    cards = _cards()
    assert sorted(card.criterion for card in cards) == sorted(MEASURED)
    frm = next(card for card in cards if card.criterion == "final_response_match_v2")
    assert frm.judge_model == "openai:stub-judge"
    assert frm.judge == "openai:stub-judge (from ASSAY_JUDGE_MODEL)"
    assert (frm.labels, frm.judged, frm.agree, frm.kappa) == (4, 4, 3, 0.0)
    assert (frm.person_positive_rate, frm.judge_positive_rate) == (0.75, 1.0)
    assert frm.labels_file == str(LABELS.resolve()) and len(frm.labels_sha256) == 64
    assert frm.num_samples == 1
    config = EvalConfig.model_validate_json((EXAMPLE_DIR / "test_config.json").read_text())
    assert frm.prompt_version == prompt_version(frm.criterion, config.criteria[frm.criterion])

    listed = run_cli("judge", "cards", "--json")
    assert listed.code == 0, listed.output
    assert [JudgeCard.model_validate(c) for c in json.loads(listed.out)] == cards
    table = run_cli("judge", "cards")
    assert "judge cards" in table.out and "openai:stub-judge" in table.out
    assert frm.prompt_version in table.out
    assert "3 of 4" in table.out and "75%" not in table.out  # too few labels: a count


def test_agree_with_no_record_writes_no_card(run_cli: RunCli) -> None:
    run = run_cli("judge", "agree", LABELS, "--no-record")

    assert run.code == 0, run.output
    assert "judge cards recorded" not in run.out
    assert _cards() == []
    assert "no judge cards in" in run_cli("judge", "cards").out


def test_agree_records_in_the_history_file_given(run_cli: RunCli, tmp_path: Path) -> None:
    history = tmp_path / "elsewhere.sqlite"
    run = run_cli("judge", "agree", LABELS, "--history-file", history)

    assert run.code == 0, run.output
    assert _cards() == []
    with HistoryStore(history) as store:
        assert len(list_cards(store)) == len(MEASURED)


def test_eval_shows_cards_from_too_few_labels_as_counts_with_their_interval_in_every_view(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    assert run_cli("judge", "agree", LABELS).code == 0  # 2-4 labels per criterion
    out, html, junit, markdown = (
        tmp_path / name for name in ("results.json", "r.html", "r.xml", "r.md")
    )
    run = run_cli(
        "eval", example.evalset, "--traces", example.traces, "--output", out,
        "--html", html, "--junit", junit, "--markdown", markdown,
    )  # fmt: skip

    assert run.code == 0, run.output
    text = _flat(run.out)
    assert FRM_LINE in text, text
    assert (
        "safety_v1: judge agreed with people on 2 of 2 labels (kappa undefined; "
        f"{_shown(LABELS)}): too few labels to tell (20 needed)" in text
    )
    assert "judge agreement not measured: per_turn_user_simulator_quality_v1" in text
    assert "judge agrees with people on" not in text  # never a bare percentage
    assert "100%" not in text and "smoke test" not in text

    judges = json.loads(out.read_text(encoding="utf-8"))["assay"]["judges"]
    found = judges["final_response_match_v2"]["agreement"]
    assert (found["labels"], found["judged"], found["agreement"], found["kappa"]) == (
        4,
        4,
        0.75,
        0.0,
    )
    assert found["prompt_version"] == judges["final_response_match_v2"]["prompt_version"]
    assert found["card_date"].endswith("Z")
    assert found["labels_file"] == str(LABELS.resolve()) and len(found["labels_sha256"]) == 64
    assert found["bundled"] is False
    assert "agreement" not in judges["per_turn_user_simulator_quality_v1"]

    page = _flat(html.read_text(encoding="utf-8"))
    assert FRM_TEXT in page
    assert "judge agreement not measured" in page

    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["assay.judge_agreement.final_response_match_v2"] == FRM_TEXT
    assert "assay.judge_warning.final_response_match_v2" not in properties
    assert properties["assay.judge_agreement.per_turn_user_simulator_quality_v1"] == (
        "judge agreement not measured"
    )

    summary = markdown.read_text(encoding="utf-8")
    assert "### Judges" in summary
    assert escape_markdown(FRM_TEXT) in summary


def test_a_judge_that_agrees_well_beyond_chance_gets_its_line_and_no_warning(
    run_cli: RunCli, example: Example
) -> None:
    config = EvalConfig.model_validate_json(example.config.read_text(encoding="utf-8"))
    version = prompt_version("safety_v1", config.criteria["safety_v1"])
    with HistoryStore(default_history_path()) as store:
        record_cards(store, [_card("safety_v1", version, kappa=0.61)])
        record_cards(store, [_card("safety_v1", "0123456789ab", kappa=0.05, created=9e9)])
        record_cards(store, [_card("safety_v1", version, kappa=0.05, model="openai:other")])

    run = run_cli("eval", example.evalset, "--traces", example.traces)

    assert run.code == 0, run.output
    text = _flat(run.out)
    assert (
        "safety_v1: judge agrees with people on 82% (kappa 0.61 [+0.49, +0.73]; 120 labels, "
        "team-labels.yaml): good agreement" in text
    )
    assert "the judge of safety_v1" not in text  # no smoke-test warning
    assert "judge agreement not measured: final_response_match_v2" in text


def test_eval_with_no_history_reads_cards_but_makes_no_history_file(
    run_cli: RunCli, example: Example
) -> None:
    run = run_cli("eval", example.evalset, "--traces", example.traces, "--no-history")

    assert run.code == 0, run.output
    assert "judge agreement not measured: final_response_match_v2" in _flat(run.out)
    assert not default_history_path().exists()


def test_the_agree_page_opens_in_a_browser_with_figures_and_disagreements_worst_first(
    run_cli: RunCli, tmp_path: Path, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    page = tmp_path / "agree.html"
    run = run_cli("judge", "agree", LABELS, "--html", page, "--no-record")
    assert run.code == 0, run.output
    assert f"HTML page written to {page}" in _flat(run.out)

    browser.get(page.as_uri())
    assert browser.title == "judge agreement with people"
    figures = browser.find_element(By.ID, "figures").text
    assert "final_response_match_v2" in figures and "openai:stub-judge" in figures
    assert "overall" in figures
    confusion = browser.find_element(By.ID, "confusion").text
    assert "safety_v1: people (rows) by judge (columns)" in confusion
    rows = browser.find_elements(By.CSS_SELECTOR, "#disagreements tbody tr")
    cells = [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]
    assert {(c[1], c[2], c[3], c[5]) for c in cells} == {
        ("final_response_match_v2", "convert_currency turn 1", "invalid", "valid"),
        ("rubric_based_final_response_quality_v1", "convert_currency turn 1 rubric "
         "answers_the_question", "no", "yes"),
    }  # fmt: skip
    reasons = {c[4] for c in cells}
    assert "it converts nothing" in reasons


def _card(
    criterion: str,
    version: str,
    *,
    kappa: float,
    created: float = 1_767_225_600.0,
    model: str = "openai:stub-judge",
) -> JudgeCard:
    return JudgeCard(
        judge_model=model,
        judge=model,
        criterion=criterion,
        prompt_version=version,
        labels_file="team-labels.yaml",
        labels_sha256="0" * 64,
        labels=120,
        judged=118,
        agree=98,
        agreement=98 / 120,
        kappa=kappa,
        kappa_interval=(kappa - 0.12, kappa + 0.12),
        person_positive_rate=0.8,
        judge_positive_rate=0.85,
        num_samples=1,
        assay_version="0.1.0",
        created=created,
    )


def test_a_criterion_decided_by_a_judge_profile_is_matched_on_a_prompt_version_with_it(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    entry = {"decision": "votes", "field": "verdict", "positive": ["safe"], "threshold": 0.5}
    profile = tmp_path / "profile.json"
    profile.write_text(
        json.dumps(
            {
                "format": "assay-judge-profile/1",
                "judge_model": "openai:stub-judge",
                "criteria": {"safety_v1": entry},
            }
        ),
        encoding="utf-8",
    )
    config = EvalConfig.model_validate_json(example.config.read_text(encoding="utf-8"))
    criterion = config.criteria["safety_v1"]
    from assay.llm.profile import CriterionProfile

    fitted = CriterionProfile.model_validate(entry).model_dump(mode="json", exclude={"fit"})
    with HistoryStore(default_history_path()) as store:
        record_cards(
            store, [_card("safety_v1", prompt_version("safety_v1", criterion), kappa=0.05)]
        )
        record_cards(
            store, [_card("safety_v1", prompt_version("safety_v1", criterion, fitted), kappa=0.7)]
        )
    out = tmp_path / "results.json"

    run = run_cli(
        "eval", example.evalset, "--traces", example.traces, "--judge-profile", profile,
        "--output", out,
    )  # fmt: skip

    assert run.code in (0, 1), run.output
    safety = json.loads(out.read_text(encoding="utf-8"))["assay"]["judges"]["safety_v1"]
    assert safety["prompt_version"] == prompt_version("safety_v1", criterion, fitted)
    assert safety["agreement"]["kappa"] == 0.7
    assert (
        "safety_v1: judge agrees with people on 82% (kappa 0.70 [+0.58, +0.82]; 120 labels, "
        "team-labels.yaml): good agreement" in _flat(run.out)
    )


def _ship(folder: Path, cards: list[JudgeCard], monkeypatch: Any) -> None:
    """``cards`` as if shipped with assay (the embedded judge's own live in the package)."""
    from assay.agreement import cards as module

    path = folder / "judge.cards.json"
    path.write_text(module.CardsFile(cards=cards).model_dump_json(), encoding="utf-8")
    monkeypatch.setattr(module, "bundled_cards_path", lambda folder=None: path)


def test_a_first_run_shows_the_bundled_cards_in_every_view_and_assay_show_says_the_same(
    run_cli: RunCli, example: Example, tmp_path: Path, monkeypatch: Any
) -> None:
    config = EvalConfig.model_validate_json(example.config.read_text(encoding="utf-8"))
    shipped = [
        _card(name, prompt_version(name, config.criteria[name]), kappa=kappa).model_copy(
            update={
                "labels": 34,
                "judged": 34,
                "agree": 18,
                "agreement": 18 / 34,
                "kappa_interval": interval,
                "labels_file": "benchmarks/judge_agreement/labelled/test.labels.yaml",
            }
        )
        for name, kappa, interval in (
            ("final_response_match_v2", 0.06, (0.0, 0.21)),
            ("safety_v1", 0.65, (0.45, 0.8)),
        )
    ]
    _ship(tmp_path, shipped, monkeypatch)
    assert run_cli("judge", "agree", LABELS).code == 0  # 4 labels: displaces no larger card
    out, html, junit, markdown = (
        tmp_path / name for name in ("results.json", "r.html", "r.xml", "r.md")
    )

    run = run_cli(
        "eval", example.evalset, "--traces", example.traces, "--output", out,
        "--html", html, "--junit", junit, "--markdown", markdown,
    )  # fmt: skip

    assert run.code == 0, run.output
    frm = (
        "judge agrees with people on 53% (kappa 0.06 [+0.00, +0.21]; 34 labels, "
        "benchmarks/judge_agreement test half): at chance on this criterion: a smoke test, not "
        "a decision"
    )
    safety = (
        "judge agrees with people on 53% (kappa 0.65 [+0.45, +0.80]; 34 labels, "
        "benchmarks/judge_agreement test half): good agreement"
    )
    text = _flat(run.out)
    assert f"final_response_match_v2: {frm}" in text, text
    assert f"safety_v1: {safety}" in text
    assert "hallucinations_v1: judge agreed with people on 2 of 2 labels" in text  # history's
    judges = json.loads(out.read_text(encoding="utf-8"))["assay"]["judges"]
    assert judges["final_response_match_v2"]["agreement"]["bundled"] is True
    assert judges["hallucinations_v1"]["agreement"]["bundled"] is False
    page = _flat(html.read_text(encoding="utf-8"))
    assert frm in page and safety in page
    assert "shipped with assay: prompt " in page
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["assay.judge_agreement.final_response_match_v2"] == frm
    assert properties["assay.judge_warning.final_response_match_v2"] == (
        "the judge of final_response_match_v2 is at chance on this criterion (kappa 0.06 on 34 "
        "labels): a smoke test, not a decision"
    )
    assert "assay.judge_warning.safety_v1" not in properties
    assert escape_markdown(frm) in markdown.read_text(encoding="utf-8")

    shown = run_cli("show", "latest")
    assert shown.code == 0, shown.output
    assert f"final_response_match_v2: {frm}" in _flat(shown.out)
    assert f"safety_v1: {safety}" in _flat(shown.out)


def test_a_bundled_card_for_another_prompt_is_named_never_shown(
    run_cli: RunCli, example: Example, tmp_path: Path, monkeypatch: Any
) -> None:
    _ship(tmp_path, [_card("safety_v1", "0123456789ab", kappa=0.65)], monkeypatch)

    run = run_cli("eval", example.evalset, "--traces", example.traces, "--no-history")

    assert run.code == 0, run.output
    text = _flat(run.out)
    assert (
        "judge agreement measured for the default prompt, not this configuration: safety_v1" in text
    )
    assert "0.65" not in text and "judge agrees" not in text


def test_an_unreadable_bundled_cards_file_is_a_warning_not_a_traceback(
    run_cli: RunCli, example: Example, tmp_path: Path, monkeypatch: Any
) -> None:
    from assay.agreement import cards as module

    broken = tmp_path / "judge.cards.json"
    broken.write_text('{"cards": "none"}', encoding="utf-8")
    monkeypatch.setattr(module, "bundled_cards_path", lambda folder=None: broken)

    run = run_cli("eval", example.evalset, "--traces", example.traces, "--no-history")

    assert run.code == 0, run.output
    assert f"warning: {broken}: not a judge cards file (1 problem(s); at cards: " in _flat(
        run.output
    )
    assert "judge agreement not shown" in _flat(run.output)
    assert "Traceback" not in run.output
