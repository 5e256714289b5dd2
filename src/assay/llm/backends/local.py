"""``local:``: the embedded offline judge, a GGUF model run in this process by llama-cpp-python.

``local:`` is the default model (Qwen2.5-Coder-1.5B-Instruct), ``local:<name>`` a built-in one
(see :data:`assay.llm.models.BUILTIN_MODELS`), ``local:<path>.gguf`` any GGUF file.

* One ``Llama`` per model file per process, loaded on first use and kept for the process; calls
  run one at a time per model (a ``Llama`` is not thread-safe) in a worker thread.
* ``n_ctx`` is 8192 (``ASSAY_LOCAL_N_CTX`` overrides), ``n_threads`` every CPU this process may
  use (``ASSAY_LOCAL_THREADS`` overrides: on a machine busy with other work, fewer threads than
  cores is much faster, as llama.cpp's threads wait for each other by spinning). llama.cpp reuses
  the previous prompt's evaluated prefix, so a judge prompt whose long static part comes first is
  cheaper when the same judge asks again; ``ASSAY_LOCAL_RAM_CACHE_MB`` adds a ``LlamaRAMCache`` of
  recent prompt states (faster when judges interleave, at a large memory cost).
* Temperature is 0 unless the request sets one. A GBNF ``grammar`` constrains the output; else a
  ``response_schema`` is turned into a grammar by llama-cpp-python's JSON-schema converter.
* A prompt longer than the context is refused before any work, with a non-retryable
  :class:`~assay.llm.base.LlmCallError` that says how to raise the limit.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import importlib
import importlib.util
import json
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.llm.base import LlmCallError, LlmRequest, LlmResponse, LlmUnavailableError, TokenUsage
from assay.llm.models import (
    BUILTIN_MODELS,
    DEFAULT_MODEL,
    LocalModel,
    ModelSpec,
    file_sha256,
    locate_parts,
    model_dir,
    prepare,
    user_model,
)

INSTALL_LLAMA = "CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install --no-cache-dir 'assay[local]'"
DEFAULT_N_CTX = 8192
DEFAULT_MAX_TOKENS = 1024
DEFAULT_RAM_CACHE_MB = 0
"""llama.cpp's RAM cache of prompt states is off unless ``ASSAY_LOCAL_RAM_CACHE_MB`` sets a size.
Measured on the example's judges (10 verdicts, 2 cores): 114 s with a 1 GB cache against 140 s
without, but the process grew to 10 GB instead of 2.2 GB. Without it llama.cpp still reuses the
previous prompt's prefix, and calls of one judge mostly follow each other."""
_MESSAGE_OVERHEAD = 8  # tokens a chat template adds around each message (a generous estimate)
_ANSWER_ROOM = 16  # the fewest tokens left for an answer

_PARAMS = {
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "repeat_penalty",
    "temperature",
    "max_tokens",
}
_PARAM_ALIASES = {"max_output_tokens": "max_tokens", "stop_sequences": "stop"}


def llama_available() -> bool:
    """Whether llama-cpp-python is installed (nothing is imported)."""
    return importlib.util.find_spec("llama_cpp") is not None


def _require_llama() -> None:
    if not llama_available():
        raise LlmUnavailableError(
            "the local judge needs llama-cpp-python, which is not installed; install it with: "
            f"{INSTALL_LLAMA} (GGML_NATIVE=OFF builds portable code: the default native build "
            "crashes on CPUs whose instructions, such as AMX, the OS or VM does not enable; "
            "--no-cache-dir keeps pip from reusing a wheel built with other flags)"
        )


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _setting(env: Mapping[str, str], name: str, default: int, least: int, unit: str) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < least:
        raise LlmUnavailableError(
            f"{name} must be a whole number of {unit}, at least {least}; got {raw!r}"
        )
    return int(raw)


def _llama_cpp() -> Any:
    """The ``llama_cpp`` module, imported on first use (it loads a native library)."""
    return importlib.import_module("llama_cpp")


@dataclass
class _Loaded:
    """One loaded model, with the lock that makes its calls one at a time."""

    llama: Any
    n_ctx: int
    lock: threading.Lock


_LOADED: dict[tuple[str, int], _Loaded] = {}
_LOADING = threading.Lock()


