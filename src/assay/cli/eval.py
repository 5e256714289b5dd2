"""``assay eval EVALSET...``: score eval sets against recorded traces or by running an agent.

Exit codes: 0 every case passed, 1 a case failed or a configured metric was not evaluated,
2 a usage or input error (bad file, unknown metric, missing trace file), 3 an internal error.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from assay.cli.options import max_cases_option
from assay.cli.output import EXIT_FAILED, EXIT_OK, make_console

if TYPE_CHECKING:  # imported where used: `assay eval --help` imports none of them
    from rich.console import Console

    from assay.report.publish import Outputs
    from assay.runner.executors.base import Executor
    from assay.runner.options import RunOptions
    from assay.runner.run import EvalInputs


def _check_output_folders(outputs: Sequence[tuple[str, str | None]]) -> None:
    """Every output's folder exists: said before a long run, not after it."""
    for option, path in outputs:
        if path and not Path(path).parent.is_dir():
            raise click.BadParameter(
                f"folder '{Path(path).parent}' does not exist", param_hint=f"'{option}'"
            )


def _invoked_as() -> str:
    """How the user ran ``assay`` (``.venv/bin/assay``), so a command we print works as typed;
    plain ``assay`` when it was run some other way."""
    program = sys.argv[0] if sys.argv else ""
    return program if Path(program).name == "assay" else "assay"


