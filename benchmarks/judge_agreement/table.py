"""The README's table of judge agreement, made from ``assay judge agree --json`` outputs.

::

    .venv/bin/assay judge agree benchmarks/judge_agreement/labelled/test.labels.yaml \\
        --judge-model local: --no-record --json unaided.json
    .venv/bin/assay judge agree benchmarks/judge_agreement/labelled/test.labels.yaml \\
        --judge-model local: --judge-profile none --no-record --json aligned.json
    .venv/bin/python benchmarks/judge_agreement/table.py unaided.json aligned.json \\
        --names unaided,aligned --readme README.md

Each ``--json`` file becomes a column group (agreement, kappa with its 95% interval); with
``--readme`` the table replaces what lies between the README's ``judge-agreement`` markers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

START = "<!-- judge-agreement:start -->"
END = "<!-- judge-agreement:end -->"


def _cell(figures: dict[str, Any]) -> str:
    rate = figures.get("rate")
    kappa = figures.get("kappa")
    interval = figures.get("kappa_interval")
    shown = "-" if rate is None else f"{rate:.0%}"
    kappa_text = "-" if kappa is None else f"{kappa:.2f}"
    if interval:
        kappa_text += f" [{interval[0]:+.2f}, {interval[1]:+.2f}]"
    return f"{shown} | {kappa_text}"


def table(reports: list[dict[str, Any]], names: list[str]) -> str:
    """A markdown table: per criterion and overall, labels then each report's figures."""
    criteria = list(dict.fromkeys(name for report in reports for name in report["criteria"]))
    head = "| criterion | labels | " + " | ".join(
        f"{name}: agreement | {name}: kappa [95%]" for name in names
    )
    rule = "|---|---:|" + "---:|---|" * len(names)
    rows = [head + " |", rule]
    for criterion in [*criteria, "overall"]:
        cells = []
        labels = ""
        for report in reports:
            figures = (
                report["overall"] if criterion == "overall" else report["criteria"].get(criterion)
            )
            if figures is None:
                cells.append("- | -")
                continue
            labels = str(figures["pairs"])
            cells.append(_cell(figures))
        shown = f"**{criterion}**" if criterion == "overall" else f"`{criterion}`"
        rows.append(f"| {shown} | {labels} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def replace_between_markers(text: str, inner: str) -> str:
    """``text`` with what lies between :data:`START` and :data:`END` replaced by ``inner``."""
    start = text.index(START) + len(START)
    end = text.index(END)
    return text[:start] + "\n" + inner + "\n" + text[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path, help="assay judge agree --json files")
    parser.add_argument("--names", help="a column name per report, comma-separated")
    parser.add_argument("--readme", type=Path, help="write the table between its markers")
    args = parser.parse_args(argv)
    reports = [json.loads(path.read_text(encoding="utf-8")) for path in args.reports]
    names = args.names.split(",") if args.names else [path.stem for path in args.reports]
    if len(names) != len(reports):
        parser.error("give one name per report")
    made = table(reports, names)
    if args.readme:
        text = args.readme.read_text(encoding="utf-8")
        if START not in text or END not in text:
            parser.error(f"{args.readme} has no {START} ... {END} markers")
        args.readme.write_text(replace_between_markers(text, made), encoding="utf-8")
    else:
        sys.stdout.write(made + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
