"""The shape of the package, checked by CI rather than by review: no function longer than 80
lines, no loose configuration or utility module at the package root, ``__init__`` files that only
re-export, and the layers stated as import-linter contracts in ``pyproject.toml`` kept."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "assay"
MAX_FUNCTION_LINES = 80
ROOT_MODULES = {
    "__init__.py": "the curated public API",
    "_version.py": "the version, read by the build",
    "errors.py": "the exception tree every layer raises",
    "custom.py": "the types a user's custom metric is written with (public: `from assay.custom import ...`)",
}


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def test_no_function_in_src_is_longer_than_80_lines() -> None:
    too_long = []
    for path in sorted(SRC.rglob("*.py")):
        for node in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                too_long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines})")
    assert too_long == []


def test_the_package_root_holds_only_its_public_modules() -> None:
    loose = sorted(p.name for p in SRC.glob("*.py") if p.name not in ROOT_MODULES)
    assert loose == []


def test_init_files_only_re_export() -> None:
    """An ``__init__.py`` holds a docstring, imports and ``__all__`` (the root's lazy
    ``__getattr__`` re-export aside): no definitions that belong in a module of their own."""
    offenders = []
    for path in sorted(SRC.rglob("__init__.py")):
        if path.parent == SRC:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            allowed = isinstance(node, ast.Import | ast.ImportFrom | ast.Expr)
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                allowed = all(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                allowed = True
            if not allowed:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_the_layer_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    if not lint_imports.exists():
        pytest.fail("lint-imports is missing: install the dev extra (import-linter)")
    done = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout
