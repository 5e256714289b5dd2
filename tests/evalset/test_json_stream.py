"""Streamed eval sets (``ASSAY_STREAM_MB``): read a case at a time into the spill file, with the
same cases, warnings and problems as the eager reader, in a fraction of its memory."""

from __future__ import annotations

import copy
import json
import pickle
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assay._internal.json_stream import should_stream, stream_threshold_mb
from assay.errors import EvalSetError, Problem
from assay.evalset import EvalCase, load_eval_set, write_eval_set
from assay.evalset import io as evalset_io
from assay.evalset.io import LoadedEvalSet

from ._helpers import FIXTURES, RICH, case, eval_set, invocation

ROOT = Path(__file__).resolve().parents[2]
STREAM_FIXTURES = ROOT / "tests" / "fixtures" / "stream"
SHARED = ROOT.parent / "shared" / "fixtures" / "adk-evalsets"


def _eval_set_files() -> list[Path]:
    """Every EvalSet-shaped JSON file among the fixtures (the legacy lists stay eager)."""
    found = [ROOT / "examples" / "travel" / "travel.evalset.json"]
    found += sorted(STREAM_FIXTURES.glob("*.evalset.json"))
    for folder in (FIXTURES, SHARED):
        for path in sorted(folder.rglob("*.json")) if folder.is_dir() else []:
            if path.name.endswith((".test.json", ".evalset.json")):
                data = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(data, dict):
                    found.append(path)
    return found


EVAL_SET_FILES = _eval_set_files()


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT.parent)) if path.is_relative_to(ROOT.parent) else str(path)


def load(path: Path, monkeypatch: pytest.MonkeyPatch, *, stream: bool) -> LoadedEvalSet:
    monkeypatch.setenv("ASSAY_STREAM_MB", "0" if stream else "100000")
    return load_eval_set(path)


def outcome(path: Path, monkeypatch: pytest.MonkeyPatch, *, stream: bool) -> Any:
    """What loading gives, comparable across readers: the set (cases as a list), format and
    warnings, or the problems."""
    try:
        loaded = load(path, monkeypatch, stream=stream)
    except EvalSetError as exc:
        return exc.problems
    cases = list(loaded.eval_set.eval_cases)
    meta = loaded.eval_set.model_dump(exclude={"eval_cases"})
    return meta, cases, loaded.format, loaded.warnings


