"""Running ``assay judge agree`` and ``align`` from the view, on the labels people set in it.

``POST /runs/{run_id}/agree`` (or ``/align``) starts a :class:`Job` in a background thread: the
request returns at once and the page polls the job. One job runs at a time in a view (it holds
:attr:`~assay.view.context.View.lock`, taken without waiting: a second request while one runs is
refused, 409). A job exports the run's labels (:func:`export_labels` of
:mod:`assay.view.labelling`: the labels file and the eval set and traces it names), then does
what the CLI does with them:

* **agree** (:func:`agree_on`): check the judges (a judge that cannot work fails the job before
  any call), score the labelled units, record one judge card per criterion in the view's
  history (as ``assay judge agree`` does, with the judge profile it would use), and keep the
  report, so the new cards' pages list their disagreements too;
* **align** (:func:`align_on`): score the units with the judge unaided, fit per criterion the
  threshold that agrees best with people (before/after by cross-validation), and write the
  profile as ``assay judge align --out`` would.

What a job writes (the exported labels, the profile) goes in a folder beside the history
(:func:`work_folder`), so a card's ``labels_file`` and a profile's ``labels.path`` still name a
file after the job. A failure (no labels, a judge that cannot be reached, an unreadable file) is
kept as the job's ``error``, in words: the page shows it, never a traceback.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from starlette.requests import Request

from assay._internal.aio import run_sync
from assay.agreement.agree import AgreeReport, agree
from assay.agreement.align import Fitted, align, helps
from assay.agreement.cards import JudgeCard, cards_from, judge_models, record_cards
from assay.agreement.labels import LabelledRun, load_labels
from assay.errors import AssayError
from assay.history.store import HistoryStore
from assay.llm.profile import resolve_profile, save_profile
from assay.llm.selection import choose_judge_model, describe_judge
from assay.runner.evaluate import JudgeSettings
from assay.runner.preflight import JudgeCheckError, JudgeRecorder, check_judges
from assay.view.context import View

Kind = Literal["agree", "align"]
KINDS: tuple[Kind, ...] = ("agree", "align")
State = Literal["running", "done", "failed"]
Export = Callable[[View, str, Path], Path]
"""Writes a run's labels (and the eval set and traces they name) into a folder; gives the
labels file."""

_LOG = logging.getLogger(__name__)


def _quiet(words: str) -> None:
    """A step no one watches."""


# -- the history's cards, with their ids ------------------------------------------------------


@dataclass(frozen=True)
class CardRow:
    """A judge card and its id in the history (the ``judge_cards`` table's id: ``/cards/{id}``)."""

    id: int
    card: JudgeCard


_CARD_ROWS = "SELECT id, card FROM judge_cards"


def card_rows(store: HistoryStore, limit: int | None = None) -> list[CardRow]:
    """The history's judge cards with their ids, newest first (as ``assay judge cards``)."""
    rows = store.query(  # the cards with their ids, which the typed methods do not give
        f"{_CARD_ROWS} ORDER BY created DESC, id DESC LIMIT ?", (-1 if limit is None else limit,)
    )
    return [CardRow(int(row[0]), JudgeCard.model_validate_json(str(row[1]))) for row in rows]


def card_row(store: HistoryStore, card_id: int) -> CardRow | None:
    """The card of that id; None when there is none."""
    rows = store.query(f"{_CARD_ROWS} WHERE id = ?", (card_id,))
    if not rows:
        return None
    return CardRow(int(rows[0][0]), JudgeCard.model_validate_json(str(rows[0][1])))


def _newest_id(store: HistoryStore) -> int:
    rows = store.query("SELECT COALESCE(MAX(id), 0) FROM judge_cards", ())
    return int(rows[0][0])


# -- what a job found --------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What agree or align found: the report, and the cards recorded (agree) or the fit and
    where its profile was written (align)."""

    kind: Kind
    labels_path: Path
    report: AgreeReport
    warnings: tuple[str, ...] = ()
    cards: tuple[CardRow, ...] = ()
    skipped: tuple[str, ...] = ()
    """Criteria given no card, and why."""
    fitted: tuple[Fitted, ...] = ()
    profile_path: Path | None = None
    """Where align wrote the profile; None when nothing could be fitted."""
    profile_judge: str = ""

    def kept(self, found: Fitted) -> bool:
        """Whether ``found``'s rule is in the profile (it did better held out)."""
        return found.decision is not None and helps(found)


@dataclass
class Job:
    """One agree or align started from the page."""

    run_id: str
    kind: Kind
    judge: str | None
    started: float = field(default_factory=time.time)
    state: State = "running"
    step: str = "starting"
    """What it is doing now, in words (the page shows it while it runs)."""
    finished: float | None = None
    outcome: Outcome | None = None
    error: str = ""

    @property
    def seconds(self) -> float:
        return (self.finished or time.time()) - self.started


# -- the work ---------------------------------------------------------------------------------


def work_folder(view: View, run_id: str) -> Path:
    """Where a run's jobs write: ``<history>-judging/<run id>/`` beside the history."""
    history = view.settings.history
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", run_id)
    return history.with_name(f"{history.stem}-judging") / safe


def default_judge() -> str:
    """The judge a job uses when none is given, in words (as ``assay eval`` would pick it for a
    criterion with no judge of its own configured)."""
    choice = choose_judge_model(None, override=None, env=os.environ)
    return choice if isinstance(choice, str) else describe_judge(choice)


def check_judges_of(run: LabelledRun, judge: str | None) -> None:
    """Raise :class:`~assay.runner.preflight.JudgeCheckError` when the judge of a labelled
    criterion cannot work (as the CLI checks before any call)."""
    recorder = JudgeRecorder(override=judge, env=os.environ)
    for criterion in dict.fromkeys(label.criterion for label in run.labels):
        recorder.judge_for(criterion, run.config.criteria.get(criterion))
    problems = run_sync(check_judges(recorder.needs(), env=os.environ))
    if problems:
        raise JudgeCheckError(problems)


def agree_on(
    view: View, labels_path: Path, judge: str | None, step: Callable[[str], None] = _quiet
) -> Outcome:
    """``assay judge agree LABELS [--judge-model JUDGE]``, its cards recorded in the view's
    history."""
    run = load_labels(labels_path)
    step("checking the judge")
    check_judges_of(run, judge)
    profile = resolve_profile(None)
    settings = JudgeSettings(model=judge, cache=True, profile=profile)
    step(f"asking the judge about {len(run.labels)} labelled unit(s)")
    report = run_sync(agree(run, settings))
    step("recording the judge cards")
    models = judge_models(report, run, settings.model)
    cards, skipped = cards_from(
        report, run, models, profile_for=profile.entry_for if profile else None
    )
    before = _newest_id(view.store)
    record_cards(view.store, cards)
    rows = [row for row in card_rows(view.store, len(cards) + 8) if row.id > before]
    return Outcome(
        "agree",
        labels_path,
        report,
        warnings=run.warnings,
        cards=tuple(sorted(rows, key=lambda row: row.id)),
        skipped=tuple(skipped),
    )


def align_on(
    view: View,
    labels_path: Path,
    judge: str | None,
    out: Path,
    step: Callable[[str], None] = _quiet,
) -> Outcome:
    """``assay judge align LABELS --out OUT [--judge-model JUDGE]``: the profile is written to
    ``out`` when anything could be fitted."""
    run = load_labels(labels_path)
    step("checking the judge")
    check_judges_of(run, judge)
    settings = JudgeSettings(model=judge, cache=True)
    step(f"asking the judge about {len(run.labels)} labelled unit(s)")
    report = run_sync(agree(run, settings))
    step("fitting the thresholds")
    digest = hashlib.sha256(labels_path.read_bytes()).hexdigest()
    profile, fitted = align(report, labels={"path": str(labels_path), "sha256": digest})
    created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    profile = profile.model_copy(update={"created": created})
    written = None
    if profile.criteria:
        out.parent.mkdir(parents=True, exist_ok=True)
        save_profile(profile, out)
        written = out
    return Outcome(
        "align",
        labels_path,
        report,
        warnings=run.warnings,
        fitted=tuple(fitted),
        profile_path=written,
        profile_judge=profile.judge_model,
    )


def exported_labels(view: View, run_id: str, folder: Path) -> Path:
    """The run's labels, written with what they name into ``folder`` by the labelling pages'
    export."""
    from assay.view import labelling

    export: Export | None = getattr(labelling, "export_labels", None)
    if export is None:
        raise LabelsUnavailable("the labels set in the view cannot be exported yet")
    return export(view, run_id, folder)


class LabelsUnavailable(AssayError):
    """The run's labels cannot be had (none set, or no export)."""


def run_agree(view: View, run_id: str, judge: str | None, step: Callable[[str], None]) -> Outcome:
    """Agree on the labels people set in the view for ``run_id``."""
    folder = work_folder(view, run_id)
    step("exporting the labels")
    labels = exported_labels(view, run_id, folder / "labels")
    return agree_on(view, labels, judge, step)


def run_align(view: View, run_id: str, judge: str | None, step: Callable[[str], None]) -> Outcome:
    """Align the judge to the labels people set in the view for ``run_id``."""
    folder = work_folder(view, run_id)
    step("exporting the labels")
    labels = exported_labels(view, run_id, folder / "labels")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return align_on(view, labels, judge, folder / f"judge-profile-{stamp}.json", step)


# -- jobs -------------------------------------------------------------------------------------

Work = Callable[[View, str, str | None, Callable[[str], None]], Outcome]
WORK: dict[Kind, Work] = {"agree": run_agree, "align": run_align}


@dataclass
class Judging:
    """The jobs of one view: the newest per run, and the reports behind the cards they made."""

    jobs: dict[str, Job] = field(default_factory=dict)
    reports: dict[int, AgreeReport] = field(default_factory=dict)
    """Per card id made here, the report it came from (its disagreements)."""
    threads: list[threading.Thread] = field(default_factory=list)
    guard: threading.Lock = field(default_factory=threading.Lock)

    def job(self, run_id: str) -> Job | None:
        with self.guard:
            return self.jobs.get(run_id)

    def report_of(self, card_id: int) -> AgreeReport | None:
        with self.guard:
            return self.reports.get(card_id)

    def start(
        self, view: View, run_id: str, kind: Kind, judge: str | None, work: Work | None = None
    ) -> Job | None:
        """Start ``kind`` on ``run_id`` in a thread; None when a job is running already."""
        if not view.lock.acquire(blocking=False):
            return None
        job = Job(run_id, kind, judge)
        with self.guard:
            self.jobs[run_id] = job
        thread = threading.Thread(
            target=self._run,
            args=(view, job, work or WORK[kind]),
            name=f"assay-view-{kind}",
            daemon=True,
        )
        self.threads.append(thread)
        try:
            thread.start()
        except BaseException:
            view.lock.release()
            raise
        return job

    def _run(self, view: View, job: Job, work: Work) -> None:
        def step(words: str) -> None:
            job.step = words

        try:
            outcome = work(view, job.run_id, job.judge, step)
            with self.guard:
                for row in outcome.cards:
                    self.reports[row.id] = outcome.report
            job.outcome, job.state = outcome, "done"
        except AssayError as exc:
            job.error, job.state = str(exc), "failed"
        except Exception as exc:  # the page says what failed; the log keeps the traceback
            _LOG.exception("%s on run %s failed", job.kind, job.run_id)
            job.error, job.state = f"{type(exc).__name__}: {exc}", "failed"
        finally:
            job.finished = time.time()
            view.lock.release()

    def wait(self, timeout_s: float = 60.0) -> None:
        """Wait for every job started here to end (tests; a server stopping)."""
        for thread in list(self.threads):
            thread.join(timeout_s)


_MADE = threading.Lock()


def judging_of(request: Request) -> Judging:
    """The jobs of the view serving ``request`` (kept on its app, made on first use)."""
    state = request.app.state
    with _MADE:
        found = getattr(state, "judging", None)
        if not isinstance(found, Judging):
            found = Judging()
            state.judging = found
        return found
