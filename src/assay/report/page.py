"""What both layouts of the HTML report (:mod:`assay.report.html`,
:mod:`assay.report.html_large`) share: the templates' jinja2 environment and the page's title."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import jinja2

from assay.results.model import EvalSetResult

TEMPLATES = Path(__file__).resolve().parent / "templates"


def environment() -> jinja2.Environment:
    """The templates, autoescaped, an undefined name an error."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def default_title(results: Sequence[EvalSetResult]) -> str:
    """``assay report: set, set``."""
    names = ", ".join(dict.fromkeys(r.eval_set_id for r in results))
    return f"assay report: {names}" if names else "assay report"