# --- same sets ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", EVAL_SET_FILES, ids=_name)
def test_a_streamed_eval_set_equals_the_eager_load_of_the_same_file(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eager = load(path, monkeypatch, stream=False)
    streamed = load(path, monkeypatch, stream=True)

    assert (eager.streamed, streamed.streamed) == (False, True)
    assert list(streamed.eval_set.eval_cases) == list(eager.eval_set.eval_cases)
    assert streamed.eval_set == eager.eval_set
    assert streamed.eval_set.model_dump() == eager.eval_set.model_dump()
    assert (streamed.format, streamed.warnings) == (eager.format, eager.warnings)


@pytest.mark.parametrize("path", EVAL_SET_FILES, ids=_name)
def test_the_same_set_as_jsonl_streams_to_the_same_cases(
    path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    eager = load(path, monkeypatch, stream=False)
    lines = tmp_path / "set.jsonl"
    write_eval_set(eager.eval_set, lines)

    streamed = load(lines, monkeypatch, stream=True)

    assert streamed.streamed
    assert list(streamed.eval_set.eval_cases) == list(eager.eval_set.eval_cases)
    assert streamed.eval_set.eval_set_id == eager.eval_set.eval_set_id
    assert streamed.warnings == tuple(
        Problem(str(lines), w.path, w.message) for w in eager.warnings
    )


def test_camel_case_keys_and_ids_after_the_cases_stream_like_snake_case(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    streamed = load(STREAM_FIXTURES / "camel.evalset.json", monkeypatch, stream=True)

    assert streamed.eval_set.eval_set_id == "camel_set"
    assert streamed.eval_set.creation_timestamp == 1712345600.0
    assert [c.eval_id for c in streamed.eval_set.eval_cases] == [
        "greet",
        "book",
        "simulated",
        "greet",
    ]
    assert [w.path for w in streamed.warnings] == ["eval_cases[3].eval_id"]


def test_jsonl_with_crlf_and_blank_lines_streams_as_read_eagerly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = STREAM_FIXTURES / "lines.jsonl"

    assert outcome(path, monkeypatch, stream=True) == outcome(path, monkeypatch, stream=False)
    assert load(path, monkeypatch, stream=True).eval_set.description is not None


def test_a_streamed_set_is_a_read_only_sequence_parsed_on_access(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cases = load(STREAM_FIXTURES / "camel.evalset.json", monkeypatch, stream=True)
    spilled = cases.eval_set.eval_cases

    assert len(spilled) == 4 and bool(spilled)
    assert spilled[1].eval_id == "book" and spilled[-1].eval_id == "greet"
    assert [c.eval_id for c in spilled[1:3]] == ["book", "simulated"]
    assert [c.eval_id for c in spilled[::2]] == ["greet", "simulated"]
    assert spilled[0] is not spilled[0]  # parsed again each time, never held
    assert spilled[0] == spilled[0]
    assert isinstance(spilled[2], EvalCase)
    with pytest.raises(IndexError):
        spilled[4]
    assert cases.eval_set.case("simulated") is not None


def test_a_streamed_set_writes_and_pickles_as_the_eager_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = STREAM_FIXTURES / "camel.evalset.json"
    eager, streamed = load(path, monkeypatch, stream=False), load(path, monkeypatch, stream=True)

    write_eval_set(eager.eval_set, tmp_path / "eager.json")
    write_eval_set(streamed.eval_set, tmp_path / "streamed.json")

    assert (tmp_path / "streamed.json").read_text() == (tmp_path / "eager.json").read_text()
    assert streamed.eval_set.model_dump_json() == eager.eval_set.model_dump_json()
    assert pickle.loads(pickle.dumps(streamed.eval_set)) == eager.eval_set
    assert copy.deepcopy(streamed.eval_set).eval_cases == list(eager.eval_set.eval_cases)


def test_an_empty_list_of_cases_streams_as_a_valid_empty_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "empty.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "s", "eval_cases": []}))

    streamed = load(path, monkeypatch, stream=True)

    assert streamed.streamed and len(streamed.eval_set.eval_cases) == 0
    assert not streamed.eval_set.eval_cases


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("legacy.test.json", [{"query": "hi", "expected_tool_use": [], "reference": "hello"}]),
        ("set.yaml", "eval_set_id: s\neval_cases:\n  - eval_id: c\n    conversation: []\n"),
        ("inf.evalset.json", '{"eval_set_id": "s", "creation_timestamp": 1e999, "eval_cases": []}'),
        ("twice.evalset.json", '{"eval_set_id": "s", "eval_cases": [], "eval_cases": []}'),
    ],
    ids=["legacy-list", "yaml", "number-only-pydantic-reads", "cases-given-twice"],
)
def test_shapes_the_streaming_reader_leaves_are_read_eagerly(
    name: str, content: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))

    loaded = load(path, monkeypatch, stream=True)

    assert not loaded.streamed
    assert outcome(path, monkeypatch, stream=True) == outcome(path, monkeypatch, stream=False)


# --- same problems -----------------------------------------------------------------------------


def _bad_type_deep() -> dict[str, Any]:
    bad = copy.deepcopy(RICH)
    bad["eval_cases"][0]["conversation"][1]["intermediate_data"]["invocation_events"][0]["content"][
        "parts"
    ][0]["function_call"]["name"] = 5
    return bad


_CASE_PROBLEMS = eval_set(
    case("a"),
    {"eval_idd": "b", "conversation": [invocation()]},
    case("c", conversaton=[]),
    5,
    case("d", conversation=[{"user_content": {"parts": [{"text": 1}]}}]),
    {"evalId": "e", "conversation": [invocation(finalResponce={})]},
)

BROKEN: dict[str, tuple[str, Any]] = {
    "unterminated": (".evalset.json", '{"eval_set_id": "s", "eval_cases": [{"eval_id": "c"'),
    "missing-comma": (".evalset.json", '{\n  "eval_set_id": "s"\n  "eval_cases": []\n}'),
    "bad-value": (".json", '{\n  "eval_set_id": "s",\n  "eval_cases": [,]\n}'),
    "trailing-garbage": (".evalset.json", '{"eval_set_id": "s", "eval_cases": []} x'),
    "empty-file": (".evalset.json", ""),
    "whitespace-only": (".evalset.json", " \n\t\n"),
    "not-utf8": (".evalset.json", b'{"eval_set_id": "\xff", "eval_cases": []}'),
    "a-string": (".evalset.json", '"just text"'),
    "wrong-type-deep": (".evalset.json", _bad_type_deep()),
    "case-problems": (".evalset.json", _CASE_PROBLEMS),
    "header-and-case-problems": (
        ".evalset.json",
        {
            "creation_timestamp": "noon",
            "descripton": "typo",
            "eval_cases": [case("a", final_session_state=3), {"eval_id": "b"}],
            "name": 5,
            "zzz": 1,
        },
    ),
    "camel-header-problems": (
        ".evalset.json",
        {"evalCases": [{"evalId": 1, "conversation": []}], "evalSetID": "s", "description": []},
    ),
    "cases-in-both-spellings": (
        ".evalset.json",
        '{"eval_set_id": "s", "eval_cases": [], "evalCases": [{"eval_id": 1}]}',
    ),
    "cases-not-a-list": (".evalset.json", {"eval_set_id": "s", "eval_cases": {"c": {}}}),
    "no-cases": (".evalset.json", {"eval_set_id": "s"}),
    "empty-object": (".evalset.json", {}),
    "jsonl-bad-lines": (
        ".jsonl",
        '{"eval_set_id": "s"}\n\n{"eval_id": "a", "conversation": []}\n[1]\n{"eval_id": 3}\n'
        '{"eval_set_id": "again"}\n{"eval_id": "b", "conversation": [}\n',
    ),
    "jsonl-bad-header": (
        ".jsonl",
        '{"eval_set_id": 5, "name": []}\n{"eval_id": "a", "conversation": []}\n',
    ),
    "jsonl-empty": (".jsonl", "\n  \n"),
    "jsonl-not-utf8": (".jsonl", b'{"eval_id": "a", "conversation": []}\n{"eval_id": "\xe9"}\n'),
    "jsonl-bom-and-crlf": (
        ".jsonl",
        '\ufeff{"eval_id": "a", "conversation": []}\r\n{"eval_id": "a", "conversation": 1}\r\n',
    ),
}


@pytest.mark.parametrize(("suffix", "content"), BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_file_gives_the_same_problems_streamed_as_read_whole(
    suffix: str, content: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / f"broken{suffix}"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content), "utf-8")

    eager = outcome(path, monkeypatch, stream=False)
    streamed = outcome(path, monkeypatch, stream=True)

    assert isinstance(eager, list) and eager, "each of these inputs is broken"
    assert streamed == eager


def test_a_header_problem_and_case_problems_come_in_the_eager_readers_order(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "order.evalset.json"
    path.write_text(json.dumps(BROKEN["header-and-case-problems"][1]))

    problems = outcome(path, monkeypatch, stream=True)

    assert [(p.path, p.message) for p in problems] == [
        ("", "missing required key 'eval_set_id'"),
        ("name", "expected a string; got 5"),
        ("eval_cases[0].final_session_state", "expected an object; got 3"),
        (
            "eval_cases[1]",
            "has neither 'conversation' nor 'conversation_scenario'; give exactly one "
            "(a static conversation, or a scenario for the user simulator)",
        ),
        ("creation_timestamp", 'expected a number; got "noon"'),
        ("", "unknown key 'descripton' (did you mean 'description'?)"),
        ("", "unknown key 'zzz'"),
    ]


def test_a_syntax_error_in_a_huge_file_names_its_line_and_column(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "huge.evalset.json"
    path.write_text('{\n  "eval_set_id": "s",\n  "eval_cases": [\n    {"eval_id": "c",}\n  ]\n}')
    monkeypatch.setattr(evalset_io, "EXACT_LIMIT", 0)  # as if too big to read whole

    problems = outcome(path, monkeypatch, stream=True)

    assert problems == [
        Problem(
            str(path),
            "",
            "malformed JSON: invalid object key (must be a string) at line 4 column 21",
        )
    ]


def test_a_huge_file_that_stops_short_says_so_at_its_end(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "cut.evalset.json"
    path.write_text('{"eval_set_id": "s",\n "eval_cases": [{"eval_id": "c"')
    monkeypatch.setattr(evalset_io, "EXACT_LIMIT", 0)

    (problem,) = outcome(path, monkeypatch, stream=True)

    assert problem.message == "malformed JSON: premature EOF at line 2 column 31"


# --- the threshold -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, 4.0), ("0", 0.0), ("2.5", 2.5), ("lots", 4.0), ("-3", 0.0), ("inf", 4.0)],
)
def test_the_threshold_is_read_from_assay_stream_mb(
    value: str | None, expected: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    if value is None:
        monkeypatch.delenv("ASSAY_STREAM_MB", raising=False)
    else:
        monkeypatch.setenv("ASSAY_STREAM_MB", value)

    assert stream_threshold_mb() == expected


def test_only_files_larger_than_the_threshold_stream(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "set.evalset.json"
    path.write_text(json.dumps(eval_set(case("a"))))
    size_mb = path.stat().st_size / 2**20

    monkeypatch.setenv("ASSAY_STREAM_MB", str(size_mb * 2))
    assert not should_stream(path) and not load_eval_set(path).streamed
    monkeypatch.setenv("ASSAY_STREAM_MB", str(size_mb / 2))
    assert should_stream(path) and load_eval_set(path).streamed
    assert not should_stream(tmp_path / "missing.json") and not should_stream(tmp_path)


# --- memory ------------------------------------------------------------------------------------

CASES = 20_000


def _small_case(i: int) -> dict[str, Any]:
    scenario = {"starting_prompt": f"hi {i}", "conversation_plan": "ask"}
    return {"eval_id": f"c{i}", "conversation_scenario": scenario}


def _measure(load_it: Callable[[], LoadedEvalSet]) -> tuple[LoadedEvalSet, int]:
    """What loading gives, and the peak of Python memory while loading."""
    tracemalloc.start()
    try:
        return load_it(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("suffix", [".jsonl", ".evalset.json"])
def test_a_streamed_load_of_20000_cases_peaks_far_below_the_eager_one(
    suffix: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / f"big{suffix}"
    cases = [_small_case(i) for i in range(CASES)]
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    else:
        path.write_text(json.dumps({"eval_set_id": "big", "eval_cases": cases}))
    del cases

    eager, eager_peak = _measure(lambda: load(path, monkeypatch, stream=False))
    streamed, peak = _measure(lambda: load(path, monkeypatch, stream=True))

    assert len(streamed.eval_set.eval_cases) == len(eager.eval_set.eval_cases) == CASES
    assert peak < eager_peak / 5, (peak, eager_peak)
    last = EvalCase.model_validate(_small_case(CASES - 1))
    assert streamed.eval_set.eval_cases[-1] == eager.eval_set.eval_cases[-1] == last


@pytest.mark.parametrize("suffix", [".evalset.json", ".evalset.jsonl"])
def test_a_streamed_sets_app_name_is_noted_as_it_is_read_and_names_its_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    from assay.runner.evaluate import EvalSetJob, set_result

    session = {"app_name": "travel_app", "user_id": "u"}
    cases = [case("a"), case("b", session_input=session), case("c")]
    path = tmp_path / f"named{suffix}"
    if suffix.endswith("jsonl"):
        path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    else:
        path.write_text(json.dumps(eval_set(*cases)), encoding="utf-8")
    monkeypatch.setenv("ASSAY_STREAM_MB", "0")

    loaded = load_eval_set(path)
    parsed: list[bytes] = []
    spilled = loaded.eval_set.eval_cases
    monkeypatch.setattr(spilled, "_parse", lambda body: parsed.append(body))  # counts reads
    result = set_result(EvalSetJob(loaded), [], {}, 0.0)

    assert loaded.streamed and loaded.eval_set.app_name == "travel_app"  # type: ignore[attr-defined]
    assert result.eval_set_result_id.startswith("travel_app_") and parsed == []
