"""From a model string to the backend that serves it.

======================================  ============================================================
``openai:<model>``                      an OpenAI-compatible API (``OPENAI_API_KEY``,
                                        ``OPENAI_BASE_URL``)
``ollama:<model>``                      an Ollama server (``OLLAMA_HOST``, ``OLLAMA_BASE_URL``)
``litellm:<provider>/<model>``          any provider LiteLLM knows (``assay[litellm]``)
``gemini-2.5-flash``, Vertex names      Gemini, as ADK names it (``assay[gemini]``)
``<provider>/<model>``                  LiteLLM, as ADK 2.13 does for such names
``local:``, ``local:<name>|<.gguf>``    the embedded offline judge (``assay[local]``)
``scripted:<file>``                     replies from a JSON/YAML script (tests, demos)
======================================  ============================================================

Every failure is an :class:`~assay.llm.base.LlmUnavailableError` whose message says how to fix
it: the extra to install, the variable to set, or the forms accepted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from assay.llm.backends.gemini import is_gemini_model
from assay.llm.base import LlmBackend, LlmUnavailableError
from assay.llm.redact import redact

FORMS = (
    "openai:<model> (OPENAI_API_KEY, OPENAI_BASE_URL), ollama:<model>, "
    "litellm:<provider>/<model> or ADK's <provider>/<model> (pip install 'assay[litellm]'), "
    "a Gemini model such as gemini-2.5-flash (pip install 'assay[gemini]', GOOGLE_API_KEY), "
    "local: or local:<name> or local:<path to .gguf> (the offline judge; "
    "pip install 'assay[local]'), scripted:<path to a JSON or YAML script>"
)
"""The accepted model strings, for error messages."""


def _scripted(model: str) -> LlmBackend:
    from assay.llm.backends.scripted import SCRIPT_FORMS, ScriptedBackend

    rest = model.removeprefix("scripted:").strip()
    if not rest:
        raise LlmUnavailableError(
            f"scripted: needs a script file: scripted:<path>; {SCRIPT_FORMS}. "
            "In Python, pass replies, rules or a function to ScriptedBackend directly"
        )
    path = Path(rest).expanduser()
    if not path.is_file():
        raise LlmUnavailableError(f"scripted: the script file {rest!r} does not exist")
    return ScriptedBackend.from_file(path, model=model)


def _openai_compat(model: str, env: Mapping[str, str]) -> LlmBackend:
    from assay.llm.backends.openai_compat import from_model_string

    return from_model_string(model, env)


def _litellm(model: str) -> LlmBackend:
    from assay.llm.backends.litellm import LiteLLMBackend

    return LiteLLMBackend(model)


def _gemini(model: str, env: Mapping[str, str]) -> LlmBackend:
    from assay.llm.backends.gemini import GeminiBackend

    return GeminiBackend(model, env=env)


def _local(model: str, env: Mapping[str, str]) -> LlmBackend:
    from assay.llm.backends.local import LocalBackend

    return LocalBackend(model, env=env)


_OPENAI_NAMES = re.compile(r"(gpt-|chatgpt-|o[1-9](-|$))", re.IGNORECASE)
"""The start of an OpenAI model name (``gpt-4o``, ``o3-mini``), which needs ``openai:``."""


def _unknown(model: str) -> LlmUnavailableError:
    if not model.strip():
        return LlmUnavailableError(f"no judge model given; accepted forms: {FORMS}")
    if "://" in model:
        shown = redact(model)
        return LlmUnavailableError(
            f"'{shown}' is a URL, not a model; to use an OpenAI-compatible server there, set "
            f"OPENAI_BASE_URL={shown} and name the model it serves: "
            f"OPENAI_BASE_URL={shown} --judge-model openai:<model>"
        )
    prefix, colon, _ = model.partition(":")
    hint = ""
    if colon and "/" not in prefix and prefix:
        hint = f"unknown prefix {prefix + ':'!r}; "
    elif not colon and _OPENAI_NAMES.match(model):
        return LlmUnavailableError(
            f"cannot tell which backend serves the model {model!r}: OpenAI's models are "
            f"written openai:<model>: --judge-model openai:{model} (with OPENAI_API_KEY set)"
        )
    return LlmUnavailableError(
        f"cannot tell which backend serves the model {model!r}: {hint}accepted forms: {FORMS}"
    )


def resolve_backend(model: str, *, env: Mapping[str, str] | None = None) -> LlmBackend:
    """The backend for ``model``; ``env`` (default ``os.environ``) supplies keys and settings.

    Raises :class:`~assay.llm.base.LlmUnavailableError` saying how to make ``model`` usable.
    """
    env = os.environ if env is None else env
    model = model.strip()
    prefix, colon, _ = model.partition(":")
    if colon:
        if prefix in ("openai", "ollama"):
            return _openai_compat(model, env)
        if prefix == "litellm":
            return _litellm(model)
        if prefix == "local":
            return _local(model, env)
        if prefix == "scripted":
            return _scripted(model)
        if prefix == "gemini":  # ADK's "<class>:<model>" override
            return _gemini(model, env)
    if is_gemini_model(model):
        return _gemini(model, env)
    provider = model.partition("/")[0]
    if provider and ":" not in provider and "/" in model and not model.startswith("projects/"):
        return _litellm(model)
    raise _unknown(model)


__all__ = ["FORMS", "resolve_backend"]
