"""The ``assay`` command line.

Exit codes: 0 every case passed, 1 a case failed or a configured metric was not evaluated,
2 a usage or input error (bad file, unknown metric, missing trace file), 3 an internal error.

Every command's module is imported when that command runs (:mod:`assay.cli.lazy`), and this one
imports nothing heavy, so ``assay --help`` and ``assay --version`` answer at once.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from assay._internal.collector import results_kept_frozen
from assay.cli.lazy import LazyCommand, LazyGroup
from assay.cli.output import EXIT_FAILED, EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, make_console

if TYPE_CHECKING:
    from assay.errors import InputError

__all__ = ["COMMANDS", "EXIT_FAILED", "EXIT_INPUT", "EXIT_INTERNAL", "EXIT_OK", "cli", "main"]

COMMANDS = {
    "compare": LazyCommand(
        "assay.cli.compare:compare",
        "Compare two runs (run ids or results files): per metric the change in mean score and "
        "pass rate, the cases that regressed or flipped, a bootstrap interval and an exact "
        'McNemar test (or "too few cases to test" when no test could be significant with so '
        "few).",
    ),
    "eval": LazyCommand(
        "assay.cli.eval:eval_command",
        "Score EVALSET files against recorded traces (--traces) or by running an agent "
        "(--agent), and print a results table.",
    ),
    "import": LazyCommand(
        "assay.cli.history:import_command",
        "Import ADK results (.evalset_result.json files, or folders such as "
        ".adk/eval_history) into the run history, one run per file.",
    ),
    "judge": LazyCommand(
        "assay.cli.judge:judge_command",
        "Measure a judge against people's labels (assay judge agree LABELS).",
    ),
    "metrics": LazyCommand(
        "assay.cli.metrics:metrics_command",
        "List every metric assay knows: what it measures, whether it needs a reference, rubrics "
        "or an LLM judge, and its default threshold.",
    ),
    "report": LazyCommand(
        "assay.cli.report:report_command",
        "Write reports of SOURCE: a results file (``assay eval --output``) or a run id.",
    ),
    "receive": LazyCommand(
        "assay.cli.receive:receive_command",
        "Receive OpenTelemetry spans (OTLP/HTTP, POST /v1/traces), score each session when it "
        "ends with the config's criteria, and record it in one long-lived run of the history.",
    ),
    "runs": LazyCommand("assay.cli.history:runs_command", "List recorded runs, newest first."),
    "show": LazyCommand(
        "assay.cli.history:show_command",
        "Print a run (an id, the beginning of one, or ``latest``; or a results file) as "
        "``assay eval`` printed it.",
    ),
    "traces": LazyCommand(
        "assay.cli.traces:traces_command",
        "Read OpenTelemetry span files (OTLP JSON or protobuf, Jaeger JSON; gzipped or not) into "
        "sessions: write them as ADK traces (convert) or as a draft eval set (to-evalset).",
    ),
    "validate": LazyCommand(
        "assay.cli.validate:validate_command",
        "Check eval sets and EvalConfig files, reporting every problem found.",
    ),
    "view": LazyCommand(
        "assay.cli.view:view_command",
        "Serve the run history as pages on this machine: runs, cases, comparisons, judge cards, "
        "and labelling of judged verdicts; a run in progress appears as its cases finish.",
    ),
}
"""Every command, by name: where it lives and its summary (kept equal to its help by a test)."""


def _show_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version`` (the version is read only then: importlib.metadata is slow to import)."""
    if not value or ctx.resilient_parsing:
        return
    from assay._version import __version__

    click.echo(f"assay, version {__version__}", color=ctx.color)
    ctx.exit()


@click.group(
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Show the version and exit.",
)
def cli() -> None:
    """Evaluate LLM agents: ADK-compatible eval sets, criteria and results."""


def _report_input_error(error: InputError) -> None:
    from rich.markup import escape

    console = make_console(stderr=True)
    console.print(f"[bold red]error:[/] {len(error.problems)} problem(s) in the input")
    for problem in error.problems:
        console.print(f"  [red]•[/] {escape(str(problem))}")


def _report_error(exc: Exception) -> int:
    """Say what went wrong (an input error, another error assay reports, or an assay bug: then
    briefly, the full traceback on request), and return the exit code."""
    from rich.markup import escape

    from assay.errors import AssayError, InputError  # imported already when exc is one

    if isinstance(exc, InputError):
        _report_input_error(exc)
        return EXIT_INPUT
    if isinstance(exc, AssayError):
        make_console(stderr=True).print(f"[bold red]error:[/] {escape(str(exc))}")
        return EXIT_INPUT
    if os.environ.get("ASSAY_DEBUG"):
        traceback.print_exc()
    make_console(stderr=True).print(
        f"[bold red]internal error:[/] {escape(type(exc).__name__)}: {escape(str(exc))} "
        "(set ASSAY_DEBUG=1 for the traceback, and please report it)"
    )
    return EXIT_INTERNAL


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: run the CLI, turning assay's errors into messages and exit codes."""
    try:
        with (
            results_kept_frozen()
        ):  # the command's inputs and results: see assay._internal.collector
            cli.main(
                args=list(argv) if argv is not None else None,
                prog_name="assay",
                standalone_mode=False,
            )
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_INPUT)
    except click.exceptions.Abort:
        make_console(stderr=True).print("aborted")
        sys.exit(EXIT_FAILED)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        sys.exit(_report_error(exc))
