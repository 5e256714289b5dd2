"""The package's public names: all there, each the object its module defines, imported on first
use only (``import assay`` loads none of them)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import assay
import assay.config
import assay.errors
import assay.evalset
import assay.metrics
import assay.results
import assay.runner


def test_importing_assay_imports_none_of_its_modules() -> None:
    script = "import assay, json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = json.loads(done.stdout)

    assert [m for m in loaded if m.startswith("assay.")] == []
    assert [m for m in loaded if m.split(".")[0] in {"pydantic", "numpy", "rich"}] == []


def test_every_public_name_is_the_object_its_module_defines() -> None:
    homes = (assay.config, assay.errors, assay.evalset, assay.metrics, assay.results, assay.runner)
    for name in assay.__all__:
        if name == "__version__":
            continue
        defined = [getattr(home, name) for home in homes if hasattr(home, name)]
        assert defined, name
        assert getattr(assay, name) is defined[0], name


def test_a_star_import_gives_every_public_name() -> None:
    namespace: dict[str, object] = {}
    exec("from assay import *", namespace)

    assert sorted(set(namespace) - {"__builtins__"}) == sorted(assay.__all__)


def test_dir_lists_the_public_names_and_all_is_sorted() -> None:
    assert set(assay.__all__) <= set(dir(assay))
    assert assay.__all__ == sorted(assay.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'assay' has no attribute 'evaluat'"):
        assay.evaluat  # noqa: B018


def test_the_version_is_a_string() -> None:
    assert isinstance(assay.__version__, str) and assay.__version__
