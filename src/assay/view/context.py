"""What every page handler of the view reaches: the settings, the history, the templates.

A handler gets it with :func:`view_of` (``request.app.state.view``) and renders a page with
:meth:`View.page`, which adds what the shell needs (the CSRF token, whether labelling is on,
assay's version) to the page's own values.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

from assay._version import __version__
from assay.history.store import HistoryStore
from assay.report.page import environment
from assay.view.security import CSRF_FIELD, Guard

TEMPLATES = Path(__file__).resolve().parent / "templates"
"""The view's own templates; the report's shell (``page.html.j2``) and its templates after
them, so the view and the static report share one look."""


@dataclass(frozen=True)
class ViewSettings:
    """How ``assay view`` serves: the history it reads, the key it asks (None: none, loopback
    only), and whether people may label (``read_only``: no labelling, no state changes)."""

    history: Path
    key: str | None = None
    read_only: bool = False
    labeller: str = ""
    """Who labels from this view, recorded with each label (default: the OS user)."""


@dataclass
class View:
    """The running view's shared state."""

    settings: ViewSettings
    guard: Guard
    store: HistoryStore
    env: jinja2.Environment = field(default_factory=lambda: environment(TEMPLATES))
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held by work that must not run twice at once (a fit started from the page)."""

    def page(
        self, request: Request, template: str, status: int = 200, **values: Any
    ) -> HTMLResponse:
        """``template`` rendered with ``values`` and the shell's own."""
        html = self.env.get_template(template).render(
            version=__version__,
            csrf=self.guard.csrf,
            csrf_field=CSRF_FIELD,
            read_only=self.settings.read_only,
            path=request.url.path,
            **values,
        )
        return HTMLResponse(html, status_code=status)


def view_of(request: Request) -> View:
    """The view serving ``request``."""
    view = request.app.state.view
    assert isinstance(view, View)
    return view
