"""The shell every HTML page assay writes shares (the eval report in both layouts, the comparison,
the judge agreement page): one jinja2 environment and one base template.

:func:`environment` autoescapes every value (no text from results, labels, agents or judges
becomes markup), makes an undefined name an error and gives the shared filters. Its templates
are a page's own folder, then this package's ``templates``, which holds ``page.html.j2``: the
doctype, the meta tags, the Content-Security-Policy (nothing loaded from anywhere, inline
styles only, unless a page's ``csp`` block allows its own inline script) and the CSS variables.
Every page template extends it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from assay.results.model import EvalSetResult

TEMPLATES = Path(__file__).resolve().parent / "templates"
"""The shell (``page.html.j2``, ``text.css``) and the eval report's templates."""


def breakable(name: str) -> Markup:
    """``name`` escaped, with a line-break opportunity (``<wbr>``) after each underscore: a long
    metric name wraps between its words in a narrow table, never inside one."""
    return Markup("_<wbr>").join(escape(part) for part in str(name).split("_"))


def environment(*folders: Path) -> jinja2.Environment:
    """The templates of ``folders`` (a page's own, looked in first) and of the shell,
    autoescaped, an undefined name an error; ``breakable`` a filter."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([*folders, TEMPLATES]),
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
