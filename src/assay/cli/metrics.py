"""``assay metrics``: every metric assay knows, what it measures and what it needs.

The facts come from the metric registry (:meth:`~assay.metrics.registry.MetricRegistry.catalog`):
each metric's :class:`~assay.metrics.base.MetricInfo`, whether assay scores it yet, and the
threshold it gets when no config file is given (ADK's default criteria). ``--json`` prints the
same as a list of objects with the keys of :data:`JSON_KEYS`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from assay.cli.output import make_console

if TYPE_CHECKING:  # imported where used: `assay metrics --help` imports none of them
    from rich.table import Table

    from assay.metrics.registry import MetricEntry

JSON_KEYS = (
    "name",
    "description",
    "needs_reference",
    "takes_rubrics",
    "needs_judge",
    "source",
    "informational",
    "default_threshold",
    "implemented",
)
"""The keys of each object ``assay metrics --json`` prints, in this order."""

LEGEND = (
    "ADK: computed as google-adk 2.13 computes it. Vertex: ADK sends it to Vertex AI's "
    "evaluation service; assay scores it with any judge after the service's published "
    "definition (Vertex AI itself is opt-in). custom: a function of the config's custom_metrics. "
    "reference: needs the expected invocations of a static conversation. "
    "rubrics: takes rubrics. judge: asks an LLM judge (any: the embedded one by default, or "
    "--judge-model). "
    "default N: the threshold used when no config file is given. "
    "threshold required: the config must give one (a number, or an object with 'threshold'). "
    "informational: reported on every run; takes no threshold, never passes or fails."
)


SOURCE_TAGS = {"adk": "ADK", "vertex": "Vertex", "custom": "custom"}
"""How the table names each :data:`~assay.metrics.base.SOURCES` entry."""


def metric_json(entry: MetricEntry) -> dict[str, Any]:
    """One metric as ``--json`` prints it."""
    info = entry.info
    values: dict[str, Any] = {
        "name": info.name,
        "description": info.description,
        "needs_reference": info.needs_expected,
        "takes_rubrics": info.takes_rubrics,
        "needs_judge": info.needs_judge,
        "source": info.source,
        "informational": info.informational,
        "default_threshold": entry.default_threshold,
        "implemented": entry.implemented,
    }
    return {key: values[key] for key in JSON_KEYS}


def metric_tags(entry: MetricEntry) -> str:
    """Whose definition a metric follows, what it needs and its threshold, in words:
    ``ADK · reference · judge · threshold required``."""
    info = entry.info
    tags = [
        tag
        for tag, flag in (
            ("reference", info.needs_expected),
            ("rubrics", info.takes_rubrics),
            ("judge", info.needs_judge),
        )
        if flag
    ]
    tags.insert(0, SOURCE_TAGS[info.source])
    if info.informational:
        tags.append("informational")
    elif entry.default_threshold is not None:
        tags.append(f"default {entry.default_threshold}")
    else:
        tags.append("threshold required")
    return " · ".join(tags)


def metrics_table(entries: Sequence[MetricEntry], title: str) -> Table:
    """The metrics as a table of two columns, so that a description has room at 80 columns: the
    name (never wrapped) over its tags, and the description, wrapped to what is left."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        title=title,
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        leading=1,
    )
    table.add_column("Metric", no_wrap=True)
    table.add_column("Description", overflow="fold", ratio=1)
    for entry in entries:
        info = entry.info
        table.add_row(
            f"{escape(info.name)}\n  [dim]{escape(metric_tags(entry))}[/]",
            escape(info.description) or "[dim](no description)[/]",
        )
    return table


@click.command("metrics")
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as a JSON list.")
def metrics_command(as_json: bool) -> None:
    """List every metric assay knows: what it measures, whether it needs a reference, rubrics
    or an LLM judge, and its default threshold.

    Every metric google-adk 2.13 knows is scored; each says whose definition it follows (ADK's
    own computation, or Vertex AI's, scored by any judge). A custom metric is a function the
    config names under custom_metrics (see the README). --json prints a JSON list instead, one
    object per metric with the keys name, description, needs_reference, takes_rubrics,
    needs_judge, source (adk, vertex or custom), informational, default_threshold (null:
    none) and implemented.
    """
    from assay.metrics.registry import default_registry

    entries = default_registry().catalog()
    if as_json:
        click.echo(json.dumps([metric_json(entry) for entry in entries], indent=2))
        return
    console = make_console()
    implemented = [entry for entry in entries if entry.implemented]
    planned = [entry for entry in entries if not entry.implemented]
    console.print(metrics_table(implemented, "metrics"))
    if planned:
        console.print()
        console.print(
            metrics_table(planned, "known, not implemented yet (they score NOT_EVALUATED)")
        )
    console.print()
    console.print(f"[dim]{LEGEND}[/]")
