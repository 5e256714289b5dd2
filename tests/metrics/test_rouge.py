"""``response_match_score`` (ROUGE-1 F): the ADK 2.13.0 behaviours pinned with concrete values.

See the team research note ``adk-2.13-deterministic.md``; ``test_adk_differential.py`` checks the
same behaviours (and many more texts) against ADK itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from _support import run_metric as _run
from rouge_score import rouge_scorer

from assay.config import BaseCriterion
from assay.evalset import EvalCase, Invocation
from assay.metrics import EvalStatus, MetricResult, ResponseMatchMetric, rouge1_fmeasure
from assay.metrics.rouge import clear_caches, tokenize


def _invocation(final_response: Any) -> Invocation:
    return Invocation.model_validate(
        {"user_content": {"parts": [{"text": "q"}]}, "final_response": final_response}
    )


def _metric_score(actual: Any, expected: Any, threshold: float = 0.8) -> MetricResult:
    act, exp = [_invocation(actual)], [_invocation(expected)]
    metric = ResponseMatchMetric(BaseCriterion(threshold=threshold))
    return _run(metric.evaluate(act, exp, EvalCase(eval_id="c", conversation=exp)))


@pytest.mark.parametrize("text", ["", "   \n", "😀 🎉", "!!! ... ¿¡", "— – …"])
def test_empty_texts_score_zero(text: str) -> None:
    assert tokenize(text) == ()
    assert rouge1_fmeasure(text, text) == 0.0


def test_identical_texts_score_one() -> None:
    assert rouge1_fmeasure("The weather is sunny.", "the weather is sunny") == 1.0


def test_non_ascii_words_are_not_stemmed() -> None:
    assert tokenize("straße strasse STRASSE") == ("straße", "strass", "strass")
    assert tokenize("Café naïve") == ("café", "naïve")
    assert rouge1_fmeasure("straße", "strasse") == 0.0


def test_ascii_words_use_the_porter_stemmer_above_three_characters() -> None:
    assert tokenize("running flies fly generous generate") == (
        "run",
        "fli",
        "fly",
        "gener",
        "gener",
    )
    assert tokenize("ties sized the runs") == ("tie", "size", "the", "run")
    assert rouge1_fmeasure("generous", "generate") == 1.0
    assert rouge1_fmeasure("flies", "fly") == 0.0


def test_cjk_kana_and_hangul_are_one_token_per_character() -> None:
    assert tokenize("天气很好") == ("天", "气", "很", "好")
    assert tokenize("こんにちは 안녕") == ("こ", "ん", "に", "ち", "は", "안", "녕")
    assert rouge1_fmeasure("今天天气很好", "天气很好") == 0.8


def test_thai_is_split_into_grapheme_clusters() -> None:
    assert tokenize("สวัสดีครับ") == ("ส", "วั", "ส", "ดี", "ค", "รั", "บ")


def test_other_scripts_keep_whole_words_with_their_marks() -> None:
    assert tokenize("नमस्ते दुनिया") == ("नमस्ते", "दुनिया")
    assert tokenize("مَرْحَبًا بالعالم") == ("مَرْحَبًا", "بالعالم")


def test_nfkc_folds_ligatures_full_width_and_superscripts() -> None:
    assert tokenize("ﬁne Ｆｕｌｌ x²") == ("fine", "full", "x2")
    assert tokenize("İstanbul") == ("i\u0307stanbul",)


def test_separators_split_words() -> None:
    assert tokenize("snake_case don't state-of-the-art e-mail") == (
        "snake",
        "case",
        "don",
        "t",
        "state",
        "of",
        "the",
        "art",
        "e",
        "mail",
    )
    assert tokenize("a😀b") == ("a", "b")


def test_non_ascii_text_is_not_dropped() -> None:
    assert rouge1_fmeasure("¿Dónde está la biblioteca?", "Donde esta la biblioteca") == 0.5
    assert rouge1_fmeasure("天气很好", "天气很好") == 1.0
    # plain rouge-score (what older ADK used) drops every non-ASCII character
    plain = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    assert plain.score("天气很好", "天气很好")["rouge1"].fmeasure == 0.0


def test_counts_are_clipped_and_f_is_harmonic_mean() -> None:
    assert rouge1_fmeasure("the the the", "the") == 0.5
    # P = 2/4, R = 2/3; 2PR/(P+R) rounds to one ulp above 4/7, exactly as rouge-score computes it
    assert rouge1_fmeasure("The cat is running", "the cats ran") == 0.5714285714285715


def test_thought_parts_are_included_and_parts_join_with_newlines() -> None:
    actual = {
        "parts": [
            {"text": "sunny", "thought": True},
            {"function_call": {"name": "f"}},
            {"text": None},
            {"text": "today"},
        ]
    }
    result = _metric_score(actual, {"parts": [{"text": "sunny today"}]})
    assert result.score == 1.0
    assert result.status is EvalStatus.PASSED


@pytest.mark.parametrize(
    "missing",
    [None, {"role": "model"}, {"parts": []}, {"parts": [{"text": None}]}],
    ids=["none", "no-parts", "empty-parts", "null-text"],
)
def test_missing_text_scores_zero(missing: Any) -> None:
    with_text = {"parts": [{"text": "the answer"}]}
    assert _metric_score(missing, with_text).score == 0.0
    assert _metric_score(with_text, missing).score == 0.0
    result = _metric_score(missing, missing, threshold=0.0)
    assert result.score == 0.0
    assert result.status is EvalStatus.PASSED


def test_overall_score_is_the_mean_judged_against_the_threshold() -> None:
    actual = [_invocation({"parts": [{"text": t}]}) for t in ["a b", "c d", "x y"]]
    expected = [_invocation({"parts": [{"text": t}]}) for t in ["a b", "c z", "q r"]]
    case = EvalCase(eval_id="c", conversation=expected)
    result = _run(
        ResponseMatchMetric(BaseCriterion(threshold=0.5)).evaluate(actual, expected, case)
    )
    assert [r.score for r in result.per_invocation] == [1.0, 0.5, 0.0]
    assert [r.status for r in result.per_invocation] == [
        EvalStatus.PASSED,
        EvalStatus.PASSED,
        EvalStatus.FAILED,
    ]
    assert result.score == 0.5
    assert result.status is EvalStatus.PASSED


def test_memoised_tokens_give_the_same_scores_after_clearing() -> None:
    pairs = [("Ｆｕｌｌ café running", "full cafe run"), ("สวัสดีครับ", "สวัสดี"), ("a b", "b c")]
    first = [rouge1_fmeasure(c, r) for c, r in pairs]
    clear_caches()
    assert [rouge1_fmeasure(c, r) for c, r in pairs] == first
    assert first[0] == 2 / 3


_TRICKY = (
    "ΟΔΟΣ ΟΔΟΣΑ Σ",  # final sigma
    "naïve café, CAFÉ! cafe\u0301 e \u0301x",  # composed by NFKC; a mark after a space
    "Ｆｕｌｌ\u3000width\u00a0spaces\x1cand\x85controls\u2028lines",  # what str.split splits on
    "a\u00a8b x\u00a8",  # NFKC makes the diaeresis a space and a mark: a new piece
    "ﬁle ﬂows İstanbul ǅemal",  # ligatures; lower case longer than upper
    "今天天气很好 天气 สวัสดีครับ ภาษาไทย",
    "don't stop-running 3.14 x2 ½ ² ⑴ the_end",
)


def test_tokens_memoised_piece_by_piece_are_adks_whatever_was_seen_before() -> None:
    """Each piece between spaces is tokenized once and remembered: a text's tokens are ADK's
    with every cache empty, and again once its pieces were first met in other texts."""
    from google.adk.evaluation.final_response_match_v1 import _UnicodeAwareTokenizer

    adk = _UnicodeAwareTokenizer(use_stemmer=True)
    expected = [adk.tokenize(text) for text in _TRICKY]
    cold = []
    for text in _TRICKY:
        clear_caches()
        cold.append(list(tokenize(text)))
    clear_caches()
    for text in (" ".join(_TRICKY), "\n".join(reversed(_TRICKY)), "".join(_TRICKY)):
        assert list(tokenize(text)) == adk.tokenize(text)
    tokenize.cache_clear()  # the pieces and words stay known
    warm = [list(tokenize(text)) for text in _TRICKY]

    assert cold == expected
    assert warm == expected


_FRESH = textwrap.dedent(
    """
    import json, sys
    from assay.metrics.rouge import tokenize
    words = "running generously caresses ponies happily relational conditional agreed".split()
    words += "feet sky dying lying sensational hopeful goodness adjustable ties".split()
    ours = [list(tokenize(word)) for word in words]
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in {"nltk", "scipy", "sklearn"})
    import nltk.stem.porter
    from rouge_score import tokenize as rouge_tokenize
    stemmer = nltk.stem.porter.PorterStemmer()
    theirs = [rouge_tokenize.tokenize(word, stemmer) for word in words]
    print(json.dumps({"loaded": loaded, "same": ours == theirs, "stem": ours[0]}))
    """
)


def test_the_stemmer_loads_without_all_of_nltk_stems_as_nltk_and_leaves_nltk_importable() -> None:
    """nltk's package imports scipy and scikit-learn (a second or more); the Porter stemmer is
    loaded without it, and a later ``import nltk`` still gets the whole package."""
    done = subprocess.run(
        [sys.executable, "-c", _FRESH], capture_output=True, text=True, check=True, timeout=120
    )

    assert json.loads(done.stdout) == {"loaded": [], "same": True, "stem": ["run"]}


def test_an_nltk_whose_stemmer_needs_more_of_nltk_is_imported_whole_instead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib
    from types import ModuleType

    from assay.metrics import rouge

    for name in [n for n in sys.modules if n == "nltk" or n.startswith("nltk.")]:
        monkeypatch.delitem(sys.modules, name)
    whole = ModuleType("nltk.stem.porter")
    calls: list[bool] = []

    def import_module(name: str) -> ModuleType:
        stood_in = isinstance(sys.modules.get("nltk"), ModuleType) and not hasattr(
            sys.modules["nltk"], "__file__"
        )
        calls.append(stood_in)
        if stood_in:
            raise ImportError("cannot import name 'something' from 'nltk'")
        return whole

    monkeypatch.setattr(importlib, "import_module", import_module)

    assert rouge._porter_module() is whole
    assert calls == [True, False]  # tried under the stand-ins, then imported whole
    assert "nltk" not in sys.modules and "nltk.stem" not in sys.modules
