"""The vote every judged metric shares: ADK's majority, or a votes judge profile's share."""

from __future__ import annotations

from assay.metrics.judging import majority_index


def test_adk_majority_takes_the_first_of_the_larger_side_and_ties_go_negative() -> None:
    assert majority_index([1.0, 0.0, 1.0]) == 0
    assert majority_index([0.0, 1.0, 1.0]) == 1
    assert majority_index([1.0, 0.0]) == 1
    assert majority_index([None, None]) == 0


def test_a_profile_share_lets_a_minority_of_positive_votes_win() -> None:
    scores = [0.0, 1.0, 0.0, 0.0, 1.0]  # two positive of five
    assert scores[majority_index(scores)] == 0.0
    assert scores[majority_index(scores, share=0.4)] == 1.0
    assert scores[majority_index(scores, share=0.5)] == 0.0
    negatives = [None, 0.0, 0.0]  # no positive vote at all: the first negative, whatever share
    assert majority_index(negatives, share=0.0) == 1
