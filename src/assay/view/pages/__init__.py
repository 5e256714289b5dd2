"""The view's pages: each module's ``routes``, mounted by :func:`assay.view.app.make_app`."""
