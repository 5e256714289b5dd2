"""``scripted:<file>``: a backend that answers from a script, for tests and demos.

A script is a list of replies given in turn (starting again after the last), or rules::

    rules:
      - match: "capital of France"     # a regex searched in the last user message
        reply: '{"is_the_agent_response_valid": "valid"}'
    default: "no"                      # when no rule matches (optional)

A reply written as a JSON object or list (rather than a string) is sent as its JSON text. In
Python, :class:`ScriptedBackend` also takes a function of the request, which returns the reply or
an :class:`~assay.llm.base.LlmError` (returned or raised, to simulate a failing call). Token usage
counts words, a stand-in for tokens.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from assay._internal.files import load_data
from assay.errors import InputError
from assay.llm.base import (
    LlmCallError,
    LlmError,
    LlmRequest,
    LlmResponse,
    LlmUnavailableError,
    TokenUsage,
)

Reply: TypeAlias = str | LlmError
ReplyFunction: TypeAlias = Callable[[LlmRequest], Reply]

SCRIPT_FORMS = (
    "a script file is a JSON or YAML list of replies used in turn, or "
    '{"rules": [{"match": "<regex searched in the last user message>", "reply": "..."}], '
    '"default": "..."}'
)


def _reply_text(value: Any) -> Any:
    return value if isinstance(value, str) else json.dumps(value)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptRule(_Strict):
    """Reply ``reply`` when ``match`` (a regex) is found in the last user message."""

    match: re.Pattern[str]
    reply: str

    @field_validator("reply", mode="before")
    @classmethod
    def _json_reply(cls, value: Any) -> Any:
        return _reply_text(value)


class ScriptRules(_Strict):
    """Rules tried in order; ``default`` answers when none matches."""

    rules: list[ScriptRule]
    default: str | None = None

    @field_validator("default", mode="before")
    @classmethod
    def _json_default(cls, value: Any) -> Any:
        return None if value is None else _reply_text(value)

    def reply_to(self, request: LlmRequest) -> Reply:
        """The reply of the first rule that matches the last user message, else the default."""
        text = last_user_text(request)
        for rule in self.rules:
            if rule.match.search(text):
                return rule.reply
        if self.default is not None:
            return self.default
        return LlmCallError(
            f"scripted: no rule matches the last user message and the script has no default "
            f"({text[:80]!r})",
            retryable=False,
        )


def last_user_text(request: LlmRequest) -> str:
    """The content of the request's last user message ('' if it has none)."""
    for message in reversed(request.messages):
        if message.role == "user":
            return message.content
    return ""


def _words(text: str) -> int:
    return len(text.split())


class ScriptedBackend:
    """Answers every request from a list of replies, a set of rules, or a function.

    ``requests`` keeps every request received, in order, for tests to inspect.
    """

    def __init__(
        self,
        replies: str | Sequence[Reply] | ScriptRules | ReplyFunction,
        *,
        model: str = "scripted:",
        identity: str | None = None,
    ) -> None:
        if isinstance(replies, str):
            replies = [replies]
        if isinstance(replies, Sequence) and not replies:
            raise LlmUnavailableError(f"scripted: the script has no replies; {SCRIPT_FORMS}")
        self._replies = replies
        self._model = model
        self._identity = identity or _identity_of(replies)
        self._turn = 0
        self.requests: list[LlmRequest] = []

    @classmethod
    def from_file(cls, path: Path, *, model: str | None = None) -> ScriptedBackend:
        """Read a script file (JSON, or YAML by extension); a bad file is an
        :class:`~assay.llm.base.LlmUnavailableError` saying what is wrong."""
        try:
            data = load_data(path, InputError)
        except InputError as exc:
            raise LlmUnavailableError(f"scripted: cannot read the script: {exc}") from None
        digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
        return cls(_parse_script(data, path), model=model or f"scripted:{path}", identity=digest)

    @property
    def name(self) -> str:
        """Always ``scripted``."""
        return "scripted"

    @property
    def model(self) -> str:
        """The model string (``scripted:<path>``)."""
        return self._model

    def cache_identity(self) -> Mapping[str, Any]:
        """A digest of the script, so a changed script is not answered from the cache."""
        return {"script": self._identity}

    async def generate(self, request: LlmRequest) -> LlmResponse:
        """The next reply for ``request``, or the scripted error raised."""
        self.requests.append(request)
        reply = self._next(request)
        if isinstance(reply, LlmError):
            raise reply
        prompt_words = sum(_words(message.content) for message in request.messages)
        usage = TokenUsage(prompt_tokens=prompt_words, completion_tokens=_words(reply), calls=1)
        return LlmResponse(text=reply, model=self._model, usage=usage)

    async def aclose(self) -> None:
        """Nothing to release."""

    def _next(self, request: LlmRequest) -> Reply:
        replies = self._replies
        if isinstance(replies, ScriptRules):
            return replies.reply_to(request)
        if isinstance(replies, Sequence):
            reply = replies[self._turn % len(replies)]
            self._turn += 1
            return reply
        return replies(request)


def _identity_of(replies: object) -> str:
    if isinstance(replies, ScriptRules):
        return hashlib.sha256(replies.model_dump_json().encode()).hexdigest()
    if isinstance(replies, Sequence):
        return hashlib.sha256(json.dumps([str(r) for r in replies]).encode()).hexdigest()
    return f"function:{getattr(replies, '__qualname__', type(replies).__qualname__)}"


def _parse_script(data: Any, path: Path) -> list[Reply] | ScriptRules:
    if isinstance(data, list):
        if not data:
            raise LlmUnavailableError(f"scripted: {path} has no replies; {SCRIPT_FORMS}")
        return [_reply_text(item) for item in data]
    if not isinstance(data, dict):
        raise LlmUnavailableError(f"scripted: {path} is not a script; {SCRIPT_FORMS}")
    try:
        return ScriptRules.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or '(top)'}: {error['msg']}"
            for error in exc.errors()
        )
        raise LlmUnavailableError(f"scripted: {path}: {problems}; {SCRIPT_FORMS}") from None
