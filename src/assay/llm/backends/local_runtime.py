"""The embedded judge's runtime: llama.cpp in this process, from xllamacpp's prebuilt wheel.

xllamacpp (Xorbits) embeds llama.cpp's server. A request is a llama-server request dict, answered
in this process by ``Server.handle_completions`` or ``handle_chat_completions``, which release the
GIL while the model works. Tokenizing, detokenizing and the chat template are served only on the
server's own HTTP listener, which binds 127.0.0.1 on a free port; every request to it must carry a
key made for this process (``secrets.token_urlsafe``), so nothing else on the machine can use it.

The wheel is built for AVX2 without AMX or AVX-512 code, so it runs on any x86-64 CPU of the last
decade with no build step; it needs the system's GNU OpenMP library (``libgomp.so.1``).

What cannot load is explained, never a traceback: a missing runtime or ``libgomp`` says what to
install, a file that is not GGUF or that llama.cpp refuses says so, and too little free memory
says how much the model needs (:class:`~assay.llm.base.LlmUnavailableError`, so every judged
metric of a run becomes NOT_EVALUATED with that reason while the rest goes on).
"""

from __future__ import annotations

import importlib
import importlib.util
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.llm.base import LlmCallError, LlmUnavailableError

INSTALL_RUNTIME = "pip install 'assay[local]'"
"""The command that installs the runtime (the ``xllamacpp`` wheel, no compiler needed)."""
INSTALL_LIBGOMP = (
    "apt-get install libgomp1 (Debian, Ubuntu), dnf install libgomp (Fedora, RHEL) or "
    "apk add libgomp (Alpine)"
)
MISSING_RUNTIME = (
    "the local judge needs its runtime, xllamacpp, which is not installed; install it with: "
    f"{INSTALL_RUNTIME} (a prebuilt wheel: no compiler, no build flags)"
)
_HTTP_TIMEOUT = 60.0


def runtime_available() -> bool:
    """Whether xllamacpp is installed (nothing is imported)."""
    return importlib.util.find_spec("xllamacpp") is not None


def import_runtime() -> Any:
    """The ``xllamacpp`` module, imported on first use (it loads a native library)."""
    if not runtime_available():
        raise LlmUnavailableError(MISSING_RUNTIME)
    try:
        return importlib.import_module("xllamacpp")
    except (ImportError, OSError) as exc:
        if "libgomp" in str(exc):
            raise LlmUnavailableError(
                "the local judge's runtime (xllamacpp) needs the system library libgomp.so.1 "
                f"(GNU OpenMP), which this machine lacks; install it: {INSTALL_LIBGOMP}"
            ) from None
        raise LlmUnavailableError(
            f"the local judge's runtime (xllamacpp) cannot be loaded: {exc}; reinstall it with: "
            f"{INSTALL_RUNTIME}"
        ) from None


@dataclass(frozen=True)
class RuntimeSettings:
    """How a model is loaded: context size, CPU threads, and the RAM for cached prompts."""

    n_ctx: int
    n_threads: int
    ram_cache_mb: int


def _available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux's MemAvailable), None elsewhere."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def load_failure(path: Path, available: int | None = None) -> str:
    """Why llama.cpp most likely refused ``path``, and what to do about it."""
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
        size = path.stat().st_size
    except OSError as exc:
        return f"cannot read the local model {path}: {exc.strerror or exc}"
    if magic != b"GGUF":
        return (
            f"the local model {path} is not a GGUF file (it starts with {magic!r}, not b'GGUF'); "
            "convert it to GGUF or point local: at a .gguf file"
        )
    available = _available_memory() if available is None else available
    if available is not None and available < size + (256 << 20):
        return (
            f"not enough memory to load the local model {path}: it needs about "
            f"{(size + (256 << 20)) / 2**30:.1f} GiB and {available / 2**30:.1f} GiB is free; "
            "close other programs, lower ASSAY_LOCAL_N_CTX, or use a smaller model or a judge "
            "served elsewhere (--judge-model)"
        )
    return (
        f"llama.cpp could not load the local model {path}: the file is truncated or corrupt, or "
        "made for a newer llama.cpp; for a built-in model delete the file and it is assembled "
        "again from its packages"
    )


def _piece(raw: Any) -> bytes:
    """A token's text as the listener gives it: a string, or a list of bytes when it is not
    valid UTF-8 on its own."""
    if isinstance(raw, str):
        return raw.encode("utf-8")
    return bytes(int(b) & 0xFF for b in raw)