def _load(path: Path, n_ctx: int, n_threads: int, ram_cache_bytes: int = 0) -> _Loaded:
    key = (str(path.resolve()), n_ctx)
    with _LOADING:
        if key in _LOADED:
            return _LOADED[key]
        llama_cpp = _llama_cpp()
        try:
            llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise LlmUnavailableError(f"cannot load the local model {path}: {exc}") from None
        if ram_cache_bytes:
            llama.set_cache(llama_cpp.LlamaRAMCache(capacity_bytes=ram_cache_bytes))
        _LOADED[key] = _Loaded(llama, n_ctx, threading.Lock())
        return _LOADED[key]


def unload_all() -> None:
    """Free every loaded model (a backend that needs one again loads it again)."""
    with _LOADING:
        loaded = list(_LOADED.values())
        _LOADED.clear()
    for model in loaded:
        with model.lock:
            model.llama.close()


# Free models before the interpreter tears down the modules their finalisers need.
atexit.register(unload_all)


@functools.lru_cache(maxsize=64)
def _grammar(text: str) -> Any:
    return _llama_cpp().LlamaGrammar.from_string(text, verbose=False)


def _schema_grammar(schema_json: str) -> Any:
    grammars = importlib.import_module("llama_cpp.llama_grammar")
    try:
        text = grammars.json_schema_to_gbnf(schema_json)
    except Exception:  # a schema feature the converter lacks: still ask for JSON
        text = grammars.JSON_GBNF
    return _grammar(text)


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def generation_options(request: LlmRequest) -> dict[str, Any]:
    """The keyword arguments for ``create_chat_completion``: ``request.params`` (snake or camel
    case; those llama.cpp has no use for are left out), then the request's own temperature and
    max_tokens, then the grammar. Temperature defaults to 0."""
    options: dict[str, Any] = {}
    for key, value in request.params.items():
        name = _PARAM_ALIASES.get(_snake(key), _snake(key))
        if name in _PARAMS and value is not None:
            options[name] = value
    if request.temperature is not None:
        options["temperature"] = request.temperature
    options.setdefault("temperature", 0.0)
    if request.max_tokens is not None:
        options["max_tokens"] = request.max_tokens
    options.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    if isinstance(options.get("stop"), str):
        options["stop"] = [options["stop"]]
    if request.grammar is not None:
        options["grammar"] = _grammar(request.grammar)
    elif request.response_schema is not None:
        schema = clamp_text_lengths(request.response_schema, TEXT_LIMIT)
        options["grammar"] = _schema_grammar(json.dumps(schema))
    return options


TEXT_LIMIT = 100
"""The most characters the embedded judge may write in a bounded free-text field (a rationale,
an excerpt). Each generated token costs about 0.1 s on 2 cores, and the research behind the
embedded judge (shared/research/local-judge.md) found its label accuracy the same with and
without a written reason, so rationales are kept short rather than dropped."""


def clamp_text_lengths(schema: Any, limit: int) -> Any:
    """``schema`` with every ``maxLength`` above ``limit`` lowered to it (fields without a
    ``maxLength``, such as copied sentences, are left alone)."""
    if isinstance(schema, dict):
        out = {k: clamp_text_lengths(v, limit) for k, v in schema.items()}
        if isinstance(out.get("maxLength"), int) and out["maxLength"] > limit:
            out["maxLength"] = limit
        return out
    if isinstance(schema, list):
        return [clamp_text_lengths(v, limit) for v in schema]
    return schema


def _prompt_tokens(llama: Any, request: LlmRequest) -> int:
    count = _MESSAGE_OVERHEAD
    for message in request.messages:
        tokens = llama.tokenize(message.content.encode("utf-8"), add_bos=False, special=False)
        count += len(tokens) + _MESSAGE_OVERHEAD
    return count


def _complete(loaded: _Loaded, request: LlmRequest, model: str) -> LlmResponse:
    options = generation_options(request)
    messages = [{"role": m.role, "content": m.content} for m in request.messages]
    with loaded.lock:
        needed = _prompt_tokens(loaded.llama, request)
        if needed + _ANSWER_ROOM > loaded.n_ctx:
            raise LlmCallError(
                f"the prompt has about {needed} tokens, more than the local model's context of "
                f"{loaded.n_ctx}; set ASSAY_LOCAL_N_CTX to a larger number of tokens (more memory)"
                " or use a judge with a longer context",
                retryable=False,
            )
        try:
            completion = loaded.llama.create_chat_completion(messages=messages, **options)
        except (ValueError, RuntimeError) as exc:
            raise LlmCallError(f"the local model failed: {exc}", retryable=False) from None
    choice = completion["choices"][0]
    usage = completion.get("usage") or {}
    return LlmResponse(
        text=choice["message"].get("content") or "",
        model=model,
        usage=TokenUsage(
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            calls=1,
        ),
        raw={"finish_reason": choice.get("finish_reason"), "usage": dict(usage)},
    )


