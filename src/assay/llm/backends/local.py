"""``local:``: the embedded offline judge, a GGUF model run in this process by llama.cpp.

``local:`` is the default model (Qwen2.5-Coder-1.5B-Instruct), ``local:<name>`` a built-in one
(see :data:`assay.llm.models.BUILTIN_MODELS`), ``local:<path>.gguf`` any GGUF file. The runtime
is xllamacpp's prebuilt wheel (:mod:`assay.llm.backends.local_runtime`).

* One runtime per model file and context size per process, loaded on first use and kept for the
  process; calls run one at a time per model, in a worker thread.
* ``n_ctx`` is 8192 (``ASSAY_LOCAL_N_CTX`` overrides), ``n_threads`` every CPU this process may
  use (``ASSAY_LOCAL_THREADS`` overrides: on a machine busy with other work, fewer threads than
  cores is much faster, as llama.cpp's threads wait for each other by spinning). A prompt that
  starts as an earlier one did is evaluated only from where it differs: llama.cpp keeps the last
  prompt's state and, within ``ASSAY_LOCAL_RAM_CACHE_MB`` (:data:`DEFAULT_RAM_CACHE_MB`), the
  states of earlier prompts, so judges whose calls interleave still reuse their instructions.
* Labels only: bounded free-text fields of a ``response_schema`` (rationales, excerpts) are held
  to ``ASSAY_LOCAL_TEXT_LIMIT`` characters, 0 unless set, so the judge writes its verdicts and
  no reasons (see :data:`DEFAULT_TEXT_LIMIT`).
* Temperature is 0 unless the request sets one. A ``response_schema`` is answered by
  :mod:`assay.llm.backends.local_decode`, which writes the JSON's fixed text itself and asks the
  model only for its choices and free text (``ASSAY_LOCAL_DECODER=grammar`` turns this off). A
  GBNF ``grammar``, or a schema that decoder does not cover, constrains sampling instead.
* A choice is read from the next-token log-probabilities. Those of one prompt differ by a few
  hundredths between an evaluation from scratch and one that reuses a cached prefix, so where the
  two best options are nearer than :data:`TIE_MARGIN` the prompt is evaluated again from scratch
  and that decides: a verdict never depends on which calls came before it.
* A prompt longer than the context is refused before any work, with a non-retryable
  :class:`~assay.llm.base.LlmCallError` that says how to raise the limit.
"""

from __future__ import annotations

import asyncio
import atexit
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
from assay.llm.backends.local_runtime import (
    INSTALL_RUNTIME,
    MISSING_RUNTIME,
    Runtime,
    RuntimeSettings,
    import_runtime,
    runtime_available,
)
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

__all__ = ["INSTALL_RUNTIME", "LocalBackend", "parse_local", "runtime_available", "unload_all"]

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
DEFAULT_RAM_CACHE_MB = 1024
"""The RAM llama.cpp may keep evaluated prompts in (``ASSAY_LOCAL_RAM_CACHE_MB``; 0 keeps only the
last one). A prompt's state costs about 28 KB a token for the default model, so this holds the
instructions of every judge many times over; memory is taken only as prompts are kept."""
TIE_MARGIN = 0.25
"""Two options whose log-probabilities are nearer than this (in nats) are a near-tie, settled by
evaluating the prompt from scratch. Measured: cached and uncached evaluations of one prompt differ
by 0.03-0.05 (shared/research/local-judge.md); the margin is five times that."""
_FIRST_LOOK = 32
"""How many of the most likely next tokens a choice first asks for; more only when needed."""
_ANSWER_ROOM = 16  # the fewest tokens left for an answer
_UTF8_TOKENS = 4  # enough byte tokens to complete any UTF-8 character

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


def _require_runtime() -> None:
    if not runtime_available():
        raise LlmUnavailableError(MISSING_RUNTIME)


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


@dataclass
class _Loaded:
    """One loaded model, with the lock that makes its calls one at a time."""

    runtime: Runtime
    lock: threading.Lock


_LOADED: dict[tuple[str, int], _Loaded] = {}
_LOADING = threading.Lock()


def _load(path: Path, settings: RuntimeSettings) -> _Loaded:
    key = (str(path.resolve()), settings.n_ctx)
    with _LOADING:
        if key not in _LOADED:
            _LOADED[key] = _Loaded(Runtime(path, settings), threading.Lock())
        return _LOADED[key]


def unload_all() -> None:
    """Free every loaded model (a backend that needs one again loads it again)."""
    with _LOADING:
        loaded = list(_LOADED.values())
        _LOADED.clear()
    for model in loaded:
        with model.lock:
            model.runtime.close()


