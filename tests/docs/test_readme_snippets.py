"""The README's Python and pytest snippets run as written, from a folder set up as the README
implies: a fresh working directory holding the repository's ``examples/`` (the snippets' paths
are relative to a clone's root) and, for the ADK drop-in, an ADK agent module and its legacy test
file where the snippet names them. Each snippet runs in its own process, as a reader runs it:
a script with ``python``, a test with ``python -m pytest``. The judge is the approving stub over
HTTP on 127.0.0.1 that ``ASSAY_JUDGE_MODEL`` names (the ``judge_env`` fixture), never the
embedded model; the snippets themselves are not changed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from _judge_server import JudgeServer
from _support import EXAMPLE_DIR

README = EXAMPLE_DIR.parent.parent / "README.md"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
_TEST_NAME = re.compile(r"^(?:async )?def (test_\w+)", re.MULTILINE)

HOME_AGENT = '''
from google.adk.agents import BaseAgent
from google.adk.events import Event
from google.genai import types


class HomeAutomation(BaseAgent):
    """Answers every request by turning off the kitchen lights (no model, no tools)."""

    async def _run_async_impl(self, ctx):
        text = "I turned off the kitchen lights."
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            content=types.Content(role="model", parts=[types.Part(text=text)]),
        )


root_agent = HomeAutomation(name="home_automation_agent")
'''
LEGACY_TEST = (
    '[{"query": "Turn off the kitchen lights.", "expected_tool_use": [], '
    '"reference": "I turned off the kitchen lights."}]'
)


@dataclass(frozen=True)
class Snippet:
    index: int
    code: str

    @property
    def tests(self) -> list[str]:
        return _TEST_NAME.findall(self.code)


def snippets() -> list[Snippet]:
    found = _PYTHON_BLOCK.findall(README.read_text(encoding="utf-8"))
    return [Snippet(i, code) for i, code in enumerate(found)]


def reader_folder(root: Path) -> Path:
    """A fresh folder as the README's snippets assume it: the clone's examples, and the ADK
    drop-in's agent module and test file."""
    shutil.copytree(EXAMPLE_DIR.parent, root / "examples")
    package = root / "home_automation_agent"
    package.mkdir()
    (package / "__init__.py").write_text("from . import agent\n")
    (package / "agent.py").write_text(HOME_AGENT)
    (root / "tests" / "fixture").mkdir(parents=True)
    (root / "tests" / "fixture" / "simple_test.test.json").write_text(LEGACY_TEST)
    return root


def run(command: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COLUMNS"))}
    return subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_every_snippet_is_one_this_module_runs() -> None:
    """A new snippet must be added here, with what running it should show."""
    names = sorted(name for snippet in snippets() for name in snippet.tests)
    assert names == sorted(EXPECTED)
    assert sum(1 for snippet in snippets() if not snippet.tests) == 1  # "From Python"


def test_the_from_python_snippet_prints_the_summary_of_the_recorded_run(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    folder = reader_folder(tmp_path)
    [script] = [s for s in snippets() if not s.tests]
    (folder / "snippet.py").write_text(script.code)
    calls = judge_env.count()

    done = run([sys.executable, "snippet.py"], folder)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "passed=5 failed=0 not_evaluated=0"
    assert judge_env.count() > calls  # judged by the stub over HTTP, not the embedded model


EXPECTED = {
    # the example's agent answers half of a two-currency question, on purpose
    "test_travel_agent": (
        "1 failed",
        ["EvaluationFailed", "convert_currency", 'expected tools: convert_currency({"amount"'],
    ),
    "test_home_automation": ("1 passed", []),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_pytest_snippet_runs_as_written_and_fails_only_with_its_own_cause(
    tmp_path: Path, name: str
) -> None:
    folder = reader_folder(tmp_path)
    [snippet] = [s for s in snippets() if name in s.tests]
    (folder / f"test_readme_{snippet.index}.py").write_text(snippet.code)

    done = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], folder)

    summary, shown = EXPECTED[name]
    output = done.stdout + done.stderr
    assert done.returncode == (1 if "failed" in summary else 0), output
    assert summary in done.stdout.splitlines()[-1], output
    for text in shown:
        assert text in output
    for chained in ("no running event loop", "During handling of the above exception"):
        assert chained not in output


def test_pytest_collects_the_example_eval_set_as_the_readme_says(tmp_path: Path) -> None:
    folder = reader_folder(tmp_path)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    agent = ["--assay-agent", "examples/travel/agent.py:travel_agent"]

    done = run([*command, *agent, "examples/travel/travel.evalset.json"], folder)

    assert done.returncode == 1 and "1 failed, 4 passed" in done.stdout, done.stdout
    # one test per eval case, named as the README names them
    assert "FAILED examples/travel/travel.evalset.json::convert_currency" in done.stdout
