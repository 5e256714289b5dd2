"""One-line diagnoses for ``assay eval`` inputs that do not fit together: what is wrong and what
to do (exit 2 through :class:`~assay.errors.AssayError`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from assay.errors import AssayError
from assay.results.trace_coverage import traces_note
from assay.results.traces import Traces

if TYPE_CHECKING:
    from assay.runner.evaluate import EvalSetJob

_PLACEHOLDER = "path/to/your_agent"


def _defines_root_agent(source: Path) -> bool:
    try:
        return "root_agent" in source.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _agent_folder_near(eval_set: str) -> str | None:
    """The ADK agent folder an eval set lives in (ADK keeps eval sets in or below the agent's
    folder): the nearest folder above the file, two levels at most, whose ``agent.py`` names
    ``root_agent`` (read as text: nothing is imported)."""
    folder = Path(eval_set).parent
    for candidate in (folder, folder.parent):
        if _defines_root_agent(candidate / "agent.py"):
            return str(candidate)
    return None


def no_agent_nor_traces(eval_sets: Sequence[str]) -> AssayError:
    """``assay eval EVALSET`` with neither ``--agent`` nor ``--traces``: say that the eval set
    needs an agent to run (ADK's ``adk eval AGENT_DIR``) or recorded runs, with a command line."""
    first = eval_sets[0] if eval_sets else "EVALSET"
    agent = _agent_folder_near(first) or _PLACEHOLDER
    return AssayError(
        f"nothing to score {first} with: give --agent with your agent (its ADK folder or module "
        "exposing root_agent, as `adk eval AGENT_DIR` takes it, or file.py:function, "
        "http(s)://URL, openai:MODEL) to run it over the cases, or --traces FILE with recorded "
        f"runs (written by --save-traces); e.g. assay eval {first} --agent {agent}"
    )


def both_agent_and_traces() -> AssayError:
    """``--agent`` and ``--traces`` together."""
    return AssayError(
        "give --agent or --traces, not both: --agent runs the agent and scores its answers, "
        "--traces scores answers recorded before"
    )


def check_sources(
    eval_sets: Sequence[str], agent_spec: str | None, traces_paths: Sequence[str]
) -> None:
    """Exactly one of ``--agent`` and ``--traces``; else an :class:`AssayError` saying what to
    give."""
    if agent_spec and traces_paths:
        raise both_agent_and_traces()
    if not agent_spec and not traces_paths:
        raise no_agent_nor_traces(eval_sets)
    if not eval_sets and agent_spec:
        raise AssayError(
            "--agent needs EVALSET (the cases to run the agent over); with no eval set, give "
            "--traces with span files: each session is scored as a case of its own"
        )


def warn_of_missing_traces(
    console: Console, traces_paths: Sequence[str], traces: Traces, jobs: Sequence[EvalSetJob]
) -> None:
    """With ``--traces``: a warning line when they lack some cases of the eval sets; an
    :class:`AssayError` when they lack every one (nothing could be scored)."""
    if not traces_paths:
        return
    note = traces_note(traces, [job.loaded.eval_set for job in jobs])
    if note is not None:
        console.print(f"[yellow]warning:[/] {escape(note)}")
