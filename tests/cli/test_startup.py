"""Start-up: a command's ``--help`` costs what ``assay --help`` does.

``assay --help`` imports no command (tests/cli/test_main.py). A command's own help imports its
module, which declares the options, and nothing its run needs: the runner, the judges' clients,
httpx, rich, pydantic and the result models are imported when the command runs. These tests
run each help in a fresh interpreter and compare what it imported with what ``assay --help``
imported; a module-level import of any of those in a command's module makes them fail.
benchmarks/bench_startup.py measures the time.

A deterministic run (recorded traces, no judged criterion, no ``--view``) is checked the same
way: it imports none of what judges, the web view or people's labels need.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from _support import Example

from assay.cli.judge import SUBCOMMANDS as JUDGE_SUBCOMMANDS
from assay.cli.main import COMMANDS

SHARED = {"assay.cli.options"}
"""Light modules of the CLI that some commands' declarations use."""

HEAVY = (
    "assay.runner",
    "assay.llm",
    "assay.results",
    "assay.report",
    "assay.history",
    "assay.evalset",
    "assay.config",
    "assay.errors",
    "httpx",
    "rich",
    "pydantic",
    "numpy",
    "yaml",
    "jinja2",
)
"""What a help must not import (named for the failure message; any module outside the standard
library fails the test too)."""

NOT_CHECKED = {("judge", "align")}
"""``assay judge align --help`` lists its ``--prompt`` choices, read off the metrics'
declarations, so it imports them (``assay judge --help`` does not)."""


def helps() -> list[tuple[str, ...]]:
    """Every command and subcommand, as the words before ``--help``."""
    found: list[tuple[str, ...]] = []
    for name, lazy in sorted(COMMANDS.items()):
        found.append((name,))
        command = lazy.load()
        if isinstance(command, click.Group):
            subcommands = command.list_commands(click.Context(command))
            found.extend((name, sub) for sub in subcommands if (name, sub) not in NOT_CHECKED)
    return found


def modules_after_help(*words: str) -> set[str]:
    """The modules a fresh interpreter holds once ``assay WORDS --help`` has printed."""
    script = (
        "import json, sys\n"
        "from assay.cli.main import main\n"
        "try:\n"
        f"    main([*{list(words)!r}, '--help'])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        "sys.stderr.write(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = json.loads(done.stderr)
    assert isinstance(loaded, list)
    return set(loaded)


def heavy_in(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if any(m == h or m.startswith(f"{h}.") for h in HEAVY))


@pytest.fixture(scope="module")
def group_help() -> set[str]:
    """What ``assay --help`` imports."""
    return modules_after_help()


def unexpected(loaded: set[str], baseline: set[str], own: str) -> list[str]:
    """Modules past ``baseline`` other than ``own`` (the command's module), the shared light
    ones and the standard library's."""
    allowed = {own, *SHARED}
    return sorted(
        module
        for module in loaded - baseline
        if module not in allowed and module.split(".")[0] not in sys.stdlib_module_names
    )


@pytest.mark.parametrize("words", helps(), ids=" ".join)
def test_a_commands_help_imports_its_module_and_nothing_its_run_needs(
    words: tuple[str, ...], group_help: set[str]
) -> None:
    own = COMMANDS[words[0]].target.partition(":")[0]

    loaded = modules_after_help(*words)

    assert own in loaded
    assert heavy_in(loaded) == []
    assert unexpected(loaded, group_help, own) == []


def test_eval_help_imports_no_runner_judge_client_http_or_result_model(
    group_help: set[str],
) -> None:
    loaded = modules_after_help("eval")

    named = ["assay.runner.run", "assay.llm.client", "httpx", "assay.results.model", "rich"]
    assert [m for m in named if m in loaded] == []
    assert unexpected(loaded, group_help, "assay.cli.eval") == []


def test_every_command_is_checked() -> None:
    checked = helps()

    assert {words[0] for words in checked} == set(COMMANDS)
    assert ("eval",) in checked
    assert ("judge", "agree") in checked
    assert ("traces", "convert") in checked


@pytest.mark.parametrize("name", sorted(JUDGE_SUBCOMMANDS))
def test_each_judge_subcommand_summary_shortens_as_its_own_help_does(name: str) -> None:
    real = JUDGE_SUBCOMMANDS[name].load()
    stand_in = click.Command(name, help=JUDGE_SUBCOMMANDS[name].summary)

    assert real.name == name
    for limit in range(10, 400, 3):
        assert stand_in.get_short_help_str(limit) == real.get_short_help_str(limit), limit


NOT_IN_A_DETERMINISTIC_RUN = (
    "numpy",
    "httpx",
    "yaml",
    "webbrowser",
    "getpass",
    "assay.agreement",
    "assay.view",
    "assay.llm.backends.openai_compat",
    "jinja2",
    "starlette",
    "uvicorn",
    "scipy",
    "sklearn",
)
"""What ``assay eval`` on recorded traces with deterministic criteria and JSON files never uses:
the judges' HTTP client, numpy (people's labels' statistics, rouge-score's aggregators), YAML,
the browser and the web view, and what all of nltk would bring."""


def modules_after_run(argv: list[str], folder: Path) -> tuple[int, set[str], str]:
    """The exit code, the modules a fresh interpreter holds once ``assay ARGV`` has run in
    ``folder`` (written to a file: the run prints on both streams), and what it printed."""
    listing = folder / "modules.json"
    script = (
        "import json, pathlib, sys\n"
        "from assay.cli.main import main\n"
        "code = None\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        f"pathlib.Path({str(listing)!r}).write_text(json.dumps([code, sorted(sys.modules)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    code, loaded = json.loads(listing.read_text(encoding="utf-8"))
    return code, set(loaded), done.stdout + done.stderr


def test_a_deterministic_eval_run_imports_no_judge_client_view_numpy_or_yaml(
    tmp_path: Path, example: Example
) -> None:
    eval_set = json.loads(example.evalset.read_text(encoding="utf-8"))
    eval_set["eval_cases"] = [case for case in eval_set["eval_cases"] if "conversation" in case]
    evalset_path = tmp_path / "travel.evalset.json"
    evalset_path.write_text(json.dumps(eval_set), encoding="utf-8")
    trajectory = {"threshold": 1.0, "match_type": "IN_ORDER"}
    config = {"criteria": {"tool_trajectory_avg_score": trajectory, "response_match_score": 0.6}}
    config_path = tmp_path / "test_config.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    results = tmp_path / "results.json"
    argv = [
        *("eval", str(evalset_path), "--traces", str(example.traces)),
        *("--config", str(config_path), "--output", str(results)),
        *("--no-history", "--no-progress"),
    ]

    code, loaded, output = modules_after_run(argv, tmp_path)

    assert code == 0, output
    scored = json.loads(results.read_text(encoding="utf-8"))["eval_case_results"]
    assert len(scored) == len(eval_set["eval_cases"]) == 4
    never = NOT_IN_A_DETERMINISTIC_RUN
    assert sorted(m for m in loaded if any(m == n or m.startswith(f"{n}.") for n in never)) == []
