"""Fixtures shared by the eval-set tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ._helpers import WriteFile


@pytest.fixture
def write_file(tmp_path: Path) -> WriteFile:
    """Write ``content`` (text as is, anything else as JSON) to ``tmp_path / name``."""

    def write(name: str, content: Any) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else json.dumps(content)
        path.write_text(text, encoding="utf-8")
        return path

    return write
