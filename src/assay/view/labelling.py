"""What a person labels in the view: the judged units of a recorded case (to be written).

A :class:`Unit` is one judged verdict in its criterion's unit (an invocation's verdict, a rubric,
a sentence, a simulated-user turn), named as the labels file names it; :func:`units_for_case`
lists a case's units with the judge's label and this labeller's current one, so a page can
show the label form (``label_macros.html.j2``'s ``label_form(unit)``) beside each verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from assay.results.keys import CaseKey
from assay.results.model import EvalCaseResult
from assay.view.context import View


@dataclass(frozen=True)
class Unit:
    """One judged verdict a person may label."""

    run_id: str
    case: CaseKey
    criterion: str
    invocation: int
    """The turn's number from 1."""
    rubric: str | None = None
    sentence: int | None = None
    judge_label: str | None = None
    """What the judge said, in the labels' words (e.g. ``valid``)."""
    choices: tuple[str, ...] = ()
    """The labels a person may set, the positive one first."""
    label: str | None = None
    """This labeller's label, if set."""
    reason: str = ""

    @property
    def key(self) -> str:
        """A stable id of the unit within its run (for the page and the API)."""
        parts = [
            self.case.eval_set_id,
            self.case.eval_id,
            str(self.case.run),
            self.criterion,
            str(self.invocation),
            self.rubric or "",
            "" if self.sentence is None else str(self.sentence),
        ]
        return "|".join(part.replace("|", "/") for part in parts)


def units_for_case(
    view: View, run_id: str, case: CaseKey, result: EvalCaseResult
) -> dict[str, list[Unit]]:
    """The case's judged units by criterion (none yet: to be written)."""
    return {}
