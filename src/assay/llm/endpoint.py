"""Which provider endpoint a backend's calls go to, and the limit every client calling it shares.

A server that serves 4 requests at once serves 4 whatever model names they carry, so the calls
in flight are bounded (and adapted, :mod:`~assay.llm.adaptive`) per *endpoint*, not per model
string: every metric's judge and the simulated user calling one server take their slots from one
:class:`Endpoint`. :func:`endpoint_key` names it:

* an OpenAI-compatible server (``openai:``, ``ollama:``) by its scheme, host and port: two
  models on one Ollama, vLLM or llama.cpp server, or behind one gateway, share a limit;
* except the hosted APIs whose rate limits are per model (:data:`PER_MODEL_HOSTS`: OpenAI's
  own ``api.openai.com``, Gemini's OpenAI-compatible endpoint), named by host and model;
* any other backend (Gemini through google-genai, LiteLLM, the embedded judge, a scripted one)
  by its model string: the hosted providers behind them limit each model on its own, and the
  embedded judge is one model per process.

The key names no secret: a base URL's user, password, path and query are left out.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from assay.llm.adaptive import AdaptiveLimit, AdaptivePolicy
from assay.llm.base import LlmBackend
from assay.llm.slots import PromptSlots

PER_MODEL_HOSTS = frozenset({"api.openai.com", "generativelanguage.googleapis.com"})
"""Hosts whose rate limits are per model (and per account), not per server: each model called
there has a limit of its own."""

_SERVER_BACKENDS = frozenset({"openai", "ollama"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def endpoint_key(backend: LlmBackend) -> str:
    """The endpoint ``backend`` calls, as a key (see the module docstring):
    ``http://127.0.0.1:11434``, ``https://api.openai.com:443 openai:gpt-4o-mini``,
    ``gemini gemini-2.5-flash``."""
    base_url = getattr(backend, "base_url", None) if backend.name in _SERVER_BACKENDS else None
    server = _server(base_url) if isinstance(base_url, str) else None
    if server is None:
        return f"{backend.name} {backend.model}"
    address, host = server
    if host in PER_MODEL_HOSTS:
        return f"{address} {backend.model}"
    return address


def _server(url: str) -> tuple[str, str] | None:
    """``scheme://host:port`` of ``url`` and its host (None when it names no host)."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:
        return None
    if not host:
        return None
    scheme = parts.scheme.lower() or "http"
    port = port or _DEFAULT_PORTS.get(scheme)
    shown = f"[{host}]" if ":" in host else host
    return (f"{scheme}://{shown}:{port}" if port else f"{scheme}://{shown}"), host


class Endpoint:
    """The calls in flight to one endpoint, shared by every client calling it: ``concurrency``
    slots (:class:`~assay.llm.slots.PromptSlots`) and, unless ``adaptive`` is False, the
    :class:`~assay.llm.adaptive.AdaptiveLimit` they follow (``concurrency`` its ceiling; an
    :class:`~assay.llm.adaptive.AdaptivePolicy` changes its constants)."""

    def __init__(self, key: str, concurrency: int, adaptive: bool | AdaptivePolicy = True) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.key = key
        self.concurrency = concurrency
        self.slots = PromptSlots(concurrency)
        self.adaptive: AdaptiveLimit | None = None
        if adaptive is not False:
            policy = adaptive if isinstance(adaptive, AdaptivePolicy) else None
            self.adaptive = AdaptiveLimit(concurrency, policy)


class Endpoints:
    """The :class:`Endpoint` of each key, made on first use: what a run's clients share."""

    def __init__(self, adaptive: bool | AdaptivePolicy = True) -> None:
        self.adaptive = adaptive
        self._found: dict[str, Endpoint] = {}

    def for_backend(self, backend: LlmBackend, concurrency: int) -> Endpoint:
        """The endpoint ``backend`` calls; made with ``concurrency`` slots when it is the first
        backend to call it (later ones share those)."""
        key = endpoint_key(backend)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = Endpoint(key, concurrency, self.adaptive)
        return found

    def __len__(self) -> int:
        return len(self._found)
