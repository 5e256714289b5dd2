"""The view's ASGI application: every page module's routes, the static script, the guards.

Handlers are plain functions (Starlette runs them in its thread pool), reading the history
through the one :class:`~assay.history.store.HistoryStore` the view holds (a single SQLite
connection behind a lock, WAL mode, so a run being written by ``assay eval`` in another process
is read as it grows).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from assay.history.store import HistoryStore
from assay.view.context import View, ViewSettings
from assay.view.pages import cards, case, compare, labels, live, run, runs
from assay.view.queries import Queries, warm
from assay.view.security import Guard, GuardMiddleware

STATIC = Path(__file__).resolve().parent / "static"


def routes() -> list[BaseRoute]:
    """Every page's routes, then the static files."""
    found: list[BaseRoute] = []
    for module in (runs, run, case, compare, cards, labels, live):
        found.extend(module.routes)
    found.append(Mount("/static", app=StaticFiles(directory=STATIC), name="static"))
    return found


def make_app(settings: ViewSettings, guard: Guard | None = None) -> Starlette:
    """The view of ``settings.history``; ``guard`` (default: a new one with the settings' key)
    holds the key and this server's CSRF token."""
    guard = guard or Guard(key=settings.key)
    view = View(settings, guard, HistoryStore(settings.history))

    queries = Queries(view.store)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        threading.Thread(target=warm, args=(queries,), name="assay-view-warm", daemon=True).start()
        yield
        view.store.close()

    app = Starlette(
        routes=routes(),
        middleware=[Middleware(GuardMiddleware, guard=guard)],
        lifespan=lifespan,
    )
    app.state.view = view
    app.state.run_queries = queries
    return app
