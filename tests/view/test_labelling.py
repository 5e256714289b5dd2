"""Labelling in the view over real HTTP: the judged units of a recorded case with the judge's
label, labels kept in the history (CSRF enforced, ``--read-only`` refused), the queue, people's
agreement with each other, and the export that ``assay judge agree`` reads back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from _support import RunCli

from assay.agreement.labels import load_labels
from assay.history.labels import StoredLabel
from assay.history.store import HistoryStore
from assay.results.keys import CaseKey
from assay.view import ViewServer, ViewSettings
from assay.view.context import View
from assay.view.labelling import export_labels, judged_units, people_agreement, units_for_case
from assay.view.security import Guard
from view._pages import copy_history

IMG = '<img src=x onerror="window.__pwned=1">'


@pytest.fixture(scope="module")
def recorded(
    tmp_path_factory: pytest.TempPathFactory, example_run: tuple[Path, str]
) -> tuple[Path, str]:
    """One recorded run of the example, shared by the module (copied per test that writes)."""
    return copy_history(example_run[0], tmp_path_factory.mktemp("labelled")), example_run[1]


@pytest.fixture
def history(recorded: tuple[Path, str], tmp_path: Path) -> Path:
    """A copy of the recorded history this test may write labels into."""
    copy = tmp_path / "history.sqlite"
    with HistoryStore(recorded[0]) as source, HistoryStore(copy) as target:
        source._connection().backup(target._connection())
    return copy


@pytest.fixture
def run_id(recorded: tuple[Path, str]) -> str:
    return recorded[1]


class Served:
    """A view server on 127.0.0.1 and an HTTP client holding its CSRF token."""

    def __init__(self, settings: ViewSettings) -> None:
        self.server = ViewServer(settings).start()
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.server.port}")
        page = self.client.get("/label")
        marker = 'name="csrf-token" content="'
        self.csrf = page.text.split(marker, 1)[1].split('"', 1)[0] if marker in page.text else ""

    def post(self, url: str, data: dict[str, Any], csrf: bool = True) -> httpx.Response:
        headers = {"X-CSRF-Token": self.csrf} if csrf else {}
        return self.client.post(url, json=data, headers=headers)

    def close(self) -> None:
        self.client.close()
        self.server.stop()


@pytest.fixture
def served(history: Path) -> Iterator[Served]:
    found = Served(ViewSettings(history, labeller="ana"))
    yield found
    found.close()


def unit_post(run_id: str, label: str, **unit: Any) -> dict[str, Any]:
    base = {
        "run": run_id,
        "eval_set_id": "travel_assistant",
        "eval_id": "forecast_paris",
        "run_number": 1,
        "criterion": "final_response_match_v2",
        "invocation": 1,
    }
    return {**base, **unit, "label": label}


def test_a_cases_units_follow_each_criterions_unit_with_the_judges_label(
    recorded: tuple[Path, str],
) -> None:
    history, run_id = recorded
    with HistoryStore(history) as store:
        results = store.case_results(run_id)
    key = CaseKey("travel_assistant", "book_flight_lisbon", 1)
    units = judged_units(run_id, key, results[key])
    kinds = {(u.criterion, u.invocation, u.rubric, u.sentence) for u in units}
    assert ("final_response_match_v2", 2, None, None) in kinds  # a turn's verdict
    assert ("rubric_based_final_response_quality_v1", 2, "answers_the_question", None) in kinds
    assert ("hallucinations_v1", 1, None, 1) in kinds  # a sentence
    assert all(u.criterion != "per_turn_user_simulator_quality_v1" for u in units)  # n/a here
    by = {(u.criterion, u.invocation, u.rubric, u.sentence): u for u in units}
    match = by[("final_response_match_v2", 2, None, None)]
    assert match.choices == ("valid", "invalid")
    assert match.judge_label == "valid"  # the stub approves everything
    assert by[("hallucinations_v1", 1, None, 1)].choices[0] == "supported"
    scenario = CaseKey("travel_assistant", "book_cheapest_and_convert", 1)
    simulated = [
        u for u in judged_units(run_id, scenario, results[scenario])
        if u.criterion == "per_turn_user_simulator_quality_v1"
    ]  # fmt: skip
    assert simulated and simulated[0].judge_label == "yes"  # a simulated user's turn


def test_a_label_posted_over_http_is_kept_with_who_when_and_replaces_the_last(
    served: Served, history: Path, run_id: str
) -> None:
    first = served.post("/api/labels", unit_post(run_id, "invalid", reason="wrong day"))
    assert first.status_code == 200, first.text
    second = served.post("/api/labels", unit_post(run_id, "valid", reason=f"fine {IMG}"))
    assert second.status_code == 200 and second.json()["labeller"] == "ana"

    with HistoryStore(history) as store:
        kept = store.labels.of_run(run_id)
    assert len(kept) == 1  # one label per unit and labeller
    assert (kept[0].label, kept[0].reason, kept[0].labeller) == ("valid", f"fine {IMG}", "ana")
    assert kept[0].created > 0


def test_labels_are_refused_without_the_csrf_token_or_with_a_wrong_label_or_unit(
    served: Served, history: Path, run_id: str
) -> None:
    assert served.post("/api/labels", unit_post(run_id, "valid"), csrf=False).status_code == 403
    assert served.post("/api/labels", unit_post(run_id, "yes")).status_code == 400
    assert served.post("/api/labels", unit_post(run_id, "valid", invocation=9)).status_code == 404
    assert served.post("/api/labels", unit_post("nope", "valid")).status_code == 404
    extra = {**unit_post(run_id, "valid"), "admin": True}
    assert served.post("/api/labels", extra).status_code == 400
    with HistoryStore(history) as store:
        assert store.labels.of_run(run_id) == []


def test_read_only_serves_no_label_forms_and_refuses_labels(history: Path, run_id: str) -> None:
    found = Served(ViewSettings(history, read_only=True, labeller="ana"))
    try:
        assert found.post("/api/labels", unit_post(run_id, "valid")).status_code == 403
        assert found.post(f"/runs/{run_id}/labels/export", {}).status_code == 403
        page = found.client.get("/label")
        assert page.status_code == 200
        assert 'data-view="label-form"' not in page.text
        assert "read-only" in page.text
    finally:
        found.close()


def test_the_queue_offers_an_unlabelled_unit_and_moves_on_once_it_is_labelled(
    served: Served, run_id: str
) -> None:
    page = served.client.get("/label", params={"run": run_id})
    assert page.status_code == 200
    assert 'data-view="label-queue"' in page.text
    assert '<script src="/static/label.js"></script>' in page.text
    key = page.text.split('data-view="label-queue" data-key="', 1)[1].split('"', 1)[0]
    form = page.text.split("data-unit='", 1)[1].split("'", 1)[0]
    unit = json.loads(form.replace("&#34;", '"').replace("&amp;", "&"))
    choices = page.text.split('data-label="', 1)[1].split('"', 1)[0]
    assert served.post("/api/labels", {**unit, "label": choices}).status_code == 200

    after = served.client.get("/label", params={"run": run_id})
    assert f'data-key="{key}"' not in after.text
    skipped = served.client.get("/label", params=[("run", run_id), ("skip", key)])
    assert f'data-key="{key}"' not in skipped.text


def test_the_queue_puts_the_judges_uncertain_verdicts_first() -> None:
    from assay.view.labelling import Unit, informativeness

    key = CaseKey("s", "c", 1)
    sure = Unit("r", key, "safety_v1", 1, judge_label="safe", probability=0.99)
    torn = Unit("r", key, "safety_v1", 1, judge_label="safe", probability=0.55)
    split = Unit("r", key, "safety_v1", 1, judge_label="safe", probability=0.5, by_votes=True)
    none = Unit("r", key, "safety_v1", 1, judge_label=None)
    assert informativeness(torn, 0) > informativeness(sure, 0)
    assert informativeness(split, 0) > informativeness(torn, 0)
    assert informativeness(none, 0) >= informativeness(split, 0)
    assert informativeness(sure, 0) > informativeness(sure, 50)  # criteria with few labels first


def test_two_peoples_agreement_is_shown_per_criterion_before_any_judge_figure(
    history: Path, run_id: str
) -> None:
    with HistoryStore(history) as store:
        results = store.case_results(run_id)
        for number, (key, result) in enumerate(results.items()):
            for unit in judged_units(run_id, key, result):
                if unit.criterion != "safety_v1":
                    continue
                for who in ("ana", "ben"):
                    said = "unsafe" if who == "ben" and number % 2 else "safe"
                    store.labels.put(
                        StoredLabel(run_id, key, unit.criterion, unit.invocation, said, who)
                    )
        found = people_agreement(store.labels.everything())
    assert [(f.criterion, f.first, f.second) for f in found] == [("safety_v1", "ana", "ben")]
    figures = found[0].figures
    assert figures.pairs == sum(
        1 for key, r in results.items() for u in judged_units(run_id, key, r)
        if u.criterion == "safety_v1"
    )  # fmt: skip
    assert 0 < figures.agree < figures.pairs

    served = Served(ViewSettings(history, labeller=f"ana {IMG}"))
    try:
        text = served.client.get("/label").text
    finally:
        served.close()
    assert text.index("People's agreement") < text.index("Next to label")
    assert f"{figures.rate:.0%}" in text.replace(" ", "")
    assert IMG not in text and "&lt;img src=x onerror=" in text


def test_the_exported_labels_file_is_read_by_judge_agree(
    history: Path, run_id: str, tmp_path: Path, run_cli: RunCli
) -> None:
    served = Served(ViewSettings(history, labeller="ana"))
    try:
        posted = [
            unit_post(run_id, "invalid", reason=f"a hostile {IMG} reason"),
            unit_post(run_id, "safe", criterion="safety_v1"),
            unit_post(run_id, "no", criterion="rubric_based_final_response_quality_v1",
                      rubric="answers_the_question"),
            unit_post(run_id, "supported", criterion="hallucinations_v1", sentence=1),
            unit_post(run_id, "valid", eval_id="book_flight_lisbon", invocation=2),
        ]  # fmt: skip
        for data in posted:
            assert served.post("/api/labels", data).status_code == 200
        download = served.client.get(f"/runs/{run_id}/labels.yaml")
        written = served.post(f"/runs/{run_id}/labels/export", {})
    finally:
        served.close()
    assert download.status_code == 200
    assert "attachment" in download.headers["content-disposition"]
    assert len(yaml.safe_load(download.text)["labels"]) == len(posted)
    assert written.status_code == 200, written.text
    path = Path(written.json()["path"])
    assert path.parent.parent == history.parent / "labels"

    loaded = load_labels(path)
    assert len(loaded.labels) == len(posted)
    out = tmp_path / "agree.json"
    agreed = run_cli("judge", "agree", path, "--json", out)
    assert agreed.code == 0, agreed.output
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert figures["overall"]["pairs"] == len(posted)
    assert figures["overall"]["judged"] == len(posted)
    assert figures["criteria"]["final_response_match_v2"]["agree"] == 1  # the stub said valid


def test_export_as_a_function_writes_into_the_folder_it_is_given(
    history: Path, run_id: str, tmp_path: Path
) -> None:
    with HistoryStore(history) as store:
        store.labels.put(
            StoredLabel(run_id, CaseKey("travel_assistant", "greeting", 1), "safety_v1", 1,
                        "safe", "ana", reason="polite")
        )  # fmt: skip
        view = View(ViewSettings(history, labeller="ana"), Guard(key=None), store)
        path = export_labels(view, run_id, tmp_path / "out")
    assert path == tmp_path / "out" / "labels.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["labels"] == [
        {"case": "greeting", "invocation": 1, "criterion": "safety_v1", "label": "safe",
         "reason": "polite"}
    ]  # fmt: skip
    assert (path.parent / data["eval_set"]).is_file()
    assert (path.parent / data["traces"]).is_file()


def test_units_for_case_carry_this_labellers_label_and_the_form_escapes_it(
    history: Path, run_id: str
) -> None:
    key = CaseKey("travel_assistant", "forecast_paris", 1)
    with HistoryStore(history) as store:
        result = store.case_results(run_id)[key]
        store.labels.put(
            StoredLabel(run_id, key, "safety_v1", 1, "unsafe", "ana", reason=f"says {IMG}")
        )
        store.labels.put(StoredLabel(run_id, key, "safety_v1", 1, "safe", "ben"))
        mine = View(ViewSettings(history, labeller="ana"), Guard(key=None), store)
        units = units_for_case(mine, run_id, key, result)
        locked = View(ViewSettings(history, read_only=True, labeller="ana"), Guard(None), store)
        read_only = units_for_case(locked, run_id, key, result)
    [safety] = units["safety_v1"]
    assert (safety.label, safety.reason, safety.judge_label) == ("unsafe", f"says {IMG}", "safe")
    assert all(u.label is None for u in units["final_response_match_v2"])

    macros = mine.env.get_template("label_macros.html.j2").module
    html = str(macros.label_form(safety))  # type: ignore[attr-defined]
    assert 'data-view="label-form"' in html
    assert 'data-label="unsafe" aria-pressed="true"' in html
    assert IMG not in html and "says &lt;img src=x onerror=" in html
    assert str(macros.label_form(read_only["safety_v1"][0])).strip() == ""  # type: ignore[attr-defined]
