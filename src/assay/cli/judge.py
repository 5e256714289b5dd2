"""``assay judge agree LABELS``: how far a judge agrees with people's labels on a recorded run,
recorded as judge cards in the run history; ``assay judge cards``: those cards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from assay.cli.lazy import LazyCommand, LazyGroup
from assay.cli.output import make_console

if TYPE_CHECKING:  # imported where used: `assay judge agree --help` imports none of them
    from rich.console import Console

    from assay.agreement.agree import AgreeReport
    from assay.agreement.labels import LabelledRun
    from assay.llm.profile import JudgeProfile

_HISTORY_FILE_HELP = (
    "The run history (default: $ASSAY_HISTORY, else history.sqlite beside the cache)."
)


SUBCOMMANDS = {
    "align": LazyCommand(
        "assay.cli.judge_align:align_command",
        "Fit, per criterion of LABELS, the threshold on the judge's probability of the positive "
        "label that agrees best with people, measured before and after by cross-validation (an "
        "aligned judge is never scored on the labels it was fitted on), and write the profile.",
    ),
}
"""The subcommands in modules of their own (``align``'s ``--prompt`` choices are read off the
metrics' declarations), by name: where each lives and its summary."""


@click.group("judge", cls=LazyGroup, lazy_commands=SUBCOMMANDS)
def judge_command() -> None:
    """Measure a judge against people's labels (assay judge agree LABELS).

    Each measurement is kept as a judge card in the run history (assay judge cards lists them);
    assay eval shows the newest matching card beside each judged metric."""


@judge_command.command("agree")
@click.argument("labels_path", metavar="LABELS", type=click.Path(dir_okay=False))
@click.option("--judge-model", default=None, help="The judge to measure (default: as assay eval).")
@click.option(
    "--num-samples",
    type=click.IntRange(min=1),
    default=None,
    help="Judge samples per unit (default: each criterion's num_samples).",
)
@click.option("--no-cache", is_flag=True, help="Ask the judge even when the cache has answered.")
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False),
    help="Also write every figure and every unit here.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Also write a self-contained HTML page: the figures, the confusion tables and every "
    "disagreement, worst first.",
)
@click.option(
    "--no-record",
    is_flag=True,
    help="Do not record judge cards in the run history (assay eval shows the newest matching "
    "card beside each judged metric).",
)
@click.option("--history-file", type=click.Path(dir_okay=False), help=_HISTORY_FILE_HELP)
@click.option(
    "--judge-profile",
    "profile_path",
    type=click.Path(dir_okay=False),
    help="Measure the judge as a judge profile (assay judge align) decides it, as assay eval "
    "would (default: the embedded judge's calibration shipped with assay; 'none' for the judge "
    "unaided).",
)
def agree_command(
    labels_path: str,
    judge_model: str | None,
    num_samples: int | None,
    no_cache: bool,
    json_path: str | None,
    html_path: str | None,
    no_record: bool,
    history_file: str | None,
    profile_path: str | None,
) -> None:
    """Score the labelled units of LABELS' recorded run with the judge, and print per criterion
    the agreement with people, Cohen's kappa with its 95% interval, both positive rates, the
    confusion table and the disagreements, worst first. Each criterion measured is recorded as a
    judge card in the run history."""  # fmt: skip
    from rich.markup import escape

    from assay._internal.aio import run_sync
    from assay.agreement.agree import agree
    from assay.agreement.labels import load_labels
    from assay.agreement.render import print_agreement, write_agreement_html
    from assay.cli.judge_check import check_labelled_judges
    from assay.llm.profile import resolve_profile
    from assay.runner.evaluate import JudgeSettings

    console = make_console()
    for option, output in (("--json", json_path), ("--html", html_path)):
        if output and not Path(output).parent.is_dir():
            raise click.BadParameter(
                f"folder '{Path(output).parent}' does not exist", param_hint=f"'{option}'"
            )
    run = load_labels(labels_path)
    check_labelled_judges(run, override=judge_model or None)  # exit 2 before any call
    for warning in run.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    profile = resolve_profile(profile_path)
    settings = JudgeSettings(model=judge_model or None, cache=not no_cache, profile=profile)
    report = run_sync(agree(run, settings, num_samples=num_samples))
    print_agreement(console, report)
    if json_path:
        Path(json_path).write_text(json.dumps(report.as_json(), indent=2) + "\n", encoding="utf-8")
        console.print(f"figures written to {escape(json_path)}")
    if html_path:
        try:
            write_agreement_html(Path(html_path), report, labels=str(run.path))
        except OSError as exc:
            raise click.FileError(html_path, hint=exc.strerror or str(exc)) from None
        console.print(f"HTML page written to {escape(html_path)}")
    if not no_record:
        _record_cards(console, report, run, settings.model, num_samples, profile, history_file)


def _record_cards(
    console: Console,
    report: AgreeReport,
    run: LabelledRun,
    judge_model: str | None,
    num_samples: int | None,
    profile: JudgeProfile | None,
    history_file: str | None,
) -> None:
    """Record the criteria measured as judge cards in the run history, and say so (a history
    that cannot be written is a warning: the figures are printed already)."""
    from rich.markup import escape

    from assay.agreement.cards import cards_from, judge_models, record_cards
    from assay.history.records import HistoryError, default_history_path
    from assay.history.store import HistoryStore

    models = judge_models(report, run, judge_model)
    cards, skipped = cards_from(
        report,
        run,
        models,
        num_samples=num_samples,
        profile_for=profile.entry_for if profile else None,
    )
    for why in skipped:
        console.print(f"[yellow]warning:[/] {escape(why)}")
    if not cards:
        return
    path = Path(history_file) if history_file else default_history_path()
    try:
        with HistoryStore(path) as store:
            record_cards(store, cards)
    except HistoryError as exc:
        console.print(f"[yellow]warning:[/] {escape(str(exc))}; no judge card recorded")
        return
    names = ", ".join(f"{card.criterion} ({card.prompt_version})" for card in cards)
    console.print(f"judge cards recorded in {escape(str(path))}: {escape(names)}")


@judge_command.command("cards")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print the cards as JSON.")
@click.option("--history-file", type=click.Path(dir_okay=False), help=_HISTORY_FILE_HELP)
def cards_command(limit: int, as_json: bool, history_file: str | None) -> None:
    """List the judge cards (assay judge agree's measurements), newest first."""
    from rich.markup import escape

    from assay.agreement.cards import list_cards
    from assay.agreement.render import cards_table
    from assay.history.records import default_history_path
    from assay.history.store import HistoryStore

    console = make_console()
    path = Path(history_file) if history_file else default_history_path()
    cards = []
    if path.is_file():
        with HistoryStore(path) as store:
            cards = list_cards(store, limit)
    if as_json:
        click.echo(json.dumps([card.model_dump(mode="json") for card in cards], indent=2))
    elif cards:
        console.print(cards_table(cards))
    else:
        console.print(
            f"no judge cards in {escape(str(path))} (assay judge agree LABELS makes them)"
        )