@click.command("eval")
@click.argument("eval_sets", nargs=-1, metavar="[EVALSET]...")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="EvalConfig JSON/YAML (default: test_config.json beside each eval set, else ADK's defaults).",
)
@click.option(
    "--traces",
    "traces_paths",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Recorded actual invocations: {eval_id: [Invocation, ...]}, an ADK "
    ".evalset_result.json, or OpenTelemetry spans (OTLP/JSON lines or document, OTLP protobuf, "
    "Jaeger JSON; gzip too), each session scored as the case its case key names. With no "
    "EVALSET, span files' sessions are scored as cases of their own (reference-free criteria "
    "only; docs/traces.md). Repeatable.",
)
@click.option(
    "--trace-case-key",
    "trace_case_key",
    metavar="ATTR",
    help="With span files: the root span attribute whose value is a session's eval id "
    "[default: gen_ai.conversation.id; a session without it: its session id].",
)
@click.option(
    "--sample",
    type=click.FloatRange(min=0, max=1, min_open=True),
    metavar="RATE",
    help="With span files: score this share of the sessions (0 < RATE <= 1), chosen by a hash "
    "of the case key, so a rerun scores the same ones.",
)
@click.option(
    "--trace-filter",
    "trace_filters",
    multiple=True,
    metavar="ATTR=VALUE",
    help="With span files: score only the sessions whose root span attribute ATTR is VALUE "
    "(repeatable: all must hold).",
)
@click.option(
    "--agent",
    "agent_spec",
    help="Run this agent instead of reading traces: module:attr or path/to/file.py:attr "
    "(a function (message, session) or an agent object), an ADK agent folder or module "
    "(root_agent), http(s)://URL (docs/agents.md), or openai:MODEL / ollama:MODEL.",
)
@click.option(
    "--num-runs",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="With --agent: runs per case, each scored on its own.",
)
@click.option(
    "--inference-concurrency",
    default=4,
    show_default=True,
    type=click.IntRange(min=1),
    help="With --agent: cases run through the agent at once.",
)
@click.option(
    "--turn-timeout",
    default=300.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="With --agent: seconds one agent turn may take before the case is NOT_EVALUATED.",
)
@click.option(
    "--agent-attempts",
    default=2,
    show_default=True,
    type=click.IntRange(min=1),
    help="With --agent: attempts per conversation; one the agent fails (raises, hangs, answers "
    "nonsense) is run again from a fresh session after a backoff, then NOT_EVALUATED.",
)
@click.option(
    "--mock-tools",
    is_flag=True,
    help="With --agent: answer the agent's tool calls from the eval case's recorded tool "
    "responses (same name and arguments).",
)
@click.option(
    "--save-traces",
    "save_traces_path",
    type=click.Path(dir_okay=False, writable=True),
    help="With --agent: write the recorded invocations as a traces file (what --traces reads).",
)
@click.option(
    "--output",
    "output_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Write results as ADK EvalSetResult JSON (a list for several eval sets).",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Write a self-contained HTML report (works offline).",
)
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Write JUnit XML: one testcase per eval case, for CI test views.",
)
@click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Write a short Markdown summary (for a pull-request comment).",
)
@click.option(
    "--export-verdicts",
    "export_url",
    metavar="URL",
    help="Send each verdict as an OpenTelemetry gen_ai.evaluation.result event to URL/v1/logs "
    "(OTLP/HTTP; headers: OTEL_EXPORTER_OTLP_HEADERS), about its session's root span.",
)
@click.option(
    "--progress/--no-progress",
    "show_progress",
    default=True,
    show_default=True,
    help="Show progress on stderr: a live bar on a terminal, a line per finished case elsewhere.",
)
@click.option(
    "--print-detailed-results",
    is_flag=True,
    help="Also print a per-invocation table for every case listed.",
)
@max_cases_option
@click.option(
    "--concurrency",
    default=8,
    show_default=True,
    type=click.IntRange(min=1),
    help="Cases scored at once.",
)
@click.option(
    "--judge-model",
    help="LLM judge for every judged metric: openai:MODEL, ollama:MODEL, litellm:MODEL, "
    "gemini-2.5-flash, local: (embedded), local:FILE.gguf, scripted:FILE. "
    "Default: the criterion's judge_model, else gemini-2.5-flash with Gemini credentials, "
    "else the embedded local judge. Env: ASSAY_JUDGE_MODEL.",
)
@click.option(
    "--judge-concurrency",
    default=8,
    show_default=True,
    type=click.IntRange(min=1),
    help="Judge calls in flight at once, per judge server (per model on OpenAI's and Gemini's "
    "APIs): the ceiling, lowered on 429s and rising latency and raised again as the server keeps "
    "up.",
)
@click.option(
    "--judge-concurrency-fixed",
    is_flag=True,
    help="Keep judge calls in flight at --judge-concurrency instead of adapting to the server.",
)
@click.option(
    "--judge-timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds one judge call may take before it is retried "
    "[default: 120; 600 for the embedded local judge].",
)
@click.option(
    "--judge-attempts",
    default=4,
    show_default=True,
    type=click.IntRange(min=1),
    help="Attempts per judge call (429s, 5xx, timeouts and dropped connections are retried "
    "with backoff).",
)
@click.option(
    "--judge-profile",
    "profile_path",
    type=click.Path(dir_okay=False),
    help="A judge profile from assay judge align: each criterion it covers is decided by the "
    "threshold fitted for its judge on people's labels (only where that judge scores it). "
    "Default: the embedded judge's calibration shipped with assay, which applies to it alone; "
    "'none' for no profile. Reports show the judge's own verdict beside each decided one.",
)
@click.option(
    "--early-stop-votes",
    is_flag=True,
    help="Stop asking an invocation's judge samples once the majority vote is decided (the "
    "verdict is the same; the notes record the samples taken; ADK records every sample).",
)
@click.option(
    "--max-cost",
    "max_cost",
    type=click.FloatRange(min=0),
    metavar="USD",
    help="Start no judge call once the run's judges have cost this much (prices: the config's "
    "'prices', then assay's table, then LiteLLM's); the verdicts left are NOT_EVALUATED with "
    "the reason, and everything finished is kept.",
)
@click.option(
    "--judge-batch",
    is_flag=True,
    help="Send judge calls through the provider's batch API (OpenAI-compatible servers with "
    "/v1/files and /v1/batches): about half the price, answers within 24 h. Each batch is "
    "recorded in the run history, so a killed run resumes by polling it. The simulated user "
    "and judges without a batch API call one request at a time.",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Call the judge even when .assay/cache.sqlite holds the same request's response.",
)
@click.option(
    "--history/--no-history",
    default=True,
    show_default=True,
    help="Record the run and each case result as it finishes in the run history "
    "(`assay runs`, `assay show`).",
)
@click.option(
    "--history-file",
    type=click.Path(dir_okay=False),
    help="The run history (default: $ASSAY_HISTORY, else history.sqlite beside the cache).",
)
@click.option(
    "--view",
    is_flag=True,
    help="Watch the run live in `assay view` (served on 127.0.0.1; its URL is printed, and "
    "opened where there is a display); on a terminal it goes on serving after the run until "
    "Ctrl-C. Needs the run history and the view extra (docs/view.md).",
)
@click.option(
    "--view-port",
    default=0,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="With --view: the port to serve on (0: any free port).",
)
@click.option(
    "--resume",
    metavar="RUN",
    help="Continue a recorded run (its id, or latest) with the same eval sets and options: "
    "its finished cases are kept, neither the agent nor the judge is called for them.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where cases run: in this process, or as tasks on a Ray cluster (docs/ray.md; "
    "pip install 'assay[ray]'), where the concurrency limits hold for the whole cluster.",
)
@click.option(
    "--workers",
    default="auto",
    show_default=True,
    metavar="N|auto",
    help="Processes that score a deterministic run from --traces (Linux); auto: one per core, "
    "up to 8, from 2,000 cases. A run with judged metrics or an agent runs in one.",
)
@click.option(
    "--ray-address",
    metavar="ADDR",
    help="With --executor ray: the cluster to join (HOST:PORT, ray://HOST:PORT or auto); "
    "default $RAY_ADDRESS, else a local cluster started for the run.",
)
def eval_command(eval_sets: tuple[str, ...], **params: Any) -> None:
    """Score EVALSET files against recorded traces (--traces) or by running an agent (--agent),
    and print a results table. With span files as --traces and no EVALSET, score each session
    on the config's reference-free criteria."""
    from rich.markup import escape

    from assay.cli.diagnoses import check_sources
    from assay.cli.eval_shown import Shown
    from assay.cli.eval_view import viewing
    from assay.report.publish import OutputError, Table, publish
    from assay.runner.run import run_eval_sets

    check_sources(eval_sets, params["agent_spec"], params["traces_paths"])  # one of the two
    inputs = _inputs(params)
    options = _options(params)
    console = make_console()
    options = _telling(options, console)
    with viewing(params, console) as view:  # --view: the run watched in `assay view`
        shown = Shown(console, params["show_progress"], options, params["history_file"])
        if options.judge_batch:  # its batches shown with the run's progress
            from dataclasses import replace

            options = replace(options, judge_batch_progress=shown.batches)
        with shown.saving_traces(params["save_traces_path"]):
            outcome = run_eval_sets(eval_sets, inputs, options, view.hooks(shown.hooks()))
            shown.save_kept(outcome.kept)
        if path := params["save_traces_path"]:
            console.print(f"traces written to {escape(path)}")
        outputs = _outputs(params)
        try:
            published = publish(
                console,
                outcome.results,
                outputs,
                table=Table(params["print_detailed_results"], params["max_cases"]),
                after_table=lambda: shown.stopped.report(console),
                spans=outcome.traces.sessions if outcome.traces else None,
                err=make_console(stderr=True),
            )
        except OutputError as exc:
            raise click.FileError(str(exc.path), hint=exc.reason) from None
        if outcome.recorded:
            console.print(f"[dim]recorded as run {outcome.run_id} (assay show {outcome.run_id})[/]")
        source = outcome.run_id if outcome.recorded else outputs.results
        if source and not outputs.html:
            command = f"{_invoked_as()} report {source} --html report.html"
            console.print(f"HTML report: {escape(command)}")
        if published.unevaluated:
            console.print(
                f"[yellow]{published.unevaluated} metric(s) in passing cases were not evaluated "
                "(see why in the table); the run does not count as passed[/]"
            )
        sys.exit(EXIT_OK if published.clean else EXIT_FAILED)


