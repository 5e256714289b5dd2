"""Streamed traces (``ASSAY_STREAM_MB``): each case's invocations go to the spill file and are
parsed when asked for, with the same runs, lookups and problems as the eager reader."""

from __future__ import annotations

import copy
import json
import tracemalloc
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest
from _support import Example

from assay._internal.spill import shared_spill
from assay.errors import Problem, TracesError
from assay.evalset import Invocation
from assay.history.compact import Inputs, _actual
from assay.results import trace_stream
from assay.results import traces as traces_module
from assay.results.run_index import RunIndex
from assay.results.traces import Traces, load_traces

STREAM_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stream"
SET_IDS = ("travel_assistant", "other_set", "unknown")


def write(path: Path, content: Any) -> Path:
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def load(paths: list[Path], monkeypatch: pytest.MonkeyPatch, *, stream: bool) -> Traces:
    monkeypatch.setenv("ASSAY_STREAM_MB", "0" if stream else "100000")
    return load_traces(paths)


def answers(traces: Traces, eval_ids: list[str]) -> dict[str, Any]:
    """Everything a caller can ask of ``traces``, comparable across readers."""
    entries = sorted(
        ((k[0] or "", k[1]), run, [i.model_dump() for i in found])
        for k, run, found in traces.entries()
    )
    by_case = {
        (set_id, eval_id): (
            traces.get(set_id, eval_id),
            traces.runs(set_id, eval_id),
            [traces.lookup(s, eval_id, run) for s in (set_id, None) for run in (1, 2, 3)],
        )
        for set_id in SET_IDS
        for eval_id in eval_ids
    }
    return {"entries": entries, "by_case": by_case, "sources": traces.sources}


def outcome(paths: list[Path], monkeypatch: pytest.MonkeyPatch, *, stream: bool) -> Any:
    try:
        traces = load(paths, monkeypatch, stream=stream)
    except TracesError as exc:
        return exc.problems
    return answers(traces, EVAL_IDS)


@pytest.fixture
def mapping(example: Example) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(example.traces.read_text(encoding="utf-8"))
    return data


EVAL_IDS = [
    "forecast_paris",
    "book_flight_lisbon",
    "convert_currency",
    "greeting",
    "book_cheapest_and_convert",
]


def case_result(set_id: str, eval_id: str, actuals: list[Any]) -> dict[str, Any]:
    rows = [
        {"actual_invocation": a, "expected_invocation": None, "eval_metric_results": []}
        for a in actuals
    ]
    return {
        "eval_set_id": set_id,
        "eval_id": eval_id,
        "final_eval_status": 1,
        "eval_metric_result_per_invocation": rows,
    }


def set_result(set_id: str, mapping: dict[str, Any], *, id_last: bool = False) -> dict[str, Any]:
    cases = [case_result(set_id, eval_id, found) for eval_id, found in mapping.items()]
    cases.append(case_result(set_id, "greeting", mapping["forecast_paris"]))  # a second run
    if id_last:
        return {"eval_set_result_id": "r", "eval_case_results": cases, "eval_set_id": set_id}
    return {"eval_set_result_id": "r", "eval_set_id": set_id, "eval_case_results": cases}


# --- same traces -------------------------------------------------------------------------------


def shapes(mapping: dict[str, Any]) -> dict[str, Any]:
    runs = {**mapping, "greeting#run2": mapping["forecast_paris"], "greeting#run3": []}
    camel = json.loads(
        json.dumps(set_result("travel_assistant", mapping))
        .replace('"eval_set_id"', '"evalSetId"')
        .replace('"eval_case_results"', '"evalCaseResults"')
        .replace('"actual_invocation"', '"actualInvocation"')
    )
    return {
        "mapping": mapping,
        "mapping-with-runs": runs,
        "set-result": set_result("travel_assistant", mapping),
        "set-id-after-the-cases": set_result("travel_assistant", mapping, id_last=True),
        "camel-case": camel,
        "list-of-set-results": [
            set_result("travel_assistant", mapping, id_last=True),
            set_result(
                "other_set", {k: mapping[k] for k in ("convert_currency", "forecast_paris")}
            ),
        ],
        "legacy-double-encoded": json.dumps(json.dumps(set_result("other_set", mapping))),
        "empty-mapping": {},
        "result-with-another-key-first": {
            "notes": "x",
            **set_result("travel_assistant", mapping),
        },
    }


SHAPES = list(shapes({key: [] for key in EVAL_IDS}))


