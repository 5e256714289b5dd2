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
the tokens of each word and of each text; the numbers are unchanged, which
``tests/metrics/test_adk_differential.py`` checks against ADK itself.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
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

_ASCII_SEPARATORS = re.compile(r"[^a-z0-9]+")


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
    (nltk takes seconds to import; runs without ROUGE should not pay for it)."""
    from nltk.stem import porter
    from rouge_score import scoring
    from rouge_score import tokenize as rouge_tokenize

    return rouge_tokenize.tokenize, porter.PorterStemmer(), scoring.fmeasure


@lru_cache(maxsize=1 << 16)
def _ascii_word_tokens(word: str) -> tuple[str, ...]:
    """rouge-score's tokens for one ``[a-z0-9]+`` word: itself, stemmed when over 3 characters."""
    tokenize_words, stemmer, _ = _rouge_score()
    return tuple(tokenize_words(word, stemmer))


@lru_cache(maxsize=1 << 14)
def tokenize(text: str) -> tuple[str, ...]:
    """The tokens ADK 2.13.0's ROUGE sees for ``text`` (stemmed ASCII words, whole others)."""
    if text.isascii():
        # NFKC leaves ASCII alone, and every ASCII character but [a-z0-9] (after lower-casing)
        # separates words, exactly as in rouge-score's own tokenizer.
        words = _ASCII_SEPARATORS.sub(" ", text.lower()).split()
    else:
        words = unicodedata.normalize("NFKC", text).lower().translate(_CHAR_MAP).split()
    tokens: list[str] = []
    for word in words:
        if word.isascii():
            tokens.extend(_ascii_word_tokens(word))
        else:
            tokens.append(word)
    return tuple(tokens)


def clear_caches() -> None:
    """Forget every memoised tokenisation (for cold-start timings; results never change)."""
    tokenize.cache_clear()
    _ascii_word_tokens.cache_clear()
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