def _outputs(params: dict[str, Any]) -> Outputs:
    """Where the results go (``--output``, the reports, ``--export-verdicts``)."""
    from assay.report.publish import Outputs

    def path(option: str) -> Path | None:
        return Path(params[option]) if params[option] else None

    return Outputs(
        results=path("output_path"),
        html=path("html_path"),
        junit=path("junit_path"),
        markdown=path("markdown_path"),
        export_url=params["export_url"] or None,
    )


def _inputs(params: dict[str, Any]) -> EvalInputs:
    """What the run reads besides its eval sets; the output folders checked first (a usage
    error)."""
    from assay.runner.run import EvalInputs

    agent_spec = params["agent_spec"]
    traces_paths = params["traces_paths"]
    if params["save_traces_path"] and not agent_spec:
        raise click.BadParameter("needs --agent", param_hint="'--save-traces'")
    if params["judge_batch"] and params["executor"] == "ray":
        raise click.BadParameter(  # batches live in the driver's judges; Ray workers judge
            "cannot be used with --executor ray: each worker would send and wait on batches of "
            "its own, which no rerun could resume; use --judge-batch with --executor local, or "
            "--executor ray without --judge-batch",
            param_hint="'--judge-batch'",
        )
    if params["max_cost"] is not None and params["executor"] == "ray":
        raise click.BadParameter(  # each Ray worker's judges would count only their own spending
            "cannot be used with --executor ray yet: the cap is counted by one process's judges, "
            "and each worker would hold a cap of its own; use --max-cost with --executor local",
            param_hint="'--max-cost'",
        )
    params["workers"] = _workers(params["workers"])
    if params["workers"] not in (None, 1) and params["executor"] == "ray":
        raise click.BadParameter(  # Ray has workers of its own
            "cannot be used with --executor ray: the cluster's workers score the cases; use "
            "--workers with --executor local",
            param_hint="'--workers'",
        )
    if params["resume"] is not None and not params["history"]:
        raise click.BadParameter("cannot be used with --no-history", param_hint="'--resume'")
    outputs = (
        ("--output", params["output_path"]),
        ("--save-traces", params["save_traces_path"]),
        ("--html", params["html_path"]),
        ("--junit", params["junit_path"]),
        ("--markdown", params["markdown_path"]),
    )
    _check_output_folders(outputs)
    return EvalInputs(
        params["config_path"],
        traces_paths,
        agent_spec,
        case_key=params["trace_case_key"] or None,
        sample=params["sample"],
        trace_filters=_trace_filters(params["trace_filters"]),
    )


