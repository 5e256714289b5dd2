"""The view's compare pages (to be written)."""

from __future__ import annotations

from starlette.routing import BaseRoute

routes: list[BaseRoute] = []
