"""``assay view``: the run history served as pages on loopback, with labelling (``assay[view]``)."""

from assay.view.app import make_app
from assay.view.context import ViewSettings
from assay.view.server import ViewServer, bind_problem

__all__ = ["ViewServer", "ViewSettings", "bind_problem", "make_app"]