# Free models before the interpreter tears down the modules their finalisers need.
atexit.register(unload_all)


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def generation_options(request: LlmRequest) -> dict[str, Any]:
    """The sampling fields of a llama-server request: ``request.params`` (snake or camel case;
    those llama.cpp has no use for are left out), then the request's own temperature and
    max_tokens. Temperature defaults to 0."""
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
    return options


def constraint(request: LlmRequest, text_limit: int) -> dict[str, Any]:
    """The request fields that constrain sampling: the GBNF ``grammar``, else the response schema
    (as llama-server's ``json_schema``) with no bounded free-text field longer than
    ``text_limit`` characters."""
    if request.grammar is not None:
        return {"grammar": request.grammar}
    if request.response_schema is not None:
        return {"json_schema": clamp_text_lengths(request.response_schema, text_limit)}
    return {}


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


def _messages(request: LlmRequest) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in request.messages]


def _complete(
    loaded: _Loaded, request: LlmRequest, model: str, text_limit: int, decoder: str = "schema"
) -> LlmResponse:
    runtime = loaded.runtime
    with loaded.lock:
        prompt = runtime.prompt_tokens(_messages(request))
        if len(prompt) + _ANSWER_ROOM > runtime.n_ctx:
            raise LlmCallError(
                f"the prompt has {len(prompt)} tokens, more than the local model's context of "
                f"{runtime.n_ctx} allows; set ASSAY_LOCAL_N_CTX to a larger number of tokens "
                "(more memory) or use a judge with a longer context",
                retryable=False,
            )
        schema = request.response_schema
        if decoder == "schema" and request.grammar is None and schema is not None:
            try:
                check_schema(schema)
            except UnsupportedSchema:
                pass
            else:
                return _schema_complete(runtime, request, schema, prompt, model, text_limit)
        body = {
            "messages": _messages(request),
            **generation_options(request),
            **constraint(request, text_limit),
        }
        completion = runtime.chat(body)
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
        raw={
            "finish_reason": choice.get("finish_reason"),
            "usage": dict(usage),
            "evaluated": int((completion.get("timings") or {}).get("prompt_n", 0)),
        },
    )


def _schema_complete(
    runtime: Runtime,
    request: LlmRequest,
    schema: Mapping[str, Any],
    prompt: list[int],
    model: str,
    text_limit: int,
) -> LlmResponse:
    """Answer ``request`` by schema-directed decoding of ``schema``."""
    options = generation_options(request)
    tokens = _ServerTokens(runtime)
    answer = decode(
        tokens,
        schema,
        prompt_tokens=prompt,
        max_tokens=int(options["max_tokens"]),
        text_limit=text_limit,
        temperature=float(options["temperature"]),
        seed=options.get("seed"),
    )
    completion_tokens = len(runtime.tokenize(answer.text, special=False))
    usage = {"prompt_tokens": len(prompt), "completion_tokens": completion_tokens}
    return LlmResponse(
        text=answer.text,
        model=model,
        usage=TokenUsage(**usage, calls=1),
        choices=tuple(answer.choices),
        raw={
            "finish_reason": "stop" if answer.complete else "length",
            "decoder": "schema",
            "decisions": answer.decisions,
            "batches": answer.batches,
            "usage": usage,
            "evaluated": tokens.evaluated,
            "settled": tokens.settled,
        },
    )


