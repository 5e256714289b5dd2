"""The closed choices of a structured answer, read off a server's log-probabilities, and a choice
rewritten.

A judge's verdict is a closed choice: a JSON string from an ``enum`` (``"valid"``/``"invalid"``)
or a boolean. Where the backend gives log-probabilities, the model's probability of each option
there is what a judge alignment thresholds (:mod:`assay.agreement.profile`). The embedded
runtime records its choices as it decodes (:mod:`assay.llm.backends.local_decode`); for an
OpenAI-compatible server :func:`choices_from_logprobs` finds each choice's literal in the answer
and reads the alternatives the server listed for the token that starts it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.llm.base import Choice

_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


@dataclass(frozen=True)
class Token:
    """One generated token as a server reports it: its text and the most likely alternatives
    at its place (``(text, logprob)``, the token itself among them)."""

    text: str
    alternatives: tuple[tuple[str, float], ...]


def tokens_from_openai(logprobs: object) -> list[Token] | None:
    """The tokens of an OpenAI ``choices[0].logprobs`` object; None when it has none."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content:
        return None
    tokens: list[Token] = []
    for entry in content:
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            return None
        alternatives = [
            (alt["token"], float(alt["logprob"]))
            for alt in entry.get("top_logprobs") or []
            if isinstance(alt, dict)
            and isinstance(alt.get("token"), str)
            and isinstance(alt.get("logprob"), int | float)
        ]
        if not alternatives and isinstance(entry.get("logprob"), int | float):
            alternatives = [(entry["token"], float(entry["logprob"]))]
        tokens.append(Token(entry["token"], tuple(alternatives)))
    return tokens


def choices_from_logprobs(
    text: str, schema: Mapping[str, Any] | None, tokens: Sequence[Token]
) -> tuple[Choice, ...]:
    """The closed choices of ``text`` (an answer to ``schema``) with each option's probability,
    from the alternatives of the token where each choice's literal starts. A choice whose
    options none of those alternatives begins is left out; so is everything when the tokens do
    not spell ``text``."""
    if schema is None or "".join(t.text for t in tokens) != text:
        return ()
    start = text.find("{")
    if start == -1:
        return ()
    try:
        scalars = list(_scan(text, start, ""))
    except (ValueError, IndexError):
        return ()
    ends = []
    position = 0
    for token in tokens:
        position += len(token.text)
        ends.append(position)
    out = []
    for path, offset, value in scalars:
        options = _options(schema, path)
        if options is None:
            continue
        literal = json.dumps(value, ensure_ascii=False)
        if literal not in options:
            continue
        found = _choice(text, tokens, ends, path, offset, literal, options)
        if found is not None:
            out.append(found)
    return tuple(out)


def rewrite(text: str, choice: Choice, option: str) -> str:
    """``text`` with ``choice``'s literal replaced by ``option``'s (as :class:`Choice` names
    options: a string's value, any other literal as is)."""
    old = _literal(choice.chosen)
    if text[choice.start : choice.start + len(old)] != old:
        return text
    return text[: choice.start] + _literal(option) + text[choice.start + len(old) :]


def _literal(option: str) -> str:
    return option if option in ("true", "false", "null") else json.dumps(option, ensure_ascii=False)


def _choice(
    text: str,
    tokens: Sequence[Token],
    ends: Sequence[int],
    path: str,
    offset: int,
    literal: str,
    options: Sequence[str],
) -> Choice | None:
    decisive = offset + 1 if literal.startswith('"') else offset
    index = next((i for i, end in enumerate(ends) if end > decisive), None)
    if index is None:
        return None
    token_start = ends[index] - len(tokens[index].text)
    before = text[token_start:decisive]
    mass = dict.fromkeys(options, 0.0)
    for alternative, logprob in tokens[index].alternatives:
        if not alternative.startswith(before):
            continue
        rest = alternative[len(before) :]
        bodies = [o[1:] if o.startswith('"') else o for o in options]
        matching = [
            o for o, body in zip(options, bodies, strict=True) if rest and _compatible(rest, body)
        ]
        for option in matching:
            mass[option] += math.exp(logprob) / len(matching)
    total = sum(mass.values())
    if total <= 0:
        return None
    named = {_name(o): m / total for o, m in mass.items()}
    return Choice(path=path, start=offset, chosen=_name(literal), probabilities=named)


def _compatible(rest: str, body: str) -> bool:
    return body.startswith(rest) or rest.startswith(body)


def _name(literal: str) -> str:
    value = json.loads(literal)
    return value if isinstance(value, str) else literal


def _options(schema: Mapping[str, Any], path: str) -> list[str] | None:
    """The JSON literals of the closed choice at ``path`` of ``schema``, or None if it is none."""
    node: Any = schema
    for part in _parts(path):
        if not isinstance(node, Mapping):
            return None
        if isinstance(part, int):
            node = node.get("items")
        else:
            node = (node.get("properties") or {}).get(part)
    if not isinstance(node, Mapping):
        return None
    enum = node.get("enum")
    if isinstance(enum, list) and len(enum) > 1:
        return [json.dumps(v, ensure_ascii=False) for v in enum]
    if node.get("type") == "boolean":
        return ["true", "false"]
    return None


def _parts(path: str) -> Iterator[str | int]:
    for piece in path.replace("[", ".[").split("."):
        if not piece:
            continue
        if piece.startswith("["):
            yield int(piece[1:-1])
        else:
            yield piece


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


def _scan(text: str, i: int, path: str) -> Iterator[tuple[str, int, Any]]:
    """Every scalar value of the JSON value at ``text[i]``: its path, offset and value. Raises
    ValueError on anything that is not JSON."""
    yield from _walk(text, _skip(text, i), path, [0])


def _walk(text: str, i: int, path: str, end: list[int]) -> Iterator[tuple[str, int, Any]]:
    """As :func:`_scan`; ``end[0]`` is set to the offset after the value."""
    opener = text[i]
    if opener not in "{[":
        value, after = _DECODER.raw_decode(text, i)
        yield path, i, value
        end[0] = after
        return
    closer = "}" if opener == "{" else "]"
    i = _skip(text, i + 1)
    count = 0
    while text[i] != closer:
        if opener == "{":
            key, i = _DECODER.raw_decode(text, i)
            i = _skip(text, i)
            if text[i] != ":":
                raise ValueError("expected ':'")
            inner = f"{path}.{key}" if path else str(key)
            i = _skip(text, i + 1)
        else:
            inner = f"{path}[{count}]"
        yield from _walk(text, i, inner, end)
        count += 1
        i = _skip(text, end[0])
        if text[i] == ",":
            i = _skip(text, i + 1)
        elif text[i] != closer:
            raise ValueError(f"expected ',' or {closer!r}")
    end[0] = i + 1
