"""The embedded judge's bundled judge cards, as shipped: one per criterion of the test half of
benchmarks/judge_agreement, measured on exactly that labels file, for the prompt versions today's
code and bundled profile give (a card for another prompt version is never shown, so a stale file
would show nothing). Regenerate with benchmarks/judge_agreement/export_cards.py."""

from __future__ import annotations

import hashlib
from pathlib import Path

from assay.agreement.cards import bundled_cards, bundled_cards_path, effective_criterion
from assay.agreement.cards import prompt_version as version_of
from assay.agreement.labels import load_labels
from assay.llm.profile import bundled_profile

REPO = Path(__file__).resolve().parents[2]
TEST_HALF = REPO / "benchmarks" / "judge_agreement" / "labelled" / "test.labels.yaml"
EMBEDDED = "local:qwen2.5-coder-1.5b"


def test_the_shipped_cards_match_the_test_half_and_todays_prompt_versions() -> None:
    path = bundled_cards_path()
    assert path.is_file(), f"{path} is not there: benchmarks/judge_agreement/export_cards.py"
    cards = bundled_cards()
    run = load_labels(TEST_HALF)
    profile = bundled_profile()
    digest = hashlib.sha256(TEST_HALF.read_bytes()).hexdigest()

    assert sorted(card.criterion for card in cards) == sorted({x.criterion for x in run.labels})
    stale = []
    for card in cards:
        assert card.judge_model == EMBEDDED, card.criterion
        assert card.labels_file == "benchmarks/judge_agreement/labelled/test.labels.yaml"
        assert card.labels_sha256 == digest, f"{card.criterion}: measured on other labels"
        assert card.labels == sum(label.criterion == card.criterion for label in run.labels)
        criterion = effective_criterion(run.config.criteria[card.criterion], card.num_samples)
        entry = profile.entry_for(card.criterion, EMBEDDED) if profile else None
        if card.prompt_version != version_of(card.criterion, criterion, entry):
            stale.append(card.criterion)
    assert stale == [], f"measured for another prompt than today's: {stale}"
