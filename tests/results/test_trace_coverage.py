"""How many of the eval sets' cases the traces record, and the one line that says so."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from assay.errors import AssayError
from assay.evalset.case import EvalSet
from assay.evalset.invocation import Invocation
from assay.results import trace_coverage
from assay.results.trace_coverage import coverage, mismatch, traces_note
from assay.results.traces import Traces, load_traces

TURN = Invocation.model_validate({"user_content": {"parts": [{"text": "hi"}]}})


def eval_set(*ids: str, set_id: str = "travel") -> EvalSet:
    cases = [
        {"eval_id": i, "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}]} for i in ids
    ]
    return EvalSet.model_validate({"eval_set_id": set_id, "eval_cases": cases})


def traces(*keys: tuple[str | None, str], source: str = "t.json") -> Traces:
    found = Traces(sources=[source])
    for key in keys:
        found.add(key, [TURN])
    return found


def test_every_case_found_says_nothing() -> None:
    assert mismatch(traces((None, "a"), (None, "b")), [eval_set("a", "b")]) is None


def test_some_cases_missing_name_how_many_matched_and_which_are_missing() -> None:
    found = mismatch(traces((None, "a")), [eval_set("a", "b", "c")])

    assert found == ("1 of 3 eval ids found in t.json; no trace for b, c (those cases are not "
                     "evaluated)", False)  # fmt: skip


def test_no_case_found_names_the_files_ids_in_its_order_and_raises_for_the_cli() -> None:
    recorded = traces(*[(None, f"x{i}") for i in (9, 1, 5, 3, 7, 2)])
    message = (
        "0 of 2 eval ids found in t.json; it has x9, x1, x5, x3, x7, … (6 in all) (did you pass "
        "the traces of another eval set?)"
    )

    assert mismatch(recorded, [eval_set("a", "b")]) == (message, True)
    with pytest.raises(AssayError, match=f"^{re.escape(message)}$"):
        traces_note(recorded, [eval_set("a", "b")])
    assert traces_note(traces((None, "a")), [eval_set("a", "b")]) is not None  # partial: a note


def test_cases_recorded_for_another_eval_set_id_say_which() -> None:
    recorded = traces(("weather_v2", "a"), ("weather_v2", "b"))

    message, none_found = mismatch(recorded, [eval_set("a", "b")]) or ("", False)

    assert none_found
    assert message == (
        "0 of 2 eval ids found in t.json: it records them for eval set 'weather_v2' (another "
        "eval set's run?)"
    )


def test_a_traces_file_without_any_case_says_so() -> None:
    message, none_found = mismatch(Traces(sources=["t.json"]), [eval_set("a")]) or ("", False)
    assert none_found and message.endswith("it records no case (are they all not evaluated?)")


def test_only_the_first_cases_of_a_large_set_are_looked_up_and_the_count_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(trace_coverage, "CHECKED", 2)
    found = coverage(traces((None, "a")), [eval_set("a", "b", "c", "d")])
    assert (found.checked, found.missing, found.partial) == (2, ["b"], True)
    message, _ = mismatch(traces((None, "a")), [eval_set("a", "b", "c")]) or ("", False)
    assert message.startswith("1 of the first 2 eval ids found in t.json")


def test_streamed_traces_are_looked_up_by_key_without_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_STREAM_MB", "0")
    path = tmp_path / "big.json"
    turn = TURN.model_dump(mode="json", exclude_none=True)
    path.write_text(json.dumps({"a": [turn], "z": [turn]}), encoding="utf-8")
    loaded = load_traces([path])
    assert loaded.streamed and not loaded.by_case

    assert coverage(loaded, [eval_set("a", "b")]).missing == ["b"]


def test_coverage_asks_the_traces_for_each_case_without_listing_every_case_they_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A million-case traces file listed as a million tuples just to look up a thousand ids was
    the peak of a large run's memory: coverage asks the traces case by case."""

    def listed(_traces: Traces) -> dict[tuple[str | None, str], None]:
        raise AssertionError("every recorded case listed")

    monkeypatch.setattr(trace_coverage, "recorded_keys", listed)
    recorded = traces((None, "a"), ("travel", "b"))
    recorded.sessions[(None, "c")] = None  # a session that cannot be scored still names its case

    found = coverage(recorded, [eval_set("a", "b", "c", "d")])

    assert (found.checked, found.missing) == (4, ["d"])
