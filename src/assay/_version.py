"""The installed version of assay."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("assay")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0"
