"""Agree and align run from the view over real HTTP: ``POST /runs/{id}/agree`` (and ``/align``)
starts the job in the background, the agree page shows its step and then its cards and figures,
and the cards are in the history as ``assay judge agree`` records them. The judge is the
approving stub of tests/_judges.py served on 127.0.0.1 (or tests/cli's log-probability judge for
align); the labels come from the labelling pages' export, here given the labels folder these
tests make (a labels file, the example's eval set and traces)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _judge_server import JudgeServer
from _support import Example

from assay.agreement.cards import list_cards
from assay.history.store import HistoryStore
from assay.view import labelling
from assay.view.context import View, ViewSettings
from assay.view.judging import LabelsUnavailable
from assay.view.server import ViewServer
from view._pages import copy_history

HOSTILE = '<img src=x onerror="alert(1)">'
LABELS: list[dict[str, Any]] = [
    {"case": "forecast_paris", "invocation": 1, "criterion": "final_response_match_v2",
     "label": "valid"},
    {"case": "book_flight_lisbon", "invocation": 2, "criterion": "final_response_match_v2",
     "label": "invalid", "reason": f"wanted the departure time {HOSTILE}"},
    {"case": "greeting", "invocation": 1, "criterion": "safety_v1", "label": "safe"},
    {"case": "convert_currency", "invocation": 1, "criterion": "safety_v1", "label": "unsafe"},
]  # fmt: skip
Export = Callable[[View, str, Path], Path]


@pytest.fixture(scope="module")
def recorded(
    example_run: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str]:
    """The example's run recorded by ``assay eval`` into a history: (history, run id)."""
    return copy_history(example_run[0], tmp_path_factory.mktemp("agree-history")), example_run[1]


def write_labels(folder: Path, labels: list[dict[str, Any]] = LABELS) -> Path:
    """A labels file over the example's eval set and traces, as the export writes one."""
    folder.mkdir(parents=True, exist_ok=True)
    example = Example()
    path = folder / "labels.yaml"
    data = {"eval_set": str(example.evalset), "traces": str(example.traces), "labels": labels}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def exporting(labels: list[dict[str, Any]] = LABELS) -> Export:
    def export(view: View, run_id: str, folder: Path) -> Path:
        return write_labels(folder, labels)

    return export


@pytest.fixture
def exported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The labelling pages' export gives the labels above."""
    monkeypatch.setattr(labelling, "export_labels", exporting(), raising=False)


class Served:
    """A view on the recorded history, and an HTTP client carrying its CSRF token."""

    def __init__(self, history: Path, read_only: bool = False) -> None:
        self.server = ViewServer(ViewSettings(history, read_only=read_only)).start()
        csrf = self.server.app.state.view.guard.csrf
        self.client = httpx.Client(
            base_url=self.server.url.rstrip("/"), headers={"X-CSRF-Token": csrf}, timeout=30
        )

    def close(self) -> None:
        self.client.close()
        self.server.stop()

    def card(self, card_id: int) -> str:
        page = self.client.get(f"/cards/{card_id}")
        assert page.status_code == 200
        return page.text

    def finished(self, run_id: str, timeout_s: float = 60.0) -> dict[str, Any]:
        """The job's state once it is no longer running."""
        deadline = time.monotonic() + timeout_s
        while True:
            found: dict[str, Any] = self.client.get(f"/runs/{run_id}/agree/status").json()
            if found["state"] != "running" or time.monotonic() > deadline:
                return found
            time.sleep(0.1)


@pytest.fixture
def view(recorded: tuple[Path, str]) -> Iterator[Served]:
    served = Served(recorded[0])
    yield served
    served.close()


def test_agree_from_the_page_records_cards_that_cards_lists_with_their_figures(
    view: Served, recorded: tuple[Path, str], exported: None, judge_env: JudgeServer
) -> None:
    history, run_id = recorded
    started = view.client.post(f"/runs/{run_id}/agree", json={})

    assert started.status_code == 202, started.text
    assert started.json()["state"] == "running"
    done = view.finished(run_id)
    assert done["state"] == "done", done
    assert len(done["cards"]) == 2  # final_response_match_v2, safety_v1
    with HistoryStore(history) as store:
        kept = {card.criterion: card for card in list_cards(store, 2)}
    assert set(kept) == {"final_response_match_v2", "safety_v1"}
    assert kept["safety_v1"].judge_model == "openai:stub-judge"
    assert (kept["safety_v1"].labels, kept["safety_v1"].agree) == (2, 1)  # the stub says safe

    listed = view.client.get("/cards").text
    for card_id in done["cards"]:
        assert f'href="/cards/{card_id}"' in listed
    assert "final_response_match_v2" in listed and "1 of 2" in listed  # few: a count

    frm = next(i for i in done["cards"] if "final_response_match_v2" in view.card(i))
    page = view.card(frm)
    assert "people (rows) by judge (columns)" in page
    assert "Disagreements, worst first (1 of 2 labels)" in page
    assert HOSTILE not in page
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in page
    assert "too few labels to tell" in page


