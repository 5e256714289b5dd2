"""``assay metrics``: every metric the registry knows, as a table that reads at 80 columns and as
JSON with stable keys."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from _support import RunCli

from assay.cli.metrics import SOURCE_TAGS
from assay.config import CRITERION_TYPES, INFORMATIONAL_METRICS, default_config
from assay.metrics.registry import MetricRegistry, default_registry
from assay.metrics.rouge import ResponseMatchMetric

KEYS = [
    "name",
    "description",
    "needs_reference",
    "takes_rubrics",
    "needs_judge",
    "source",
    "informational",
    "default_threshold",
    "implemented",
]


def listed(run_cli: RunCli) -> list[dict[str, Any]]:
    run = run_cli("metrics", "--json")
    assert run.code == 0, run.output
    assert run.err == ""
    found = json.loads(run.out)
    assert isinstance(found, list)
    return found


def by_name(run_cli: RunCli) -> dict[str, dict[str, Any]]:
    return {metric["name"]: metric for metric in listed(run_cli)}


def table(run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, columns: int) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    run = run_cli("metrics")
    assert run.code == 0, run.output
    return run.out


# --- JSON -------------------------------------------------------------------------------------


def test_json_lists_every_metric_adk_knows_as_implemented(run_cli: RunCli) -> None:
    registry = default_registry()

    metrics = listed(run_cli)

    assert [m["name"] for m in metrics] == registry.names()
    assert set(CRITERION_TYPES) | set(INFORMATIONAL_METRICS) <= {m["name"] for m in metrics}
    assert all(m["implemented"] for m in metrics)
    assert all(list(m) == KEYS for m in metrics)
    assert all(isinstance(m["description"], str) and m["description"] for m in metrics)


def test_json_facts_of_known_metrics(run_cli: RunCli) -> None:
    metrics = by_name(run_cli)

    assert metrics["tool_trajectory_avg_score"] | {"description": ""} == {
        "name": "tool_trajectory_avg_score",
        "description": "",
        "needs_reference": True,
        "takes_rubrics": False,
        "needs_judge": False,
        "source": "adk",
        "informational": False,
        "default_threshold": 1.0,  # ADK's default criteria
        "implemented": True,
    }
    assert metrics["response_match_score"]["default_threshold"] == 0.8
    rubric = metrics["rubric_based_final_response_quality_v1"]
    assert (rubric["takes_rubrics"], rubric["needs_judge"], rubric["needs_reference"]) == (
        True,
        True,
        False,
    )
    assert rubric["default_threshold"] is None  # the config must give one
    tokens = metrics["token_usage_v1"]
    assert (tokens["informational"], tokens["default_threshold"], tokens["needs_judge"]) == (
        True,
        None,
        False,
    )
    assert metrics["final_response_match_v2"]["needs_reference"] is True
    assert metrics["rubric_based_multi_turn_trajectory_quality_v1"]["takes_rubrics"] is True
    vertex = {m for m, facts in metrics.items() if facts["source"] == "vertex"}
    assert vertex == {
        "safety_v1",
        "response_evaluation_score",
        "multi_turn_task_success_v1",
        "multi_turn_trajectory_quality_v1",
        "multi_turn_tool_use_quality_v1",
    }
    assert all(metrics[m]["needs_judge"] for m in vertex)
    assert metrics["response_evaluation_score"]["needs_reference"] is True


def test_json_default_thresholds_are_the_default_configs(run_cli: RunCli) -> None:
    defaults = {name: c.threshold for name, c in default_config().criteria.items()}

    metrics = listed(run_cli)

    assert {m["name"]: m["default_threshold"] for m in metrics if m["default_threshold"]} == (
        defaults
    )


# --- the table --------------------------------------------------------------------------------


def test_the_table_at_80_columns_fits_and_never_breaks_a_metric_name(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = table(run_cli, monkeypatch, 80)
    lines = out.splitlines()
    metrics = listed(run_cli)

    assert max(len(line) for line in lines) <= 80
    starts = [line.split()[0] for line in lines if line.strip()]
    for metric in metrics:
        # Each name whole, at the start of a line of its own row, exactly once.
        assert starts.count(metric["name"]) == 1, metric["name"]
    names = {m["name"] for m in metrics}
    for line in lines:  # no piece of a name (a prefix or the rest of one) starts a line
        first = line.split()[0] if line.strip() else ""
        assert first in names or not any(
            n.startswith(first) or n.endswith(first) for n in names if "_" in first
        ), line


def description_cells(out: str, names: set[str]) -> dict[str, str]:
    """Each metric's Description cell, its wrapped lines joined with spaces."""
    cells: dict[str, list[str]] = {}
    column, current = 0, None
    for line in out.splitlines():
        first = line.split()[0] if line.strip() else ""
        if first == "Metric" and "Description" in line:
            column = line.index("Description")
        elif first in names:
            current = first
            cells[current] = []
        elif line[:1].strip():  # a title or the legend: no table row
            current = None
            continue
        if current is not None and line[column:].strip():
            cells[current].append(line[column:].strip())
    return {name: " ".join(parts) for name, parts in cells.items()}


def test_the_table_wraps_each_description_in_full(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = table(run_cli, monkeypatch, 80)
    metrics = listed(run_cli)

    cells = description_cells(out, {m["name"] for m in metrics})

    assert cells == {m["name"]: m["description"] for m in metrics}
    assert sum(len(line.rstrip()) > 70 for line in out.splitlines()) > 10  # the width is used


def test_the_table_says_what_each_metric_needs_and_its_threshold(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = table(run_cli, monkeypatch, 80).splitlines()

    def tags(name: str) -> str:
        row = next(i for i, line in enumerate(lines) if line.split()[:1] == [name])
        return re.split(r"\s{2,}", lines[row + 1].strip())[0]

    assert tags("tool_trajectory_avg_score") == "ADK · reference · default 1.0"
    assert tags("response_match_score") == "ADK · reference · default 0.8"
    assert tags("rubric_based_final_response_quality_v1") == (
        "ADK · rubrics · judge · threshold required"
    )
    assert tags("token_usage_v1") == "ADK · informational"
    assert tags("safety_v1") == "Vertex · judge · threshold required"
    assert tags("response_evaluation_score") == "Vertex · reference · judge · threshold required"


def test_a_registry_lacking_metrics_lists_them_apart(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = MetricRegistry()
    registry.register("response_match_score", lambda c: ResponseMatchMetric(c))
    monkeypatch.setattr("assay.metrics.registry.default_registry", lambda: registry)

    out = table(run_cli, monkeypatch, 80)

    heading = out.index("known, not implemented yet")
    assert out.index("\nresponse_match_score ") < heading
    assert all(out.index(f"\n{name} ") > heading for name in registry.unimplemented())


def test_a_wide_console_gives_each_description_its_line(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = table(run_cli, monkeypatch, 200)

    assert (
        "Fraction of invocations whose tool calls match the expected ones (EXACT, IN_ORDER" in out
    )


def test_the_readme_lists_every_metric_with_its_source_and_judge() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    table = readme.split("| metric | source | needs | judge |", 1)[1].split("\n\n", 1)[0]
    rows = {
        name: line
        for line in table.splitlines()
        if line.startswith("| `")
        for name in re.findall(r"`([a-z0-9_]+)`", line.split("|")[1])
    }
    for entry in default_registry().catalog():
        info = entry.info
        row = rows[info.name]
        source = row.split("|")[2].strip()
        judge = row.split("|")[4].strip()
        assert source.startswith(SOURCE_TAGS[info.source]), info.name
        assert (judge != "none") == info.needs_judge, info.name
