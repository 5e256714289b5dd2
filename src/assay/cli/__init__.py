"""The command line interface."""

from assay.cli.main import cli, main

__all__ = ["cli", "main"]
