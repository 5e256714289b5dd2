"""How every report writes a number, so that the console, ``assay show``, ``assay compare`` and
the HTML report read alike.

* A score (and a threshold) has two decimals: ``0.87``. A score below its threshold is never
  written as reaching it: 0.7996 against 0.80 is ``0.79``, not ``0.80``.
* An informational metric (ADK's efficiency metrics: a mean per turn, never a pass or a fail) is
  a value with its unit, after a short label: ``tool calls 1.5``, ``tokens 1,234``,
  ``duration 1.2 s`` (``duration 12 ms`` under a second); a missing value is ``-``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

MISSING = "-"
"""A number that is not there."""

LABELS: Mapping[str, str] = {
    "tool_call_count_v1": "tool calls",
    "inference_call_count_v1": "model calls",
    "token_usage_v1": "tokens",
    "invocation_duration_v1": "duration",
}
"""The short label of each informational metric ADK reports."""


def score_text(score: float | None, threshold: float | None = None) -> str:
    """``score`` to two decimals (``-`` when missing); below ``threshold``, rounded down where
    rounding would make it read as reaching the threshold."""
    if score is None:
        return MISSING
    if not math.isfinite(score):
        return str(score)
    text = f"{score:.2f}"
    if threshold is not None and score < threshold and float(text) >= threshold:
        text = f"{math.floor(score * 100) / 100:.2f}"
    return text


def signed_score(change: float) -> str:
    """A change in score, with its sign: ``+0.17``, ``-0.05``."""
    return f"{change:+.2f}"


def label(metric: str) -> str:
    """An informational metric's short label (``tokens``), else its name."""
    return LABELS.get(metric, metric)


def value_text(metric: str, value: float | None) -> str:
    """An informational metric's value with its unit where it has one: ``1.5`` (tool calls),
    ``1,234`` (tokens), ``12 ms`` or ``1.2 s`` (duration); ``-`` when missing."""
    if value is None:
        return MISSING
    if not math.isfinite(value):
        return str(value)
    if metric == "invocation_duration_v1":
        if abs(value) < 1:
            return f"{value * 1000:,.0f} ms"
        return f"{value:,.1f} s"
    if metric == "token_usage_v1":
        return f"{value:,.0f}"
    text = f"{value:,.1f}"
    return text[:-2] if text.endswith(".0") else text


def signed_value(metric: str, change: float) -> str:
    """A change in an informational metric's value: ``+0.3``, ``-120 ms``, ``+1,200``."""
    return ("-" if change < 0 else "+") + value_text(metric, abs(change))


def measure_text(metric: str, value: float | None) -> str:
    """An informational metric as label and value: ``tokens 1,234``, ``duration 1.2 s``."""
    return f"{label(metric)} {value_text(metric, value)}"