def parse_local(model: str) -> ModelSpec | Path:
    """What ``local:<rest>`` names: a built-in model, or a GGUF file."""
    rest = model.partition(":")[2].strip()
    if not rest:
        return DEFAULT_MODEL
    if rest in BUILTIN_MODELS:
        return BUILTIN_MODELS[rest]
    if rest.lower().endswith(".gguf") or "/" in rest or os.sep in rest:
        return Path(rest).expanduser()
    raise LlmUnavailableError(
        f"unknown local model {rest!r}; use local: (the default, {DEFAULT_MODEL.name}), "
        f"local:<name> with a name among {', '.join(BUILTIN_MODELS)}, or local:<path to a .gguf>"
    )


class LocalBackend:
    """A GGUF model run in this process. Construction checks cheaply that llama-cpp-python and
    the model are installed; the model is assembled, checked and loaded on first use
    (or by :meth:`load`)."""

    def __init__(
        self,
        model: str = "local:",
        *,
        env: Mapping[str, str] | None = None,
        n_threads: int | None = None,
    ) -> None:
        _require_llama()
        self._model = model
        self._env = dict(os.environ if env is None else env)
        self._source = parse_local(model)
        self._n_ctx = _setting(self._env, "ASSAY_LOCAL_N_CTX", DEFAULT_N_CTX, 256, "tokens")
        self._ram_cache_mb = _setting(
            self._env, "ASSAY_LOCAL_RAM_CACHE_MB", DEFAULT_RAM_CACHE_MB, 0, "MB"
        )
        self._n_threads = n_threads or _setting(
            self._env, "ASSAY_LOCAL_THREADS", _cpu_count(), 1, "threads"
        )
        if isinstance(self._source, ModelSpec):
            locate_parts(self._source)
        elif not self._source.is_file():
            user_model(self._source, self._env)  # raises, saying the file does not exist
        self._prepared: LocalModel | None = None
        self._sha256: str | None = None
        self._loaded: _Loaded | None = None
        self._gate = asyncio.Lock()

    @property
    def name(self) -> str:
        """Always ``local``."""
        return "local"

    @property
    def model(self) -> str:
        """The model string as written (``local:``, ``local:smollm2``, ``local:/m.gguf``)."""
        return self._model

    @property
    def n_ctx(self) -> int:
        """The context size the model is loaded with."""
        return self._n_ctx

    def cache_identity(self) -> Mapping[str, Any]:
        """The model file's sha256 (pinned for built-in models, hashed once for a user file)."""
        if isinstance(self._source, ModelSpec):
            return {"sha256": self._source.sha256}
        if self._sha256 is None:
            self._sha256 = file_sha256(self._source, stamp_dir=model_dir(self._env))
        return {"sha256": self._sha256}

    async def load(self) -> None:
        """Assemble, check and load the model now rather than on the first request."""
        async with self._gate:
            await asyncio.to_thread(self._ensure_loaded)

    async def generate(self, request: LlmRequest) -> LlmResponse:
        """Run one chat completion in a worker thread, one at a time per model."""
        async with self._gate:
            loaded = await asyncio.to_thread(self._ensure_loaded)
            return await asyncio.to_thread(_complete, loaded, request, self._model)

    async def aclose(self) -> None:
        """Nothing to do: the loaded model stays for the process (see :func:`unload_all`)."""
        self._loaded = None

    def _ensure_loaded(self) -> _Loaded:
        if self._prepared is None:
            source = self._source
            self._prepared = (
                prepare(source, self._env)
                if isinstance(source, ModelSpec)
                else user_model(source, self._env)
            )
        # Looked up every call (cheap): the model may have been unloaded since.
        self._loaded = _load(
            self._prepared.path, self._n_ctx, self._n_threads, self._ram_cache_mb << 20
        )
        return self._loaded
