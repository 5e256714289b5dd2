"""``assay judge align LABELS --out PROFILE.json``: fit a judge to people's labels.

The judge scores the labelled units once; per criterion a decision threshold on its probability
of the positive label is fitted and measured by cross-validation (see
:mod:`assay.agreement.align`), and the profile is written for ``assay eval --judge-profile``.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from assay._internal.aio import run_sync
from assay.agreement.agree import agree
from assay.agreement.align import (
    EXEMPLAR_CRITERIA,
    FOLDS,
    PROMPTS,
    STABLE_SPREAD,
    Fitted,
    align,
    choose_exemplars,
    helps,
    probe_profile,
)
from assay.agreement.labels import load_labels
from assay.cli.judge_check import check_labelled_judges
from assay.cli.output import make_console
from assay.config import BaseCriterion
from assay.llm.profile import Exemplar, save_profile
from assay.llm.selection import choose_judge_model, judged_model
from assay.runner.evaluate import JudgeSettings


@click.command("align")
@click.argument("labels_path", metavar="LABELS", type=click.Path(dir_okay=False))
@click.option("--judge-model", default=None, help="The judge to fit (default: as assay eval).")
@click.option(
    "--out",
    "out_path",
    required=True,
    type=click.Path(dir_okay=False, writable=True),
    help="Where to write the judge profile (JSON) for assay eval --judge-profile.",
)
@click.option(
    "--num-samples",
    type=click.IntRange(min=1),
    default=None,
    help="Judge samples per unit (default: each criterion's num_samples). A backend without "
    "log-probabilities is fitted on the share of positive votes, which needs several.",
)
@click.option("--no-cache", is_flag=True, help="Ask the judge even when the cache has answered.")
@click.option(
    "--json", "json_path", type=click.Path(dir_okay=False), help="Also write the figures here."
)
@click.option(
    "--prompt",
    type=click.Choice(sorted(PROMPTS)),
    default=None,
    help="Ask the criteria that offer it with this prompt for small models "
    "(one_rubric_per_call: the rubric criteria, one rubric per question); the profile keeps it.",
)
@click.option(
    "--exemplars",
    type=click.IntRange(min=1),
    default=None,
    help="Also show the judge this many labelled cases of each verdict (never the case it "
    "judges), chosen from LABELS, and fit it so (final_response_match_v2, safety_v1); the "
    "judge runs twice, and before is measured without them.",
)
def align_command(
    labels_path: str,
    judge_model: str | None,
    out_path: str,
    num_samples: int | None,
    no_cache: bool,
    json_path: str | None,
    prompt: str | None,
    exemplars: int | None,
) -> None:
    """Fit, per criterion of LABELS, the threshold on the judge's probability of the positive
    label that agrees best with people, measured before and after by cross-validation (an
    aligned judge is never scored on the labels it was fitted on), and write the profile."""
    console = make_console()
    run = load_labels(labels_path)
    check_labelled_judges(run, override=judge_model or None)  # exit 2 before any call
    for warning in run.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    asked = [name for name in PROMPTS.get(prompt or "", ()) if name in run.config.criteria]
    model = _judge_of(run.config.criteria[run.labels[0].criterion], judge_model)
    probe = probe_profile(model, prompt, asked) if prompt and asked and model else None
    transcript: dict[tuple[str, str], str] = {}
    settings = JudgeSettings(
        model=judge_model or None, cache=not no_cache, profile=probe, transcript=transcript
    )
    report = run_sync(agree(run, settings, num_samples=num_samples))
    unaided = None
    shown: dict[str, list[Exemplar]] = {}
    if exemplars:
        shown = choose_exemplars(report.compared, transcript, exemplars)
        if not shown:
            console.print(
                "[yellow]warning:[/] no exemplars: they are chosen for "
                f"{', '.join(EXEMPLAR_CRITERIA)} with {exemplars} labelled case(s) of each verdict"
            )
        elif model:
            criteria = sorted({*asked, *shown})
            probe = probe_profile(model, prompt or "default", criteria, shown)
            settings = dataclasses.replace(settings, profile=probe, transcript=None)
            unaided, report = report, run_sync(agree(run, settings, num_samples=num_samples))
    digest = hashlib.sha256(Path(labels_path).read_bytes()).hexdigest()
    profile, fitted = align(
        report,
        labels={"path": str(labels_path), "sha256": digest},
        prompts=dict.fromkeys(asked, prompt or "default"),
        exemplars=shown,
        unaided=unaided,
    )
    created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    profile = profile.model_copy(update={"created": created})
    print_fitted(console, fitted)
    if not profile.criteria:
        console.print("[red]nothing could be fitted[/]; no profile written")
        raise SystemExit(1)
    save_profile(profile, out_path)
    console.print(
        f"profile for {escape(profile.judge_model or 'the judge')} written to "
        f"{escape(out_path)}: assay eval ... --judge-profile {escape(out_path)}"
    )
    if json_path:
        figures = [_as_json(found) for found in fitted]
        Path(json_path).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


def _judge_of(criterion: BaseCriterion, override: str | None) -> str | None:
    """The judge model (as ``--judge-model`` takes it) the pool will choose for ``criterion``."""
    choice = choose_judge_model(criterion, override=override, env=os.environ)
    return None if isinstance(choice, str) else judged_model(choice.model)


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_fitted(console: Console, fitted: list[Fitted]) -> None:
    """Per criterion: the threshold, agreement and kappa before and after (cross-validated),
    and how many labels a stable fit needed."""
    table = Table(title=f"judge alignment ({FOLDS}-fold cross-validated)", title_justify="left")
    for column in ("Criterion", "Labels", "Decision", "Threshold", "Before", "After", "Stable"):
        table.add_column(column, justify="left" if column == "Criterion" else "right")
    for found in fitted:
        before, after = found.before, found.after
        table.add_row(
            escape(found.criterion),
            str(before.pairs),
            found.decision or "-",
            _figure(found.threshold),
            f"{_figure(before.rate)} κ{_figure(before.kappa)}",
            f"{_figure(after.rate)} κ{_figure(after.kappa)}",
            str(found.stable_from) if found.stable_from else f">{before.pairs}",
        )
    console.print(table)
    console.print(
        "[dim]Before: the judge as it decides unaided. After: each label decided by a threshold "
        "fitted on the other folds only. Stable: the fewest labels at which thresholds fitted "
        f"on random draws agree within {STABLE_SPREAD} (>N: not stable with the N given; "
        "label more).[/]"
    )
    for found in fitted:
        notes = list(found.notes)
        if found.decision is not None and not helps(found):
            notes.append("not kept in the profile: the fitted rule did no better held out")
        for note in notes:
            console.print(f"[yellow]{escape(found.criterion)}:[/] {escape(note)}")


def _as_json(found: Fitted) -> dict[str, object]:
    def figures(rate: float | None, kappa: float | None, pairs: int) -> dict[str, object]:
        return {"labels": pairs, "agreement": rate, "kappa": kappa}

    return {
        "criterion": found.criterion,
        "decision": found.decision,
        "threshold": found.threshold,
        "before": figures(found.before.rate, found.before.kappa, found.before.pairs),
        "after": figures(found.after.rate, found.after.kappa, found.after.pairs),
        "after_kappa_interval": found.after.kappa_interval,
        "fold_thresholds": list(found.fold_thresholds),
        "stable_from": found.stable_from,
        "notes": list(found.notes),
    }
