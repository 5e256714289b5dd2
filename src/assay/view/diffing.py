"""A word-level diff of two texts (the expected and the actual final answer on the case page).

The texts are cut into words, runs of punctuation and runs of whitespace, and
:class:`difflib.SequenceMatcher` aligns the two lists; adjacent pieces of one kind are merged,
so a page shows ``<del>old words</del><ins>new words</ins>`` rather than a tag per word. The
pieces are plain text: the page escapes each one (autoescape), so no answer can become markup.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["same", "del", "ins"]

_TOKENS = re.compile(r"\w+|[^\w\s]+|\s+")


@dataclass(frozen=True)
class Piece:
    """A run of text that both answers share (``same``), only the expected one has (``del``) or
    only the actual one has (``ins``)."""

    kind: Kind
    text: str


def tokens(text: str) -> list[str]:
    """``text`` as words, punctuation runs and whitespace runs; joined, they give it back."""
    return _TOKENS.findall(text)


def word_diff(expected: str, actual: str) -> list[Piece]:
    """The pieces that turn ``expected`` into ``actual``: the ``same`` and ``del`` pieces join to
    ``expected``, the ``same`` and ``ins`` pieces to ``actual``."""
    old, new = tokens(expected), tokens(actual)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    pieces: list[Piece] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            _add(pieces, "same", old[i1:i2])
            continue
        _add(pieces, "del", old[i1:i2])
        _add(pieces, "ins", new[j1:j2])
    return pieces


def _add(pieces: list[Piece], kind: Kind, words: list[str]) -> None:
    """Append ``words`` as a ``kind`` piece, merged into the last piece when it is of that kind."""
    if not words:
        return
    text = "".join(words)
    if pieces and pieces[-1].kind == kind:
        pieces[-1] = Piece(kind, pieces[-1].text + text)
    else:
        pieces.append(Piece(kind, text))


def changed_share(pieces: list[Piece]) -> float:
    """The share of non-space characters of both texts that the diff marks as changed (0 when
    the answers are the same, 1 when they share nothing)."""
    changed = sum(len("".join(p.text.split())) for p in pieces if p.kind != "same")
    same = sum(len("".join(p.text.split())) for p in pieces if p.kind == "same")
    total = changed + 2 * same
    return changed / total if total else 0.0
