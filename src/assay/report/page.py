"""What both layouts of the HTML report (:mod:`assay.report.html`,
:mod:`assay.report.html_large`) share: the templates' jinja2 environment and the page's title."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from assay.results.model import EvalSetResult

TEMPLATES = Path(__file__).resolve().parent / "templates"


def breakable(name: str) -> Markup:
    """``name`` escaped, with a line-break opportunity (``<wbr>``) after each underscore: a long
    metric name wraps between its words in a narrow table, never inside one."""
    return Markup("_<wbr>").join(escape(part) for part in str(name).split("_"))


def environment() -> jinja2.Environment:
    """The templates, autoescaped, an undefined name an error; ``breakable`` a filter."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["breakable"] = breakable
    return env


def default_title(results: Sequence[EvalSetResult]) -> str:
    """``assay report: set, set``."""
    names = ", ".join(dict.fromkeys(r.eval_set_id for r in results))
    return f"assay report: {names}" if names else "assay report"