@pytest.mark.parametrize("shape", SHAPES)
def test_a_streamed_traces_file_answers_as_the_eager_load_does(
    shape: str, mapping: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write(tmp_path / f"{shape}.json", shapes(mapping)[shape])

    streamed = load([path], monkeypatch, stream=True)

    assert streamed.streamed and not streamed.by_case and not streamed.later_runs
    assert answers(streamed, EVAL_IDS) == answers(load([path], monkeypatch, stream=False), EVAL_IDS)


@pytest.mark.parametrize(
    "path",
    [Example().traces, Example().regressed, STREAM_FIXTURES / "two_sets.evalset_result.json"],
    ids=lambda p: p.name,
)
def test_the_bundled_traces_files_stream_to_the_same_runs(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eager = load([path], monkeypatch, stream=False)
    streamed = load([path], monkeypatch, stream=True)

    assert streamed.streamed
    assert answers(streamed, EVAL_IDS) == answers(eager, EVAL_IDS)
    assert sorted(k for k, _, _ in streamed.entries()) == sorted(k for k, _, _ in eager.entries())


def test_a_result_file_spelling_its_cases_key_both_ways_is_read_eagerly(
    mapping: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    first = set_result("travel_assistant", mapping)
    second = set_result("other_set", mapping)
    second["evalCaseResults"] = second.pop("eval_case_results")
    path = write(tmp_path / "mixed.json", [first, second])

    streamed = load([path], monkeypatch, stream=True)

    assert not streamed.streamed
    assert answers(streamed, EVAL_IDS) == answers(load([path], monkeypatch, stream=False), EVAL_IDS)


# --- merging -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "streamed_files", [(True, False), (False, True), (True, True)], ids=["a", "b", "both"]
)
def test_merging_streamed_and_in_memory_files_lets_the_later_file_win(
    streamed_files: tuple[bool, bool],
    mapping: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    replaced = copy.deepcopy(mapping["forecast_paris"])
    replaced[0]["invocation_id"] = "replaced"
    first = write(tmp_path / "a.json", {**mapping, "greeting#run2": mapping["greeting"]})
    second = write(
        tmp_path / "b.json",
        {"forecast_paris": replaced, "greeting#run2": replaced, "new_case": replaced},
    )
    eager = load([first, second], monkeypatch, stream=False)

    merged = load([first], monkeypatch, stream=streamed_files[0])
    merged.merge(load([second], monkeypatch, stream=streamed_files[1]))

    ids = [*EVAL_IDS, "new_case"]
    assert answers(merged, ids) == answers(eager, ids)
    found = merged.get("any", "forecast_paris")
    assert found is not None and found[0].invocation_id == "replaced"
    assert merged.streamed


def test_adding_a_run_replaces_the_spilled_one(
    mapping: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    traces = load([write(tmp_path / "t.json", mapping)], monkeypatch, stream=True)
    mine = [Invocation.model_validate({"user_content": {"parts": [{"text": "mine"}]}})]

    traces.add((None, "greeting"), mine)

    assert traces.get("s", "greeting") is mine
    assert traces.runs("s", "greeting") == [(1, mine)]
    assert [run for key, run, _ in traces.entries() if key == (None, "greeting")] == [1]


def test_lookup_finds_only_the_exact_entry(
    mapping: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write(tmp_path / "r.json", set_result("travel_assistant", mapping))
    traces = load([path], monkeypatch, stream=True)

    assert traces.lookup("travel_assistant", "greeting", 2) is not None
    assert traces.lookup(None, "greeting", 1) is None
    assert traces.lookup("travel_assistant", "greeting", 3) is None
    assert [run for run, _ in traces.runs("travel_assistant", "greeting")] == [1, 2]


def test_a_stored_reference_to_a_streamed_trace_decodes(
    mapping: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write(tmp_path / "t.json", {**mapping, "greeting#run2": mapping["forecast_paris"]})
    traces = load([path], monkeypatch, stream=True)
    inputs = Inputs([], traces)

    found = _actual(["t", "travel_assistant", "greeting", 2], inputs)

    assert found == load([path], monkeypatch, stream=False).runs("x", "greeting")[1][1]


# --- same problems -----------------------------------------------------------------------------


def broken(mapping: dict[str, Any]) -> dict[str, Any]:
    bad_invocation = copy.deepcopy(mapping["greeting"])
    bad_invocation[0]["user_content"]["parts"][0]["text"] = 5
    bad_invocation[0]["final_responce"] = {}
    bad_rows = set_result("travel_assistant", mapping)
    bad_rows["eval_case_results"][1]["eval_metric_result_per_invocation"][0][
        "actual_invocation"
    ] = {"user_content": 3}
    bad_rows["eval_case_results"][2] = {"eval_id": 7}
    bad_rows["eval_case_results"][3]["eval_metric_result_per_invocation"] = {"a": 1}
    return {
        "bad-json": '{"greeting": [}',
        "cut-short": '{"greeting": [{"user_content": {"parts": [',
        "empty-file": "",
        "trailing-garbage": "{} {}",
        "not-utf8": b'{"greeting": "\xff"}',
        "a-number": "5",
        "empty-list": "[]",
        "not-a-list-of-invocations": {"greeting": {"user_content": {}}, "other": 5},
        "bad-invocations": {"greeting": bad_invocation, "forecast_paris": [7]},
        "bad-case-results": bad_rows,
        "cases-not-a-list": {"eval_set_id": "s", "eval_case_results": 5},
        "cases-an-object": {"eval_set_id": "s", "eval_case_results": {"item": {}}},
        "list-with-non-objects": [set_result("s", mapping), 5, "x"],
        "set-without-cases": [{"eval_set_id": "s"}, set_result("t", mapping)],
        "key-given-twice": '{"greeting": [], "greeting": 5}',
        "legacy-string-not-json": json.dumps("not json"),
    }


BROKEN = list(broken({k: [{"user_content": {"parts": [{}]}}] for k in EVAL_IDS}))


@pytest.mark.parametrize("name", BROKEN)
def test_a_broken_traces_file_gives_the_same_problems_streamed_as_read_whole(
    name: str, mapping: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    content = broken(mapping)[name]
    path = tmp_path / "broken.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        write(path, content)

    eager = outcome([path], monkeypatch, stream=False)

    assert isinstance(eager, list) and eager, "each of these inputs is broken"
    assert outcome([path], monkeypatch, stream=True) == eager


def test_problems_of_several_files_are_all_reported(
    mapping: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    first = write(tmp_path / "a.json", {"greeting": 5})
    second = write(tmp_path / "b.json", {"greeting": [5]})
    paths = [first, second]

    assert outcome(paths, monkeypatch, stream=True) == outcome(paths, monkeypatch, stream=False)


def test_a_syntax_error_in_a_huge_traces_file_names_its_line_and_column(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write(tmp_path / "huge.json", '{\n  "greeting": [\n    {"user_content": }\n  ]\n}')
    monkeypatch.setattr(traces_module, "EXACT_LIMIT", 0)

    problems = outcome([path], monkeypatch, stream=True)

    assert problems == [
        Problem(
            str(path),
            "",
            "malformed JSON: unallowed token at this point in JSON text at line 3 column 22",
        )
    ]


def test_a_failed_streamed_load_leaves_nothing_in_the_spill_file(
    mapping: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write(tmp_path / "t.json", {**mapping, "zzz": 5})
    stored: list[str] = []
    real = trace_stream._Writer.fail

    def spy(writer: Any) -> None:
        stored.append(writer.prefix)
        real(writer)

    monkeypatch.setattr(trace_stream._Writer, "fail", spy)

    assert isinstance(outcome([path], monkeypatch, stream=True), list)
    (prefix,) = set(stored)
    spill = trace_stream.shared_spill()
    for eval_id in EVAL_IDS:
        key = trace_stream.spill_key(prefix, (None, eval_id))
        assert spill.indexes(trace_stream.KIND, key) == []


# --- memory ------------------------------------------------------------------------------------

CASES = 20_000


def test_a_streamed_load_of_20000_cases_peaks_far_below_the_eager_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    turn = {"user_content": {"parts": [{"text": "hi"}]}}
    path = write(tmp_path / "big.json", {f"c{i}": [turn] for i in range(CASES)})
    peaks = {}
    loaded = {}
    for stream in (False, True):
        tracemalloc.start()
        try:
            loaded[stream] = load([path], monkeypatch, stream=stream)
            peaks[stream] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    assert peaks[True] < peaks[False] / 5, peaks
    assert len(loaded[True].spilled[1]) == len(loaded[False].by_case) == CASES
    assert loaded[True].get("s", f"c{CASES - 1}") == loaded[False].get("s", f"c{CASES - 1}")


def test_a_clean_mapping_is_stored_as_its_text_without_building_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run = '[{"invocation_id": "i", "user_content": {"parts": [{"text": "hi"}]}, "creation_timestamp": 1.50}]'
    path = write(tmp_path / "t.json", '{"c": ' + run + ', "c#run2": ' + run + "}")

    def no_events(handle: Any) -> Any:
        raise AssertionError("built by ijson")

    monkeypatch.setattr(trace_stream, "kvitems", no_events)
    traces = load([path], monkeypatch, stream=True)

    prefix = traces.spilled[1][(None, "c")]
    body = shared_spill().get(trace_stream.KIND, trace_stream.spill_key(prefix, (None, "c")), 1)
    assert body == run.encode()
    assert [r for r, _ in traces.runs("s", "c")] == [1, 2]


@pytest.mark.parametrize("number", ["123456789012345678901234567890", "1e400"])
def test_a_number_ijson_refuses_in_a_huge_traces_file_is_still_a_syntax_error(
    number: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    text = '{"c": [{"user_content": {"parts": [{"function_call": {"args": {"n": %s}}}]}}]}'
    path = write(tmp_path / "huge.json", text % number)
    monkeypatch.setattr(traces_module, "EXACT_LIMIT", 0)

    problems = outcome([path], monkeypatch, stream=True)

    assert isinstance(problems, list) and len(problems) == 1
    assert problems[0].message.startswith("malformed JSON: ")
    assert "overflow at line 1 column" in problems[0].message


def test_a_run_index_answers_as_a_dict_in_order_before_and_after_a_second_set_id() -> None:
    index = RunIndex()
    plain: dict[Any, str] = {}
    steps: list[tuple[Any, str]] = [((None, "a"), "p"), ((None, "b"), "q"), ((None, "a"), "r")]
    steps += [(("s", "a"), "p"), ((None, "c"), "p")]
    for key, prefix in steps:
        index[key] = prefix
        plain[key] = prefix
        assert list(index.items()) == list(plain.items()) and len(index) == len(plain)
        for probe in [(None, "a"), ("s", "a"), ("s", "b"), (None, "z")]:
            assert (probe in index, index.get(probe)) == (probe in plain, plain.get(probe))
    del index[(None, "b")]
    assert list(index) == [(None, "a"), ("s", "a"), (None, "c")]
    with pytest.raises(KeyError):
        del index[(None, "b")]


def test_a_run_index_of_one_set_id_holds_no_tuple_per_case() -> None:
    ids = [f"case_{n:05d}" for n in range(10_000)]

    def held(index: MutableMapping[Any, str]) -> int:
        tracemalloc.start()
        for eval_id in ids:
            index[(None, eval_id)] = "p"
        size = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        return size

    compact, plain = held(RunIndex()), held({})

    assert compact < plain - 10_000 * 30  # a tuple a case is 40 bytes or more


def test_a_streamed_mappings_index_is_asked_of_the_spill_file_and_answers_in_file_order(
    mapping: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A million cases' ids held for the run took ~110 MB: the mapping's are listed in the spill
    file, in file order, and asked of it."""
    order = ["greeting", "forecast_paris", "convert_currency"]
    body = {key: mapping[key] for key in order} | {"greeting#run2": mapping["greeting"]}
    path = write(tmp_path / "t.json", body)

    streamed = load([path], monkeypatch, stream=True)

    first, second = streamed.spilled[1], streamed.spilled[2]
    assert not first._ids and not first._keys  # nothing held in memory
    assert list(first) == [(None, key) for key in order] and len(first) == 3
    assert list(second) == [(None, "greeting")]
    assert (None, "greeting") in first and (None, "book_flight_lisbon") not in first
    assert ("s", "greeting") not in first
    assert answers(streamed, EVAL_IDS) == answers(load([path], monkeypatch, stream=False), EVAL_IDS)
    assert [run for run, _ in streamed.runs("s", "greeting")] == [1, 2]


@pytest.mark.parametrize(
    "text",
    [
        '{"greeting": [], "forecast_paris": [], "greeting": []}',
        '{"greeting": [], "greeting#run1": []}',
        '{"greeting": [], "greeting#run2": [], "greeting#run2": []}',
    ],
    ids=["a key twice", "run 1 named twice", "a later run twice"],
)
def test_a_run_given_twice_in_a_streamed_mapping_is_read_as_the_eager_reader_reads_it(
    text: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write(tmp_path / "t.json", text)

    eager = load([path], monkeypatch, stream=False)
    streamed = load([path], monkeypatch, stream=True)

    assert not streamed.streamed  # left to the eager reader
    assert sorted(k for k, _, _ in streamed.entries()) == sorted(k for k, _, _ in eager.entries())


def test_a_later_file_replacing_a_case_of_a_spilled_index_reads_it_back_first(
    mapping: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    first = write(tmp_path / "a.json", {k: mapping[k] for k in ("greeting", "forecast_paris")})
    second = write(tmp_path / "b.json", {"greeting": []})

    merged = load([first, second], monkeypatch, stream=True)

    assert list(merged.spilled[1]) == [(None, "greeting"), (None, "forecast_paris")]
    assert merged.get("s", "greeting") == []
    assert merged.get("s", "forecast_paris") is not None
