"""The judge cards a history keeps (:mod:`assay.history.cards`), through the store that hands
its card methods on: newest first, looked up by judge model, criterion and prompt version."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.history.store import HistoryStore

SAFETY = ("openai:gpt-4o-mini", "safety_v1", "aaaaaaaaaaaa")


@pytest.fixture
def store(tmp_path: Path) -> HistoryStore:
    with HistoryStore(tmp_path / "history.sqlite") as opened:
        yield opened  # type: ignore[misc]


def test_cards_list_newest_first_the_later_kept_first_at_the_same_time(
    store: HistoryStore,
) -> None:
    store.add_judge_card(SAFETY, 10.0, '{"n": "old"}')
    store.add_judge_card(("m", "coherence_v1", "b"), 30.0, '{"n": "newest"}')
    store.add_judge_card(SAFETY, 20.0, '{"n": "middle, first"}')
    store.add_judge_card(SAFETY, 20.0, '{"n": "middle, second"}')

    assert store.judge_cards() == [
        '{"n": "newest"}',
        '{"n": "middle, second"}',
        '{"n": "middle, first"}',
        '{"n": "old"}',
    ]
    assert store.judge_cards(limit=2) == ['{"n": "newest"}', '{"n": "middle, second"}']


def test_a_card_is_found_only_by_its_whole_key_the_newest_of_them(store: HistoryStore) -> None:
    store.add_judge_card(SAFETY, 20.0, '{"n": "newer"}')
    store.add_judge_card(SAFETY, 10.0, '{"n": "older"}')

    assert store.judge_card(SAFETY) == '{"n": "newer"}'
    assert store.judge_card((SAFETY[0], SAFETY[1], "another version")) is None
    assert store.judge_card(("another model", SAFETY[1], SAFETY[2])) is None


def test_cards_outlive_the_store_that_kept_them(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    with HistoryStore(path) as store:
        store.add_judge_card(SAFETY, 10.0, '{"n": "kept"}')
    with HistoryStore(path) as again:
        assert again.judge_card(SAFETY) == '{"n": "kept"}'
