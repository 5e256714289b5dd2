"""``response_match_score``: ROUGE-1 F-measure of the final response against the reference.

Scores are identical to google-adk 2.13.0, which tokenizes with a Unicode-aware tokenizer:

* NFKC, then lower case;
* CJK ideographs, kana and Hangul syllables: one token per character;
* Thai, Lao, Khmer, Myanmar: one token per grapheme cluster (a base letter and its marks);
* any other character that is neither alphanumeric nor a combining mark separates words;
* words with non-ASCII characters are kept whole and not stemmed; ASCII words go through
  rouge-score's tokenizer with the Porter stemmer (which only stems words over 3 characters).

The F-measure is rouge-score's: ``2PR / (P + R)`` over clipped unigram counts, 0 when nothing
overlaps (so two empty texts score 0.0, as in ADK). The speed comes from doing the per-character
work in C (a ``str.translate`` table filled in on first sight of each character) and memoising
the tokens of each piece between spaces, of each word and of each text; the numbers are
unchanged, which ``tests/metrics/test_adk_differential.py`` checks against ADK itself.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from assay.config import DEFAULT_CRITERIA, BaseCriterion
from assay.evalset.case import EvalCase
from assay.evalset.content import content_text
from assay.evalset.invocation import Invocation
from assay.metrics.base import (
    MetricInfo,
    MetricResult,
    PerInvocationResult,
    mean_result,
    not_evaluated,
    paired_or_reason,
    status_for,
)
from assay.metrics.declaration import MetricDeclaration


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0x3040 <= code <= 0x30FF  # hiragana, katakana
        or 0xAC00 <= code <= 0xD7AF  # Hangul syllables
    )


def _is_unspaced_script(code: int) -> bool:
    return (
        0x0E00 <= code <= 0x0EFF  # Thai, Lao
        or 0x1780 <= code <= 0x17FF  # Khmer
        or 0x1000 <= code <= 0x109F  # Myanmar
    )


class _CharMap(dict[int, str]):
    """A ``str.translate`` table: what ADK's tokenizer turns each character into.

    Filled in on first sight of each character, so the per-character work runs in C afterwards.
    """

    def __missing__(self, code: int) -> str:
        char = chr(code)
        is_mark = unicodedata.category(char).startswith("M")
        if _is_cjk(code):
            out = f" {char} "  # a token of its own
        elif _is_unspaced_script(code):
            out = char if is_mark else f" {char}"  # a mark stays with its base letter
        elif char.isalnum() or is_mark:
            out = char
        else:
            out = " "  # a separator
        self[code] = out
        return out


_CHAR_MAP = _CharMap()


@lru_cache(maxsize=1)
def _rouge_score() -> tuple[Any, Any, Any]:
    """rouge-score's tokenizer and F-measure with one Porter stemmer, imported on first use
    (runs without ROUGE should not pay for it)."""
    from rouge_score import tokenize as rouge_tokenize

    return rouge_tokenize.tokenize, _porter_module().PorterStemmer(), _fmeasure


def _fmeasure(precision: float, recall: float) -> float:
    """rouge-score's ``scoring.fmeasure``, the same expression (so the same float): its module
    imports numpy (0.13 s of a run's start) for aggregators assay does not use."""
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0


_PORTER_NEEDS = (
    *("nltk", "nltk.stem", "nltk.stem.porter"),
    *("nltk.stem.api", "nltk.redos", "nltk.termsec"),
)
"""The packages stood in for, the stemmer's module and the modules it imports."""


def _porter_module() -> ModuleType:
    """nltk's ``nltk.stem.porter``, without running ``nltk/__init__.py`` unless nltk is already
    imported: that imports all of nltk, scipy and scikit-learn (over a second of CPU), for a
    module that needs three small others. They are loaded under stand-ins for the packages
    ``nltk`` and ``nltk.stem``, then every name is taken out of ``sys.modules`` again, so an
    ``import nltk`` afterwards loads nltk whole, as if this had never run."""
    if "nltk" in sys.modules:
        return importlib.import_module("nltk.stem.porter")
    spec = importlib.util.find_spec("nltk")
    if spec is None or not spec.submodule_search_locations:
        return importlib.import_module("nltk.stem.porter")  # let the import say what is wrong
    root = Path(next(iter(spec.submodule_search_locations)))
    stand_ins = [ModuleType("nltk"), ModuleType("nltk.stem")]
    stand_ins[0].__path__ = [str(root)]
    stand_ins[1].__path__ = [str(root / "stem")]
    for stand_in in stand_ins:
        sys.modules[stand_in.__name__] = stand_in
    try:
        return importlib.import_module("nltk.stem.porter")
    except Exception:  # an nltk whose stemmer needs more of nltk: import it whole instead
        for name in [n for n in sys.modules if n == "nltk" or n.startswith("nltk.")]:
            sys.modules.pop(name, None)
        stand_ins.clear()
        return importlib.import_module("nltk.stem.porter")
    finally:
        if stand_ins:
            for name in _PORTER_NEEDS:
                sys.modules.pop(name, None)


class _WordTokens(dict[str, tuple[str, ...]]):
    """The tokens of each word seen (filled in on first sight, so that a word seen again costs
    one lookup in C): an ASCII word's are rouge-score's (itself, stemmed when over 3
    characters), any other word is kept whole. Emptied when it holds ``_MAX_WORDS``."""

    def __missing__(self, word: str) -> tuple[str, ...]:
        if len(self) >= _MAX_WORDS:
            self.clear()
        if word.isascii():
            tokenize_words, stemmer, _ = _rouge_score()
            tokens = tuple(tokenize_words(word, stemmer))
        else:
            tokens = (word,)
        self[word] = tokens
        return tokens


_MAX_WORDS = 1 << 16
_WORD_TOKENS = _WordTokens()


class _PieceTokens(dict[str, tuple[str, ...]]):
    """The tokens of each piece of text seen between whitespace, once NFKC-normalised and
    lower-cased (filled in on first sight, emptied when it holds ``_MAX_PIECES``).

    A text's tokens are its pieces' tokens in turn: every character ``str.split`` splits on is
    a separator to ADK's tokenizer, and the rest of its work is character by character. Pieces
    repeat across texts far more than texts do (the 30,074 responses and references of a 5,000
    case benchmark: 29,996 distinct texts, 900,010 pieces, 1,113 distinct), so each is
    translated and split into words once."""

    def __missing__(self, piece: str) -> tuple[str, ...]:
        if len(self) >= _MAX_PIECES:
            self.clear()
        words = piece.translate(_CHAR_MAP).split()
        tokens = tuple(chain.from_iterable(map(_WORD_TOKENS.__getitem__, words)))
        self[piece] = tokens
        return tokens


_MAX_PIECES = 1 << 16
_PIECE_TOKENS = _PieceTokens()


@lru_cache(maxsize=1 << 14)
def tokenize(text: str) -> tuple[str, ...]:
    """The tokens ADK 2.13.0's ROUGE sees for ``text`` (stemmed ASCII words, whole others)."""
    if not text.isascii():  # NFKC leaves ASCII alone
        text = unicodedata.normalize("NFKC", text)
    pieces = text.lower().split()
    return tuple(chain.from_iterable(map(_PIECE_TOKENS.__getitem__, pieces)))


def clear_caches() -> None:
    """Forget every memoised tokenisation (for cold-start timings; results never change)."""
    tokenize.cache_clear()
    _PIECE_TOKENS.clear()
    _WORD_TOKENS.clear()
    _CHAR_MAP.clear()


def rouge1_fmeasure(candidate: str, reference: str) -> float:
    """ROUGE-1 F-measure of ``candidate`` against ``reference``, as rouge-score computes it."""
    target_tokens = tokenize(reference)
    prediction_tokens = tokenize(candidate)
    prediction = Counter(prediction_tokens)
    overlap = 0
    for token, count in Counter(target_tokens).items():
        found = prediction.get(token)
        if found:
            overlap += count if count < found else found
    precision = overlap / max(len(prediction_tokens), 1)
    recall = overlap / max(len(target_tokens), 1)
    fmeasure: float = _rouge_score()[2](precision, recall)
    return fmeasure


class ResponseMatchMetric:
    """Scores the final response's word overlap with the reference (ROUGE-1 F, averaged)."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="response_match_score",
        description="ROUGE-1 F-measure of the final response against the expected response.",
        needs_expected=True,
    )

    def __init__(self, criterion: BaseCriterion) -> None:
        self.criterion = criterion

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Score every invocation's final response against the expected one and average."""
        reason = paired_or_reason(actual, expected)
        if reason is not None or expected is None:
            return not_evaluated(self.info.name, self.criterion, actual, reason or "", expected)
        threshold = self.criterion.threshold
        per_invocation = []
        for act, exp in zip(actual, expected, strict=True):
            score = rouge1_fmeasure(
                content_text(act.final_response), content_text(exp.final_response)
            )
            per_invocation.append(
                PerInvocationResult(act, exp, score, status_for(score, threshold))
            )
        return mean_result(self.info.name, self.criterion, per_invocation)


DECLARATION = MetricDeclaration(
    ResponseMatchMetric,
    applies_to="conversation",
    default_threshold=DEFAULT_CRITERIA.get(ResponseMatchMetric.info.name),
    report="overlap",
)
"""What ``response_match_score`` is (:class:`~assay.metrics.declaration.MetricDeclaration`)."""
