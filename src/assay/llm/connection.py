"""Why a connection to a server failed, in a few words: one wording for every message that says
so, the OpenAI-compatible backend's (:mod:`assay.llm.backends.openai_compat`) and the HTTP agent's
(:mod:`assay.agents.http`)."""

from __future__ import annotations

import socket


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
