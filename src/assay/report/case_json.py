"""The JSON each case's body travels in on the HTML report page (:mod:`assay.report.html`),
read by the page's script, which builds the body with ``createElement``/``textContent`` only."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

from assay.report.rows import CallRow, Case, Judged, Turn, UsageRow

_SCRIPT_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}


def json_for_script(value: Any) -> Markup:
    """``value`` as compact JSON that is safe inside a ``<script>`` element: ``<``, ``>`` and
    ``&`` become ``\\u`` escapes (JSON.parse reads them back), so no string in it can close the
    element or open a comment."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return Markup(text.translate(_SCRIPT_ESCAPES))


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def _votes(votes: Any) -> str:
    if not isinstance(votes, dict):
        return ""
    return ", ".join(f"{key} {value}" for key, value in votes.items())


def _call_json(row: CallRow) -> list[Any]:
    """``[actual, match, expected]``, the expected call left out when it is the actual one."""
    out: list[Any] = [row.actual, int(row.match)]
    return out if row.match and row.expected == row.actual else [*out, row.expected]


def _turn_json(turn: Turn) -> dict[str, Any]:
    out: dict[str, Any] = {
        "n": turn.number,
        "id": turn.invocation_id,
        "user": turn.user,
        "agent": turn.agent,
        "steps": turn.steps,
        "calls": [_call_json(row) for row in turn.calls],
        "has_expected": turn.has_expected,
        "verdicts": [[v.name, v.score, v.status] for v in turn.verdicts],
    }
    if turn.expected is not None:
        out["expected"] = turn.expected
    return out


def _judged_json(judged: Judged) -> dict[str, Any]:
    return {
        "metric": judged.metric,
        "judge": judged.judge,
        "inv": [
            {
                "id": inv.invocation_id,
                "reason": inv.reason,
                "votes": inv.votes,
                "samples": [
                    [
                        s.sample,
                        s.score,
                        s.verdict,
                        s.text,
                        s.problem,
                        int(s.cached),
                        s.probability,
                        s.aligned,
                    ]
                    for s in inv.samples
                ],
                "rubrics": [
                    [
                        _cell(r["rubric_id"]),
                        _cell(r["property"]),
                        _cell(r["verdict"]) or "-",
                        "-" if r["score"] is None else _cell(r["score"]),
                        _votes(r["votes"]),
                        _cell(r["rationale"]),
                    ]
                    for r in inv.rubrics
                ],
                "sentences": [
                    [
                        _cell(s["step"]),
                        _cell(s["sentence"]),
                        _cell(s["label"]),
                        _cell(s["rationale"]),
                        _cell(s["supporting_excerpt"] or s["contradicting_excerpt"]),
                    ]
                    for s in inv.sentences
                ],
            }
            for inv in judged.invocations
        ],
    }


def _usage_json(rows: Sequence[UsageRow]) -> list[list[str]]:
    return [[u.who, u.calls, u.prompt_tokens, u.completion_tokens, u.cached] for u in rows]


def case_body(case: Case) -> dict[str, Any]:
    """What an opened case shows, as plain JSON values for the page's script: table rows are
    lists of cell texts (headings live in the script), everything else named fields."""
    return {
        "reason": case.reason,
        "duration": case.duration,
        "metrics": [[m.name, m.score, m.threshold, m.status, m.note] for m in case.metrics],
        "turns": [_turn_json(turn) for turn in case.turns],
        "judged": [_judged_json(judged) for judged in case.judged],
        "usage": _usage_json(case.usage),
    }
