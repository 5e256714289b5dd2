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
* Labels only: bounded free-text fields of a ``response_schema`` (rationales, excerpts) are held
  to ``ASSAY_LOCAL_TEXT_LIMIT`` characters, 0 unless set, so the judge writes its verdicts and
  no reasons (see :data:`DEFAULT_TEXT_LIMIT`).
* Temperature is 0 unless the request sets one. A ``response_schema`` is answered by
  :mod:`assay.llm.backends.local_decode`, which writes the JSON's fixed text itself and asks the
  model only for its choices and free text (``ASSAY_LOCAL_DECODER=grammar`` turns this off). A
  GBNF ``grammar``, or a schema that decoder does not cover, constrains sampling instead (the
  schema turned into a grammar by llama-cpp-python's JSON-schema converter).
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.llm.backends.local_decode import UnsupportedSchema, check_schema, decode
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
DEFAULT_TEXT_LIMIT = 0
"""The most characters the embedded judge writes in a bounded free-text field (a rationale, an
excerpt) unless ``ASSAY_LOCAL_TEXT_LIMIT`` sets more: by default it gives labels only, its
rationales left empty. Each generated token costs about 0.1 s on 2 cores, rationales were most of
what it generated, and the research behind it (shared/research/local-judge.md) found its label
accuracy the same with and without a written reason."""
DECODERS = ("schema", "grammar")
"""``ASSAY_LOCAL_DECODER``: how a ``response_schema`` is answered (the first is the default).
Measured on the example's 30 verdicts (2 cores): see docs/design.md."""
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
    formatter: Any = None
    """The GGUF's chat template as a formatter, built on first use; False when it has none."""


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


def generation_options(
    request: LlmRequest, text_limit: int = DEFAULT_TEXT_LIMIT, *, constrain: bool = True
) -> dict[str, Any]:
    """The keyword arguments for ``create_chat_completion``: ``request.params`` (snake or camel
    case; those llama.cpp has no use for are left out), then the request's own temperature and
    max_tokens, then the grammar, in which no bounded free-text field (a rationale, an excerpt)
    may be longer than ``text_limit`` characters (no grammar when ``constrain`` is False).
    Temperature defaults to 0."""
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
    if not constrain:
        return options
    if request.grammar is not None:
        options["grammar"] = _grammar(request.grammar)
    elif request.response_schema is not None:
        schema = clamp_text_lengths(request.response_schema, text_limit)
        options["grammar"] = _schema_grammar(json.dumps(schema))
    return options


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


def _complete(
    loaded: _Loaded, request: LlmRequest, model: str, text_limit: int, decoder: str = "schema"
) -> LlmResponse:
    with loaded.lock:
        needed = _prompt_tokens(loaded.llama, request)
        if needed + _ANSWER_ROOM > loaded.n_ctx:
            raise LlmCallError(
                f"the prompt has about {needed} tokens, more than the local model's context of "
                f"{loaded.n_ctx}; set ASSAY_LOCAL_N_CTX to a larger number of tokens (more memory)"
                " or use a judge with a longer context",
                retryable=False,
            )
        if decoder == "schema" and request.grammar is None and request.response_schema:
            answered = _schema_complete(loaded, request, model, text_limit)
            if answered is not None:
                return answered
        options = generation_options(request, text_limit)
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
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


def _formatter(loaded: _Loaded) -> Any:
    """The model's own chat template (None when the GGUF has none)."""
    if loaded.formatter is None:
        llama = loaded.llama
        template = (getattr(llama, "metadata", None) or {}).get("tokenizer.chat_template")
        if not template:
            loaded.formatter = False
        else:
            formats = importlib.import_module("llama_cpp.llama_chat_format")

            def text(token: int) -> str:
                if token < 0:
                    return ""
                return bytes(llama.detokenize([token], special=True)).decode("utf-8", "ignore")

            loaded.formatter = formats.Jinja2ChatFormatter(
                template=template,
                eos_token=text(llama.token_eos()),
                bos_token=text(llama.token_bos()),
            )
    return loaded.formatter or None


def _schema_complete(
    loaded: _Loaded, request: LlmRequest, model: str, text_limit: int
) -> LlmResponse | None:
    """Answer ``request`` by schema-directed decoding; None when the schema or the model's
    chat template does not allow it (the caller samples under a grammar instead)."""
    schema = request.response_schema
    formatter = _formatter(loaded)
    if schema is None or formatter is None:
        return None
    try:
        check_schema(schema)
    except UnsupportedSchema:
        return None
    llama = loaded.llama
    formatted = formatter(
        messages=[{"role": m.role, "content": m.content} for m in request.messages]
    )
    prompt = list(
        llama.tokenize(
            formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
        )
    )
    options = generation_options(request, text_limit, constrain=False)
    tokens = _LlamaTokens(loaded)
    try:
        answer = decode(
            tokens,
            schema,
            prompt_tokens=prompt[_reuse_prefix(llama, prompt) :],
            max_tokens=int(options["max_tokens"]),
            text_limit=text_limit,
            temperature=float(options["temperature"]),
            seed=options.get("seed"),
        )
    except (ValueError, RuntimeError) as exc:
        raise LlmCallError(f"the local model failed: {exc}", retryable=False) from None
    completion_tokens = len(tokens.tokenize(answer.text.encode("utf-8")))
    usage = {"prompt_tokens": len(prompt), "completion_tokens": completion_tokens}
    return LlmResponse(
        text=answer.text,
        model=model,
        usage=TokenUsage(**usage, calls=1),
        raw={
            "finish_reason": "stop" if answer.complete else "length",
            "decoder": "schema",
            "decisions": answer.decisions,
            "batches": answer.batches,
            "usage": usage,
        },
    )


def _reuse_prefix(llama: Any, prompt: Sequence[int]) -> int:
    """Keep the evaluated tokens ``prompt`` starts with (llama.cpp's KV cache); return how many.
    At least the last prompt token is evaluated again, for its logits."""
    cached = np.asarray(llama.input_ids[: llama.n_tokens])
    wanted = np.asarray(prompt[: len(cached)])
    differ = np.flatnonzero(cached[: len(wanted)] != wanted)
    common = int(differ[0]) if len(differ) else len(wanted)
    common = min(common, len(prompt) - 1)
    if getattr(llama, "_is_recurrent", False) or getattr(llama, "_is_hybrid", False):
        common = 0  # their state cannot be cut back to a prefix
    if common <= 0:
        llama.reset()
        return 0
    llama.n_tokens = common  # ``eval`` drops the KV cells from here on before evaluating
    return common


class _LlamaTokens:
    """A loaded llama.cpp model seen as :class:`~assay.llm.backends.local_decode.TokenModel`."""

    def __init__(self, loaded: _Loaded) -> None:
        self._llama = loaded.llama
        self._n_ctx = loaded.n_ctx
        self._pieces: dict[int, bytes] = {}

    def tokenize(self, text: bytes) -> list[int]:
        return list(self._llama.tokenize(text, add_bos=False, special=False))

    def piece(self, token: int) -> bytes:
        if token not in self._pieces:
            self._pieces[token] = bytes(self._llama.detokenize([token], special=False))
        return self._pieces[token]

    def feed(self, tokens: Sequence[int]) -> None:
        if self._llama.n_tokens + len(tokens) > self._n_ctx:
            raise LlmCallError(
                f"the answer does not fit in the local model's context of {self._n_ctx} tokens; "
                "set ASSAY_LOCAL_N_CTX to a larger number of tokens (more memory)",
                retryable=False,
            )
        self._llama.eval(list(tokens))

    def logits(self) -> npt.NDArray[np.float32]:
        llama_cpp = _llama_cpp()
        pointer = llama_cpp.llama_get_logits_ith(self._llama.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self._llama.n_vocab(),)).copy()


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
        self._decoder = self._env.get("ASSAY_LOCAL_DECODER", "").strip() or DECODERS[0]
        if self._decoder not in DECODERS:
            raise LlmUnavailableError(
                f"ASSAY_LOCAL_DECODER must be one of {', '.join(DECODERS)}; got {self._decoder!r}"
            )
        self._text_limit = _setting(
            self._env, "ASSAY_LOCAL_TEXT_LIMIT", DEFAULT_TEXT_LIMIT, 0, "characters"
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
            return await asyncio.to_thread(
                _complete, loaded, request, self._model, self._text_limit, self._decoder
            )

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