class Runtime:
    """One model loaded by llama.cpp, with one slot (calls are made one at a time by the caller)
    and llama-server's prompt cache: a request reuses the longest evaluated prefix it shares with
    the slot or with a prompt kept in RAM."""

    def __init__(self, path: Path, settings: RuntimeSettings) -> None:
        xllamacpp = import_runtime()
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = settings.n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = settings.n_threads
        params.cpuparams_batch.n_threads = settings.n_threads
        params.cache_ram_mib = settings.ram_cache_mb
        params.n_threads_http = 1
        params.warmup = False
        params.verbosity = 0
        key = secrets.token_urlsafe(32)
        params.api_keys = [key]
        try:
            self._server = xllamacpp.Server(params)
        except (RuntimeError, ValueError, OSError, MemoryError):
            raise LlmUnavailableError(load_failure(path)) from None
        self.n_ctx = settings.n_ctx
        import httpx  # here: `assay eval` imports this module for every run, most judge nothing

        self._http = httpx.Client(
            base_url=str(self._server.listening_address),
            headers={"Authorization": f"Bearer {key}"},
            timeout=_HTTP_TIMEOUT,
            trust_env=False,  # loopback: never through a proxy
        )
        self.bos = self.tokenize("", special=True, add_special=True)
        """The tokens llama.cpp starts a text with (``[bos]``, or none for models without)."""

    def _post(self, route: str, body: dict[str, Any]) -> Any:
        import httpx

        try:
            response = self._http.post(route, json=body)
            response.raise_for_status()
            return response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise LlmCallError(
                f"the local model's {route} failed: {type(exc).__name__}", retryable=False
            ) from None

    def pieces(
        self, text: str, *, special: bool, add_special: bool = False
    ) -> list[tuple[int, bytes]]:
        """``text`` as tokens with the bytes each stands for. ``special``: control-token text
        such as ``<|im_end|>`` becomes the control token (else it is plain text)."""
        body = {
            "content": text,
            "add_special": add_special,
            "parse_special": special,
            "with_pieces": True,
        }
        tokens = self._post("/tokenize", body)["tokens"]
        return [(int(t["id"]), _piece(t["piece"])) for t in tokens]

    def tokenize(self, text: str, *, special: bool, add_special: bool = False) -> list[int]:
        """``text`` as tokens (see :meth:`pieces`)."""
        body = {"content": text, "add_special": add_special, "parse_special": special}
        return [int(t) for t in self._post("/tokenize", body)["tokens"]]

    def detokenize(self, tokens: list[int]) -> bytes:
        """The text ``tokens`` stand for."""
        return str(self._post("/detokenize", {"tokens": tokens})["content"]).encode("utf-8")

    def template(self, messages: list[dict[str, str]]) -> str:
        """``messages`` in the model's chat template, ready for the assistant's answer."""
        return str(self._post("/apply-template", {"messages": messages})["prompt"])

    def prompt_tokens(self, messages: list[dict[str, str]]) -> list[int]:
        """The whole prompt of a chat, as the tokens the model evaluates."""
        tokens = self.tokenize(self.template(messages), special=True, add_special=True)
        bos = self.bos
        if bos and tokens[: 2 * len(bos)] == bos + bos:  # the template wrote it as well
            tokens = tokens[len(bos) :]
        return tokens

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """llama-server's ``/completion`` in this process."""
        return _checked(self._server.handle_completions(body), self.n_ctx)

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """llama-server's ``/v1/chat/completions`` in this process."""
        return _checked(self._server.handle_chat_completions(body), self.n_ctx)

    def close(self) -> None:
        """Stop the listener and free the model."""
        self._http.close()
        del self._server


def _checked(answer: Any, n_ctx: int) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise LlmCallError(
            f"the local model answered {type(answer).__name__}, not an object", retryable=False
        )
    error = answer.get("error")
    if error is None:
        return answer
    if isinstance(error, dict) and error.get("type") == "exceed_context_size_error":
        raise LlmCallError(
            f"the prompt has {error.get('n_prompt_tokens', 'more')} tokens, more than the local "
            f"model's context of {n_ctx}; set ASSAY_LOCAL_N_CTX to a larger number of tokens "
            "(more memory) or use a judge with a longer context",
            retryable=False,
        )
    message = error.get("message", error) if isinstance(error, dict) else error
    raise LlmCallError(f"the local model failed: {message}", retryable=False)