class _ServerTokens:
    """A loaded model seen as :class:`~assay.llm.backends.local_decode.TokenModel`: what was fed
    is kept here and sent whole with each question, and llama.cpp evaluates only what its cache
    does not already hold."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._sequence: list[int] = []
        self._pieces: dict[int, bytes] = {}
        self.evaluated = 0
        """Prompt tokens llama.cpp evaluated for this answer (the rest came from its cache)."""
        self.settled = 0
        """Near-ties settled by an evaluation from scratch."""

    def tokenize(self, text: bytes) -> list[int]:
        pieces = self._runtime.pieces(text.decode("utf-8", "replace"), special=False)
        self._pieces.update(pieces)
        return [token for token, _ in pieces]

    def piece(self, token: int) -> bytes:
        if token not in self._pieces:
            self._pieces[token] = self._runtime.detokenize([token])
        return self._pieces[token]

    def feed(self, tokens: Sequence[int]) -> None:
        if len(self._sequence) + len(tokens) > self._runtime.n_ctx:
            raise LlmCallError(
                f"the answer does not fit in the local model's context of {self._runtime.n_ctx} "
                "tokens; set ASSAY_LOCAL_N_CTX to a larger number of tokens (more memory)",
                retryable=False,
            )
        self._sequence.extend(tokens)

    def _look(self, count: int, *, fresh: bool = False) -> tuple[dict[int, float], bool]:
        """The ``count`` most likely next tokens and their log-probabilities, and whether the
        whole sequence was evaluated from scratch for them."""
        body = {
            "prompt": self._sequence,
            "max_tokens": 1,
            "temperature": 0.0,
            "n_probs": count,
            "cache_prompt": not fresh,
        }
        answer = self._runtime.complete(body)
        timings = answer.get("timings") or {}
        self.evaluated += int(timings.get("prompt_n", 0))
        steps = _steps(answer)
        if not steps:
            # llama.cpp holds back a token that ends inside a UTF-8 character, and its
            # probabilities with it; a few more tokens complete the character.
            answer = self._runtime.complete({**body, "max_tokens": _UTF8_TOKENS})
            steps = _steps(answer)
        if not steps:
            raise LlmCallError(
                "the local runtime gave no token probabilities for the next token",
                retryable=False,
            )
        step = steps[0]
        ranked: dict[int, float] = {}
        for entry in step["top_logprobs"]:
            token = int(entry["id"])
            ranked[token] = float(entry["logprob"])
            self._pieces.setdefault(token, bytes(entry.get("bytes") or b""))
        return ranked, int(timings.get("cache_n", 0)) == 0

    def top(self, count: int) -> list[tuple[int, float]]:
        ranked, _ = self._look(count)
        return sorted(ranked.items(), key=lambda item: -item[1])[:count]

    def logprobs(self, candidates: Sequence[int], *, every: bool) -> npt.NDArray[np.float64]:
        count = _FIRST_LOOK
        while True:
            ranked, fresh = self._look(count)
            values = np.array([ranked.get(t, -np.inf) for t in candidates], dtype=np.float64)
            floor = min(ranked.values(), default=-np.inf)
            if len(ranked) < count or _enough(values, floor, every=every):
                break
            count *= 32  # rare: a candidate is not among the most likely tokens
        if every or fresh or not _near_tie(values):
            return values
        self.settled += 1
        ranked, _ = self._look(count, fresh=True)
        settled = np.array([ranked.get(t, -np.inf) for t in candidates], dtype=np.float64)
        return settled if np.isfinite(settled).any() else values


def _steps(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The per-token probability entries of a completion (empty when it gave none)."""
    choices = answer.get("choices") or [{}]
    logprobs = choices[0].get("logprobs") or {}
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    return [step for step in content or [] if isinstance(step, dict)]


def _enough(values: npt.NDArray[np.float64], floor: float, *, every: bool) -> bool:
    """Whether the tokens looked at, the least likely at ``floor``, tell what is needed: every
    candidate's value, or the best candidate and whether another is within the margin."""
    known = np.isfinite(values)
    if every:
        return bool(known.all())
    if not known.any():
        return False
    if known.sum() >= 2 or known.all():
        return True
    return float(values.max()) - floor >= TIE_MARGIN  # an unseen one is surely not near


def _near_tie(values: npt.NDArray[np.float64]) -> bool:
    known = np.sort(values[np.isfinite(values)])
    return len(known) >= 2 and float(known[-1] - known[-2]) < TIE_MARGIN


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


GGUF_MAGIC = b"GGUF"
"""The first four bytes of every GGUF file."""


def _require_gguf(path: Path) -> None:
    """Raise :class:`LlmUnavailableError` unless ``path`` is a readable file that starts with
    GGUF's magic bytes (a cheap check: the model is not read further)."""
    try:
        with path.open("rb") as file:
            head = file.read(len(GGUF_MAGIC))
    except OSError as exc:
        raise LlmUnavailableError(
            f"local model file {str(path)!r} cannot be read: {exc.strerror or exc}"
        ) from None
    if head != GGUF_MAGIC:
        raise LlmUnavailableError(
            f"local model file {str(path)!r} is not a GGUF model (it does not start with "
            f"GGUF's magic bytes); give the path of a .gguf file, or one of: "
            f"{', '.join(BUILTIN_MODELS)}"
        )


class LocalBackend:
    """A GGUF model run in this process. Construction checks cheaply that the runtime and the
    model are installed; the model is assembled, checked and loaded on first use
    (or by :meth:`load`)."""

    def __init__(
        self,
        model: str = "local:",
        *,
        env: Mapping[str, str] | None = None,
        n_threads: int | None = None,
    ) -> None:
        _require_runtime()
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
        else:
            _require_gguf(self._source)
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

    async def check(self) -> None:
        """What can be checked without loading the model (which takes seconds to minutes): the
        runtime imports (its native library loads), the model's parts or file are there, and a
        model file starts as a GGUF file does. Raises :class:`LlmUnavailableError`."""
        import_runtime()
        if isinstance(self._source, ModelSpec):
            locate_parts(self._source)
        else:
            _require_gguf(self._source)

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
        settings = RuntimeSettings(self._n_ctx, self._n_threads, self._ram_cache_mb)
        self._loaded = _load(self._prepared.path, settings)
        return self._loaded
