"""Keep secrets out of messages: every LLM error passes through :func:`redact` before it is raised.

Three things are replaced with ``***``:

* the secret values a caller names (an API key passed on the command line);
* the values of environment variables whose names look secret (``*_KEY``, ``*_API_KEY``,
  ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``), when at least 8 characters long, so short flags such
  as ``DEBUG_KEY=1`` do not blank out every ``1`` in a message;
* text shaped like a credential: ``Bearer <token>``, ``sk-...`` and ``AIza...`` keys, and
  ``key=``/``token=`` query parameters in URLs.

The pattern of known values is compiled once per distinct set of values, so calling this on every
error message costs one regular-expression pass or two.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

MASK = "***"
MIN_SECRET_LENGTH = 8

_SECRET_NAME = re.compile(r"(?:_KEY|_TOKEN|_SECRET)$|PASSWORD", re.IGNORECASE)
_SHAPES = re.compile(
    r"(?P<bearer>\bBearer\s+)[A-Za-z0-9._~+/=\-]+"
    r"|(?P<param>[?&;](?:api[_-]?key|key|access[_-]?token|token)=)[^&#\s\"'<>]+"
    r"|\bsk-[A-Za-z0-9_\-]{8,}"
    r"|\bAIza[A-Za-z0-9_\-]{20,}",
    re.IGNORECASE,
)


def secret_env_values(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of the variables in ``env`` (default: the process environment) whose names
    look secret and whose values are long enough to be one."""
    source = os.environ if env is None else env
    names = [name for name in source if _SECRET_NAME.search(name)]
    return tuple(v for v in (source[name] for name in names) if len(v) >= MIN_SECRET_LENGTH)


@lru_cache(maxsize=32)
def _known_values_pattern(values: frozenset[str]) -> re.Pattern[str] | None:
    if not values:
        return None
    longest_first = sorted(values, key=len, reverse=True)
    return re.compile("|".join(re.escape(value) for value in longest_first))


def _mask_shape(match: re.Match[str]) -> str:
    prefix = match.group("bearer") or match.group("param") or ""
    return prefix + MASK


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with secrets replaced by ``***``: the given ``secrets``, the values of secret-looking
    environment variables, and credential-shaped strings (bearer tokens, ``sk-``/``AIza`` keys,
    ``key=`` URL parameters)."""
    values = {s for s in secrets if s} | set(secret_env_values())
    pattern = _known_values_pattern(frozenset(values))
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return _SHAPES.sub(_mask_shape, text)
