"""The view's judge cards pages, and agree/align run from the page.

* ``GET /cards``: every judge card in the history, newest first: judge model, criterion, prompt
  version, when, labels, agreement and kappa with its interval (as ``assay judge cards`` and the
  verdicts' agreement words give them).
* ``GET /cards/{id}``: one card whole (``id``: the ``judge_cards`` table's id, which the case
  page links): its reading in words, the figures and confusion table in the same sections as
  ``assay judge agree --html`` (one template, ``agree_sections.html.j2``), and its disagreements
  worst first where this view made it (a card keeps no units).
* ``GET /runs/{run_id}/agree``: run agree or align on the labels people set in the view for that
  run, and see the job: its step while it runs (``static/cards.js`` polls
  ``/runs/{run_id}/agree/status``), then the new cards and the agreement, or align's before and
  after figures and where the profile was written; or what went wrong, in words.
* ``POST /runs/{run_id}/agree`` and ``/align`` (a form, or JSON ``{"judge": ...}``): start the job
  (:mod:`assay.view.judging`): 303 to the page (a form) or 202 with the job (JSON); 409 while a
  job runs, 403 in a read-only view, 404 for a run not in the history.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from assay.agreement.agree import AgreeReport
from assay.agreement.align import FOLDS, STABLE_SPREAD, Fitted
from assay.agreement.cards import JudgeCard
from assay.agreement.render import confusion_of, disagreements_of, figures_of
from assay.agreement.stats import Agreement
from assay.history.records import HistoryError
from assay.report.judge_agreement import figure_words, interval, rate
from assay.report.page import environment
from assay.view.context import View, view_of
from assay.view.judging import (
    KINDS,
    CardRow,
    Job,
    Kind,
    card_row,
    card_rows,
    default_judge,
    judging_of,
)

AGREEMENT_TEMPLATES = Path(__file__).resolve().parents[2] / "agreement" / "templates"
"""Where ``assay judge agree --html``'s templates are: the sections are shared from there."""
LISTED = 500
"""Cards listed on /cards (newest first)."""
_SECTIONS = environment(AGREEMENT_TEMPLATES)
AGREE_STYLE = Markup(_SECTIONS.get_template("agree_style.html.j2").render())
"""The agreement sections' own style (a template of no values)."""


# -- what the templates show ------------------------------------------------------------------


def _kappa(card: JudgeCard) -> str:
    if card.kappa is None:
        return "undefined"
    span = interval(card.agreement_info())
    return f"{card.kappa:.2f} {span}".strip()


def card_line(row: CardRow) -> dict[str, Any]:
    """One card as the list shows it."""
    card = row.card
    return {
        "id": row.id,
        "date": card.date,
        "judge_model": card.judge_model,
        "judge": card.judge,
        "criterion": card.criterion,
        "prompt_version": card.prompt_version,
        "labels": card.labels,
        "judged": card.judged,
        "agree": rate(card.agreement_info()),
        "kappa": _kappa(card),
    }


def _card_agreement(card: JudgeCard) -> Agreement:
    return Agreement(
        pairs=card.labels,
        judged=card.judged,
        agree=card.agree,
        kappa=card.kappa,
        kappa_interval=card.kappa_interval,
        confusion=card.confusion,
        person_positive_rate=card.person_positive_rate,
        judge_positive_rate=card.judge_positive_rate,
    )


def report_sections(report: AgreeReport) -> Markup:
    """An agree report's figures, confusion tables and disagreements: ``assay judge agree
    --html``'s sections (rendered from its own autoescaped template)."""
    found = report.by_criterion.items()
    html = _SECTIONS.get_template("agree_sections.html.j2").render(
        figures=[figures_of(name, report.judges.get(name, ""), a) for name, a in found],
        overall=figures_of("overall", "", report.overall),
        confusions=[confusion_of(name, a) for name, a in found],
        disagreements=disagreements_of(report),
        total=len(report.compared),
        calls=report.usage.calls,
        tokens=f"{report.usage.total_tokens:,}",
    )
    return Markup(html)  # autoescaped above: no text of labels or judges is markup


def card_sections(card: JudgeCard, report: AgreeReport | None) -> Markup:
    """A card's figures and confusion table, and its disagreements when ``report`` (the agree
    run that made it) is known."""
    found = _card_agreement(card)
    wrong = None if report is None else disagreements_of(report, {card.criterion})
    total = sum(1 for u in report.compared if u.label.criterion == card.criterion) if report else 0
    html = _SECTIONS.get_template("agree_sections.html.j2").render(
        figures=[figures_of(card.criterion, card.judge, found)],
        overall=None,
        confusions=[confusion_of(card.criterion, found)],
        disagreements=wrong,
        total=total,
        calls=None,
        tokens=None,
    )
    return Markup(html)  # autoescaped above


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def fitted_line(found: Fitted, kept: bool) -> dict[str, Any]:
    """One criterion of align's table, as ``assay judge align`` prints it."""
    before, after = found.before, found.after
    return {
        "criterion": found.criterion,
        "labels": before.pairs,
        "decision": found.decision or "-",
        "threshold": _figure(found.threshold),
        "before": f"{_figure(before.rate)} κ{_figure(before.kappa)}",
        "after": f"{_figure(after.rate)} κ{_figure(after.kappa)}",
        "stable": str(found.stable_from) if found.stable_from else f">{before.pairs}",
        "kept": kept,
        "notes": list(found.notes),
    }