def _telling(options: RunOptions, console: Console) -> RunOptions:
    """``options`` whose worker processes say on ``console`` how the run is scored."""
    from dataclasses import replace

    from rich.markup import escape

    from assay.runner.executors.processes import ProcessExecutor

    if not isinstance(options.executor, ProcessExecutor):
        return options

    def told(line: str) -> None:
        console.print(f"[dim]{escape(line)}[/]")

    return replace(options, executor=replace(options.executor, told=told))


def _workers(given: str) -> int | None:
    """``--workers``: a number of processes, or None for ``auto``."""
    if given.strip().lower() == "auto":
        return None
    try:
        number = int(given)
    except ValueError:
        number = 0
    if not 1 <= number <= 512:
        raise click.BadParameter(
            f"expected auto or a number from 1 to 512; got {given!r}", param_hint="'--workers'"
        )
    return number


def _trace_filters(given: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``--trace-filter ATTR=VALUE`` options as pairs (a usage error without ``=``)."""
    pairs = []
    for raw in given:
        attribute, equals, value = raw.partition("=")
        if not equals or not attribute:
            raise click.BadParameter(
                f"expected ATTR=VALUE; got {raw!r}", param_hint="'--trace-filter'"
            )
        pairs.append((attribute, value))
    return tuple(pairs)


def _options(params: dict[str, Any]) -> RunOptions:
    """The run's options, from the command's."""
    from assay.runner.options import RunOptions

    executor: Executor | None = None
    if params["executor"] == "ray":
        from assay.runner.executors.ray import RayExecutor

        executor = RayExecutor(address=params["ray_address"])
    elif params["workers"] != 1:
        from assay.runner.executors.processes import ProcessExecutor

        executor = ProcessExecutor(params["workers"])
    history: bool | str = params["history"]
    if history and params["history_file"]:
        history = params["history_file"]
    return RunOptions(
        concurrency=params["concurrency"],
        judge_model=params["judge_model"] or None,
        judge_concurrency=params["judge_concurrency"],
        judge_concurrency_fixed=params["judge_concurrency_fixed"],
        judge_timeout_s=params["judge_timeout"],
        judge_attempts=params["judge_attempts"],
        cache=not params["no_cache"],
        judge_profile=params["profile_path"],
        num_runs=params["num_runs"],
        inference_concurrency=params["inference_concurrency"],
        turn_timeout_s=params["turn_timeout"],
        agent_attempts=params["agent_attempts"],
        mock_tools=params["mock_tools"],
        progress=False,  # the command shows its own (Shown.watch)
        history=history if history else False,
        resume=params["resume"],
        executor=executor,
        judge_batch=params["judge_batch"],
        early_stop_votes=params["early_stop_votes"],
        max_cost_usd=params["max_cost"],
    )
