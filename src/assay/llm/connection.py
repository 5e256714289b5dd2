"""Where a server is and why a connection to it failed: one reading of the variables that name a
server (``OPENAI_BASE_URL``, ``OLLAMA_BASE_URL``, ``OLLAMA_HOST``) and one wording for every
message that says a connection failed, shared by the judges (:mod:`assay.llm.backends.openai_compat`)
and the agents (:mod:`assay.agents.model`, :mod:`assay.agents.http`)."""

from __future__ import annotations

import socket
from collections.abc import Mapping

import httpx

from assay.llm.redact import redact

OLLAMA_HOST = "localhost:11434"
"""Ollama's address when ``OLLAMA_HOST`` is not set."""
OLLAMA_PORT = 11434


class ServerUrlError(ValueError):
    """A variable that names a server holds something that is not a usable http(s) URL; the
    message names the variable and gives an example (callers add whose setting it is)."""


def connect_reason(error: BaseException) -> str:
    """Why a connection failed, in a few words, from the innermost cause httpx wraps:
    ``connection refused``, ``host not found``, else the error's own text."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return "host not found"
        cause = cause.__cause__ or cause.__context__
    return str(error) or type(error).__name__


def server_url(value: str, variable: str) -> httpx.URL:
    """``value`` (the setting of ``variable``) as an http(s) URL with a host and no credentials;
    raises :class:`ServerUrlError` saying what to write instead."""
    try:
        url = httpx.URL(value)
    except httpx.InvalidURL:
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise ServerUrlError(
            f"{variable}={redact(value)!r} is not an http(s) URL; "
            f"e.g. {variable}=http://127.0.0.1:8000/v1"
        )
    if url.userinfo:  # it would show in every message that names the server
        raise ServerUrlError(
            f"{variable} carries credentials (user:password@); "
            "give the key in OPENAI_API_KEY instead"
        )
    return url


def ollama_base_url(env: Mapping[str, str]) -> str:
    """The base URL (ending in ``/v1``) of the Ollama server ``env`` names: ``OLLAMA_BASE_URL``
    as given, else ``OLLAMA_HOST`` read as Ollama reads it (``host``, ``host:port`` or a URL;
    port 11434 when there is no scheme and no port), else ``localhost:11434``. Raises
    :class:`ServerUrlError` for a value that is no http(s) URL."""
    explicit = (env.get("OLLAMA_BASE_URL") or "").strip()
    if explicit:
        return str(server_url(explicit, "OLLAMA_BASE_URL")).rstrip("/")
    host = (env.get("OLLAMA_HOST") or "").strip() or OLLAMA_HOST
    bare = "://" not in host
    url = server_url(f"http://{host}" if bare else host, "OLLAMA_HOST")
    if bare and url.port is None:
        url = url.copy_with(port=OLLAMA_PORT)
    base = str(url).rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"
