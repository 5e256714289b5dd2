"""``assay judge agree``'s output: disagreements worst first, on the console and in the page."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console

from assay.agreement.agree import AgreeReport, Compared
from assay.agreement.labels import Label
from assay.agreement.render import print_agreement, render_agreement_html, worst_first
from assay.agreement.stats import agreement
from assay.llm.base import TokenUsage


@dataclass(frozen=True)
class Sure(Compared):
    """A unit whose judge's confidence is known (as ``Compared.confidence`` gives it)."""

    sure: float | None = None

    @property
    def confidence(self) -> float | None:
        return self.sure


def unit(case: str, person: str, judge: str | None, sure: float | None = None) -> Compared:
    label = Label(case=case, invocation=1, criterion="safety_v1", label=person)
    return Sure(label, judge, f"note on {case}", sure=sure)


UNITS = [
    unit("agrees", "safe", "safe", 0.99),
    unit("unknown_a", "unsafe", "safe"),
    unit("sure_60", "unsafe", "safe", 0.6),
    unit("no_label_a", "safe", None),
    unit("sure_95", "safe", "unsafe", 0.95),
    unit("unknown_b", "unsafe", "safe"),
    unit("no_label_b", "unsafe", None),
    unit("sure_80", "unsafe", "safe", 0.8),
]


def report(units: list[Compared]) -> AgreeReport:
    pairs = [(u.label.label, u.judge) for u in units]
    found = agreement(pairs, positive="safe")
    return AgreeReport(
        tuple(units),
        {"safety_v1": found},
        found,
        {"safety_v1": "openai:stub (from --judge-model)"},
        TokenUsage(calls=3),
    )


def test_disagreements_come_unlabelled_first_then_surest_first_then_in_file_order() -> None:
    order = [u.label.case for u in worst_first(UNITS)]
    assert order == [
        "no_label_a",
        "no_label_b",
        "sure_95",
        "sure_80",
        "sure_60",
        "unknown_a",
        "unknown_b",
    ]


def test_the_console_lists_the_disagreements_worst_first_with_the_judges_confidence() -> None:
    console = Console(width=200, record=True, color_system=None)
    print_agreement(console, report(UNITS))
    text = console.export_text()

    assert "7 label(s) the judge did not give, worst first" in text
    lines = [line.strip() for line in text.splitlines() if line.startswith("  safety_v1 · ")]
    assert [line.split(" · ")[1] for line in lines][:3] == [
        "no_label_a turn 1",
        "no_label_b turn 1",
        "sure_95 turn 1",
    ]
    assert "people safe, judge unsafe (p 0.95): note on sure_95" in text
    assert "people safe, judge no label: note on no_label_a" in text


def test_the_page_lists_every_disagreement_worst_first_and_escapes_every_text() -> None:
    hostile = unit("<script>alert(1)</script>", "unsafe", "safe", 0.7)
    page = render_agreement_html(report([*UNITS, hostile]), labels="labels & more.yaml")

    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "labels &amp; more.yaml" in page
    assert page.index("no_label_b") < page.index("sure_95") < page.index("unknown_a")
    assert "Disagreements, worst first (8 of 9 labels)" in page


def test_an_answer_labelled_criterion_has_only_answer_labels_in_its_confusion_table() -> None:
    from assay.agreement.render import judge_columns, people_rows
    from assay.agreement.stats import agreement

    found = agreement(
        [("grounded", "grounded"), ("ungrounded", "grounded"), ("grounded", None)],
        positive="grounded",
    )
    assert people_rows("hallucinations_v1", found) == ["grounded", "ungrounded"]
    assert judge_columns("hallucinations_v1", found) == ["grounded", "ungrounded", "none"]