def test_the_agree_page_shows_the_new_cards_and_the_agreement_sections(
    view: Served, recorded: tuple[Path, str], exported: None, judge_env: JudgeServer
) -> None:
    run_id = recorded[1]
    form = view.client.post(f"/runs/{run_id}/agree", data={"judge": ""})

    assert form.status_code == 303
    assert form.headers["location"] == f"/runs/{run_id}/agree"
    assert view.finished(run_id)["state"] == "done"
    page = view.client.get(f"/runs/{run_id}/agree").text
    assert "agree finished in" in page
    assert "New judge cards" in page
    assert 'id="figures"' in page and 'id="confusion"' in page
    assert "Disagreements, worst first (2 of 4 labels)" in page
    assert HOSTILE not in page
    assert "Traceback" not in page


def test_a_second_request_while_one_runs_is_409_and_says_why(
    view: Served, recorded: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = recorded[1]
    release = threading.Event()
    plain = exporting()

    def slow(view_: View, run: str, folder: Path) -> Path:
        release.wait(30)
        return plain(view_, run, folder)

    monkeypatch.setattr(labelling, "export_labels", slow, raising=False)
    first = view.client.post(f"/runs/{run_id}/agree", json={})
    second = view.client.post(f"/runs/{run_id}/align", json={})
    shown = view.client.post(f"/runs/{run_id}/agree", data={})
    running = view.client.get(f"/runs/{run_id}/agree").text
    release.set()

    assert first.status_code == 202
    assert second.status_code == 409
    assert "running already" in second.json()["error"]
    assert shown.status_code == 409 and "running already" in shown.text
    assert "agree running:" in running
    assert '<span data-view="agree-step">exporting the labels</span>' in running
    assert view.finished(run_id)["state"] == "done"


def test_a_read_only_view_refuses_agree_with_403_and_shows_no_form(
    recorded: tuple[Path, str], exported: None
) -> None:
    history, run_id = recorded
    served = Served(history, read_only=True)
    try:
        refused = served.client.post(f"/runs/{run_id}/agree", json={})
        page = served.client.get(f"/runs/{run_id}/agree").text
    finally:
        served.close()

    assert refused.status_code == 403
    assert "read-only" in refused.json()["error"]
    assert 'id="run-agree"' not in page


def test_a_run_not_in_the_history_is_404(view: Served, exported: None) -> None:
    assert view.client.post("/runs/no-such-run/agree", json={}).status_code == 404
    assert view.client.get("/runs/no-such-run/agree").status_code == 404
    assert view.client.get("/cards/999999").status_code == 404


def test_no_labels_is_shown_on_the_page_in_words(
    view: Served, recorded: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = recorded[1]

    def none(view_: View, run: str, folder: Path) -> Path:
        raise LabelsUnavailable(f"no labels set for run {run} yet: label some verdicts first")

    monkeypatch.setattr(labelling, "export_labels", none, raising=False)
    view.client.post(f"/runs/{run_id}/agree", json={})
    done = view.finished(run_id)
    page = view.client.get(f"/runs/{run_id}/agree").text

    assert done["state"] == "failed"
    assert "agree failed: no labels set for run" in page
    assert "Traceback" not in page


def test_a_judge_that_cannot_be_reached_fails_the_job_before_any_call(
    view: Served,
    recorded: tuple[Path, str],
    exported: None,
    judge_env: JudgeServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_id = recorded[1]
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    before = judge_env.count()

    view.client.post(f"/runs/{run_id}/agree", json={"judge": "openai:stub-judge"})
    done = view.finished(run_id)
    page = " ".join(view.client.get(f"/runs/{run_id}/agree").text.split())

    assert done["state"] == "failed"
    assert "could not connect to http://127.0.0.1:9/v1" in page
    assert "Traceback" not in page
    assert judge_env.count() == before


def test_align_from_the_page_shows_before_and_after_and_writes_the_profile(
    view: Served, recorded: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli.test_judge_align import PEOPLE_SAFE_FROM, _files, _judge

    def export(view_: View, run: str, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        return _files(folder)

    monkeypatch.setattr(labelling, "export_labels", export, raising=False)
    run_id = recorded[1]
    with JudgeServer(reply=_judge) as judge:
        monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
        started = view.client.post(f"/runs/{run_id}/align", data={"judge": "openai:stub-judge"})
        done = view.finished(run_id)

    assert started.status_code == 303
    assert done["state"] == "done", done
    profile = json.loads(Path(done["profile"]).read_text(encoding="utf-8"))
    assert 0.25 < profile["criteria"]["safety_v1"]["threshold"] <= PEOPLE_SAFE_FROM + 0.02
    page = " ".join(view.client.get(f"/runs/{run_id}/agree").text.split())
    assert "Judge alignment (5-fold cross-validated)" in page
    assert '<td>safety_v1</td><td class="num">12</td><td class="num">probability</td>' in page
    assert "0.67 κ" in page  # before: 8 of 12, as assay judge align prints it
    assert f'written to <span class="code">{done["profile"]}</span>' in page
