"""``response_match_score``: ROUGE-1 F-measure of the final response against the reference.

Scores are identical to google-adk 2.13.0, which tokenizes with a Unicode-aware tokenizer:

* NFKC, then lower case;
* CJK ideographs, kana and Hangul syllables: one token per character;
* Thai, Lao, Khmer, Myanmar: one token per grapheme cluster (a base letter and its marks);
* any other character that is neither alphanumeric nor a combining mark separates words;
* words with non-ASCII characters are kept whole and not stemmed; ASCII words go through
  rouge-score's tokenizer with the Porter stemmer (which only stems words over 3 characters).

The F-measure is rouge-score's: ``2PR / (P + R)`` over clipped unigram counts, 0 when nothing
overlaps (so two empty texts score 0.0, as in ADK). The speed comes from memoising the stemmer
(through rouge-score's own tokenizer hook) and the tokens of each text; the numbers are unchanged.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import ClassVar

from nltk.stem import porter
from rouge_score import scoring
from rouge_score import tokenize as rouge_tokenize

from assay.config import BaseCriterion
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


class _MemoStemmer:
    """rouge-score's Porter stemmer, remembering every word it has stemmed."""

    def __init__(self) -> None:
        self._stem = lru_cache(maxsize=1 << 16)(porter.PorterStemmer().stem)

    def stem(self, word: str) -> str:
        stemmed: str = self._stem(word)
        return stemmed


_STEMMER = _MemoStemmer()


def _ascii_tokens(word: str) -> list[str]:
    tokens: list[str] = rouge_tokenize.tokenize(word, _STEMMER)
    return tokens


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


def _words(text: str) -> list[str]:
    """Split normalised text into words and single-character / grapheme tokens."""
    pieces: list[str] = []
    for char in text:
        code = ord(char)
        if code < 0x80:
            pieces.append(char if char.isalnum() else " ")
        elif _is_cjk(code):
            pieces.append(f" {char} ")
        elif _is_unspaced_script(code):
            is_mark = unicodedata.category(char).startswith("M")
            pieces.append(char if is_mark else f" {char}")
        elif char.isalnum() or unicodedata.category(char).startswith("M"):
            pieces.append(char)
        else:
            pieces.append(" ")
    return "".join(pieces).split()


@lru_cache(maxsize=1 << 14)
def tokenize(text: str) -> tuple[str, ...]:
    """The tokens ADK 2.13.0's ROUGE sees for ``text`` (stemmed ASCII words, whole others)."""
    if text.isascii():
        # NFKC leaves ASCII alone and every non-alphanumeric ASCII character separates words,
        # which is exactly what rouge-score's own tokenizer does with the whole text.
        return tuple(rouge_tokenize.tokenize(text, _STEMMER))
    normalised = unicodedata.normalize("NFKC", text).lower()
    tokens: list[str] = []
    for word in _words(normalised):
        if word.isascii():
            tokens.extend(_ascii_tokens(word))
        else:
            tokens.append(word)
    return tuple(tokens)


def rouge1_fmeasure(candidate: str, reference: str) -> float:
    """ROUGE-1 F-measure of ``candidate`` against ``reference``, as rouge-score computes it."""
    target = Counter(tokenize(reference))
    prediction = Counter(tokenize(candidate))
    overlap = 0
    for token, count in target.items():
        overlap += min(count, prediction[token])
    precision = overlap / max(prediction.total(), 1)
    recall = overlap / max(target.total(), 1)
    fmeasure: float = scoring.fmeasure(precision, recall)
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