# -- handlers ---------------------------------------------------------------------------------


def cards_page(request: Request) -> Response:
    view = view_of(request)
    try:
        rows = card_rows(view.store, LISTED)
    except HistoryError as exc:
        return view.page(
            request,
            "cards.html.j2",
            500,
            cards=[],
            problem=str(exc),
            more=False,
            history="",
            agree_style=AGREE_STYLE,
        )
    return view.page(
        request,
        "cards.html.j2",
        cards=[card_line(row) for row in rows],
        problem="",
        more=len(rows) == LISTED,
        history=str(view.settings.history),
        agree_style=AGREE_STYLE,
    )


def card_page(request: Request) -> Response:
    view = view_of(request)
    card_id = int(request.path_params["card_id"])
    row = card_row(view.store, card_id)
    if row is None:
        return _missing(view, request, f"no judge card {card_id} in this history")
    card = row.card
    report = judging_of(request).report_of(card_id)
    return view.page(
        request,
        "cards_card.html.j2",
        card=card_line(row),
        whole=card,
        words=figure_words(card.criterion, card.agreement_info()).text,
        sections=card_sections(card, report),
        agree_style=AGREE_STYLE,
    )


def _missing(view: View, request: Request, why: str) -> Response:
    return view.page(request, "cards_missing.html.j2", 404, why=why)


def agree_page(request: Request, status: int = 200, problem: str = "") -> Response:
    view = view_of(request)
    run_id = str(request.path_params["run_id"])
    if view.store.find(run_id) is None:
        return _missing(view, request, f"no run '{run_id}' in this history")
    job = judging_of(request).job(run_id)
    outcome = job.outcome if job is not None else None
    return view.page(
        request,
        "agree_page.html.j2",
        status,
        run_id=run_id,
        job=job,
        problem=problem,
        default_judge=default_judge(),
        cards=[card_line(row) for row in outcome.cards] if outcome else [],
        sections=report_sections(outcome.report) if outcome and outcome.kind == "agree" else "",
        fitted=[fitted_line(f, outcome.kept(f)) for f in outcome.fitted] if outcome else [],
        folds=FOLDS,
        spread=STABLE_SPREAD,
        agree_style=AGREE_STYLE,
    )


def job_json(job: Job | None) -> dict[str, Any]:
    """A job's state for the page's script (and JSON clients)."""
    if job is None:
        return {"state": "none"}
    outcome = job.outcome
    return {
        "run_id": job.run_id,
        "kind": job.kind,
        "state": job.state,
        "step": job.step,
        "seconds": round(job.seconds, 1),
        "error": job.error,
        "cards": [row.id for row in outcome.cards] if outcome else [],
        "profile": str(outcome.profile_path) if outcome and outcome.profile_path else None,
    }


def job_status(request: Request) -> Response:
    run_id = str(request.path_params["run_id"])
    return JSONResponse(job_json(judging_of(request).job(run_id)))


async def _judge_given(request: Request) -> str | None:
    """The judge the request names (a form's ``judge`` field or JSON's ``judge``); None: the
    default."""
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            data = json.loads(await request.body() or b"{}")
        except ValueError:
            data = {}
        given = data.get("judge") if isinstance(data, dict) else None
    else:
        given = (await request.form()).get("judge")
    return given.strip() or None if isinstance(given, str) else None


def _start(kind: Kind) -> Any:
    async def start(request: Request) -> Response:
        view = view_of(request)
        wants_json = "application/json" in request.headers.get("content-type", "")
        run_id = str(request.path_params["run_id"])
        judge = await _judge_given(request)
        refused = _refusal(view, run_id)
        if refused is None:
            job = judging_of(request).start(view, run_id, kind, judge)
            if job is None:
                refused = (409, "an agree or align is running already; wait for it to finish")
        if refused is not None:
            status, why = refused
            if wants_json:
                return JSONResponse({"error": why}, status_code=status)
            return agree_page(request, status, why)
        if wants_json:
            return JSONResponse(job_json(job), status_code=202)
        return RedirectResponse(f"/runs/{run_id}/agree", status_code=303)

    return start


def _refusal(view: View, run_id: str) -> tuple[int, str] | None:
    if view.settings.read_only:
        return 403, "this view is read-only: agree and align are not run from it"
    if view.store.find(run_id) is None:
        return 404, f"no run '{run_id}' in this history"
    return None


routes: list[BaseRoute] = [
    Route("/cards", cards_page, methods=["GET"]),
    Route("/cards/{card_id:int}", card_page, methods=["GET"]),
    Route("/runs/{run_id}/agree", agree_page, methods=["GET"]),
    Route("/runs/{run_id}/agree/status", job_status, methods=["GET"]),
    *(Route(f"/runs/{{run_id}}/{kind}", _start(kind), methods=["POST"]) for kind in KINDS),
]
