"""The README's judge-agreement table is what benchmarks/judge_agreement/table.py makes from the
committed measurements, and those measurements are the ones the bundled cards carry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _support import BENCHMARKS, load_script

from assay.agreement.cards import bundled_cards

ROOT = BENCHMARKS.parent
MEASURED = BENCHMARKS / "judge_agreement" / "measured"
UNAIDED = MEASURED / "2026-11-28-test-half-unaided.json"
SHIPPED = MEASURED / "2026-11-28-test-half-bundled.json"


def _report(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_the_readme_table_is_made_from_the_committed_measurements() -> None:
    table = load_script("agreement_table", BENCHMARKS / "judge_agreement" / "table.py")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    made = table.table([_report(UNAIDED), _report(SHIPPED)], ["unaided", "as shipped"])

    assert table.replace_between_markers(readme, made) == readme


def test_the_bundled_cards_carry_the_committed_measurement_with_the_shipped_profile() -> None:
    shipped = _report(SHIPPED)["criteria"]
    cards = {card.criterion: card for card in bundled_cards()}

    assert set(cards) == set(shipped)
    for criterion, figures in shipped.items():
        card = cards[criterion]
        assert card.labels == figures["pairs"], criterion
        assert card.agreement == figures["rate"], criterion
        assert card.kappa == figures["kappa"], criterion
