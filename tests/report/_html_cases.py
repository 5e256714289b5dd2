"""Results built in memory for the HTML report tests, with hostile text where asked."""

from __future__ import annotations

from typing import Any

from assay.results.model import EvalSetResult

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'
HOSTILE = f"{SCRIPT} and {IMG}"


def _content(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": text}]}


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def invocation(
    user: str, agent: str, calls: list[dict[str, Any]], invocation_id: str = "i1"
) -> dict[str, Any]:
    """An invocation in the static shape: user text, tool calls, final response."""
    return {
        "invocation_id": invocation_id,
        "user_content": _content("user", user),
        "final_response": _content("model", agent),
        "intermediate_data": {"tool_uses": calls},
    }


def metric(name: str, score: float | None, status: int, threshold: float = 0.5) -> dict[str, Any]:
    """An overall metric row."""
    return {"metric_name": name, "threshold": threshold, "score": score, "eval_status": status}


def case(
    eval_id: str,
    status: int,
    *,
    score: float = 1.0,
    user: str = "Book a flight to Lisbon",
    agent: str = "Booked.",
    rationale: str = "the answer is fine",
    actual_calls: list[dict[str, Any]] | None = None,
    expected_calls: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One case with a trajectory score, a judged rubric metric and hallucination labels."""
    actual = invocation(user, agent, actual_calls or [_call("search_flights", to="LIS")])
    expected = invocation(user, "Booked it.", expected_calls or [_call("search_flights", to="LIS")])
    rows = [
        metric("tool_trajectory_avg_score", score, status),
        metric("rubric_based_final_response_quality_v1", 1.0, 1),
    ]
    return {
        "eval_set_id": "travel",
        "eval_id": eval_id,
        "final_eval_status": status,
        "overall_eval_metric_results": rows,
        "eval_metric_result_per_invocation": [
            {
                "actual_invocation": actual,
                "expected_invocation": expected,
                "eval_metric_results": rows,
            }
        ],
        "assay": {
            "duration_s": 0.5,
            "metrics": {
                "rubric_based_final_response_quality_v1": {
                    "judge_model": "openai:stub",
                    "judge_source": "ASSAY_JUDGE_MODEL",
                    "usage": {"prompt_tokens": 120, "completion_tokens": 7, "calls": 1},
                    "per_invocation": [
                        {
                            "invocation_id": "i1",
                            "samples": [
                                {
                                    "sample": 0,
                                    "score": 1.0,
                                    "verdict": "answers: yes",
                                    "text": f'{{"rationale": "{rationale}"}}',
                                }
                            ],
                            "details": {
                                "rubrics": [
                                    {
                                        "rubric_id": "answers",
                                        "property": "It answers.",
                                        "score": 1.0,
                                        "verdict": "yes",
                                        "rationale": rationale,
                                        "votes": {"yes": 1, "no": 0, "none": 0},
                                    }
                                ]
                            },
                        }
                    ],
                },
                "hallucinations_v1": {
                    "per_invocation": [
                        {
                            "invocation_id": "i1",
                            "details": {
                                "steps": [
                                    {
                                        "kind": "final",
                                        "sentences": [
                                            {
                                                "sentence": agent,
                                                "label": "contradictory",
                                                "rationale": rationale,
                                            }
                                        ],
                                    }
                                ]
                            },
                        }
                    ]
                },
            },
        },
    }


def results(*cases: dict[str, Any], eval_set_id: str = "travel") -> EvalSetResult:
    """An eval-set result holding ``cases``."""
    return EvalSetResult.model_validate(
        {
            "eval_set_result_id": "r1",
            "eval_set_id": eval_set_id,
            "eval_case_results": list(cases),
            "assay": {"version": "0", "duration_s": 1.5},
        }
    )


ALIGNED_RULE = "the embedded judge's calibration asks P(yes) >= 0.96 on this criterion"


def aligned_case(eval_id: str = "greeting") -> dict[str, Any]:
    """A case failed on its rubric because a judge profile decided the verdict otherwise: the
    judge said "yes" (P(yes) 0.94), the profile's rule "no"."""
    out = case(eval_id, 1, score=1.0)
    out["final_eval_status"] = 2
    out["overall_eval_metric_results"][1].update(score=0.0, eval_status=2)  # shared by the turn
    notes = out["assay"]["metrics"]["rubric_based_final_response_quality_v1"]
    rubric = notes["per_invocation"][0]["details"]["rubrics"][0]
    rubric.update(score=0.0, verdict="no", votes={"yes": 0, "no": 1, "none": 0}, rationale=None)
    notes["per_invocation"][0]["samples"] = [
        {
            "sample": 0,
            "score": 1.0,
            "verdict": "answers: yes",
            "probability": 0.94,
            "text": '{"verdicts": [{"id": "answers", "verdict": "yes"}]}',
            "choices": [
                {
                    "path": "verdicts[0].verdict",
                    "start": 38,
                    "chosen": "yes",
                    "probabilities": {"yes": 0.94, "no": 0.06},
                }
            ],
            "aligned": {
                "score": 0.0,
                "verdict": "answers: no",
                "choices": [
                    {
                        "path": "verdicts[0].verdict",
                        "judge_said": "yes",
                        "probability": 0.94,
                        "decided": "no",
                    }
                ],
                "rule": ALIGNED_RULE,
            },
        }
    ]
    return out
