"""Traces files: both shapes load, results round-trip, problems name file and JSON path."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from _support import Example, RunCli
from google.adk.evaluation._eval_set_results_manager_utils import parse_eval_set_result_json
from pydantic.alias_generators import to_camel

from assay.errors import TracesError
from assay.results.trace_stream import parse_invocations
from assay.results.traces import Traces, load_traces

CASE_LENGTHS = {
    "forecast_paris": 1,
    "book_flight_lisbon": 2,
    "convert_currency": 1,
    "greeting": 1,
    "book_cheapest_and_convert": 2,
}


def write(path: Path, content: Any) -> Path:
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def lengths(traces: Traces) -> dict[tuple[str | None, str], int]:
    return {key: len(invocations) for key, invocations in traces.by_case.items()}


def without_none(value: Any) -> Any:
    """``value`` with every null dropped (ADK writes each unset field of free-form objects)."""
    if isinstance(value, dict):
        return {k: without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_none(v) for v in value]
    return value


def dumped(traces: Traces, eval_set_id: str) -> dict[str, Any]:
    """The invocations of every case, as plain data without nulls, looked up as the runner does."""
    out = {}
    for eval_id in CASE_LENGTHS:
        found = traces.get(eval_set_id, eval_id)
        assert found is not None, eval_id
        out[eval_id] = without_none([inv.model_dump(mode="json") for inv in found])
    return out


def problems_of(*paths: Path) -> list[str]:
    with pytest.raises(TracesError) as info:
        load_traces(paths)
    return [str(problem) for problem in info.value.problems]


@pytest.fixture
def mapping(example: Example) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(example.traces.read_text(encoding="utf-8"))
    return data


@pytest.fixture
def results_file(run_cli: RunCli, example: Example, tmp_path: Path) -> Path:
    """``assay eval --output`` on the example: one EvalSetResult object."""
    out = tmp_path / "results.json"
    run = run_cli("eval", example.evalset, "--traces", example.traces, "--output", out)
    assert run.code == 0, run.output
    return out


# --- shapes -----------------------------------------------------------------------------------


def test_a_mapping_of_eval_id_to_invocations_loads_for_any_eval_set(example: Example) -> None:
    traces = load_traces([example.traces])

    assert lengths(traces) == {(None, eval_id): n for eval_id, n in CASE_LENGTHS.items()}
    assert traces.sources == [str(example.traces)]
    found = traces.get("any_set", "book_flight_lisbon")
    assert found is not None
    assert [inv.invocation_id for inv in found] == ["e-book-1", "e-book-2"]


def test_a_mapping_written_as_yaml_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path / "traces.yaml",
        "greeting:\n  - user_content: {role: user, parts: [{text: hi}]}\n",
    )

    assert lengths(load_traces([path])) == {(None, "greeting"): 1}


def test_an_adk_evalset_result_file_loads_its_actual_invocations(
    results_file: Path, example: Example, tmp_path: Path
) -> None:
    # What ADK's LocalEvalSetResultsManager writes: model_dump_json of its own EvalSetResult.
    adk = parse_eval_set_result_json(results_file.read_text(encoding="utf-8"))
    path = write(tmp_path / "run.evalset_result.json", adk.model_dump_json(indent=2))

    traces = load_traces([path])

    assert lengths(traces) == {
        ("travel_assistant", eval_id): n for eval_id, n in CASE_LENGTHS.items()
    }
    assert dumped(traces, "travel_assistant") == dumped(
        load_traces([example.traces]), "travel_assistant"
    )


def test_adks_legacy_double_encoded_result_file_loads(results_file: Path, tmp_path: Path) -> None:
    adk = parse_eval_set_result_json(results_file.read_text(encoding="utf-8"))
    path = write(tmp_path / "legacy.evalset_result.json", json.dumps(adk.model_dump_json()))

    traces = load_traces([path])

    assert lengths(traces) == {
        ("travel_assistant", eval_id): n for eval_id, n in CASE_LENGTHS.items()
    }


def test_a_result_file_with_camel_case_keys_loads_like_its_snake_case_form(
    results_file: Path, example: Example, tmp_path: Path
) -> None:
    def camel(value: dict[str, Any]) -> dict[str, Any]:
        return {to_camel(key): item for key, item in value.items()}

    data = camel(json.loads(results_file.read_text(encoding="utf-8")))
    data["evalCaseResults"] = [camel(case) for case in data["evalCaseResults"]]
    for case in data["evalCaseResults"]:
        rows = case["evalMetricResultPerInvocation"]
        case["evalMetricResultPerInvocation"] = [camel(row) for row in rows]
    path = write(tmp_path / "camel.evalset_result.json", data)

    traces = load_traces([path])

    assert ("travel_assistant", "greeting") in traces.by_case  # evalSetId was read
    assert dumped(traces, "travel_assistant") == dumped(
        load_traces([example.traces]), "travel_assistant"
    )


def test_a_list_of_set_results_as_output_writes_for_several_sets_loads_each_under_its_set_id(
    run_cli: RunCli, example: Example, tmp_path: Path, mapping: dict[str, Any]
) -> None:
    other = json.loads(example.evalset.read_text(encoding="utf-8"))
    other["eval_set_id"] = "other_set"
    other_path = write(tmp_path / "other.evalset.json", other)
    out = tmp_path / "results.json"
    run = run_cli(
        "eval",
        *(example.evalset, other_path),
        *("--config", example.config, "--traces", example.traces, "--output", out),
    )
    assert run.code == 0, run.output

    traces = load_traces([out])

    assert {key for key in traces.by_case} == {
        (set_id, eval_id) for set_id in ("travel_assistant", "other_set") for eval_id in mapping
    }
    assert dumped(traces, "other_set") == dumped(traces, "travel_assistant")


def test_a_set_results_invocations_are_preferred_for_their_own_eval_set(tmp_path: Path) -> None:
    def invocation(text: str) -> dict[str, Any]:
        return {"user_content": {"role": "user", "parts": [{"text": text}]}}

    def result(set_id: str, text: str) -> dict[str, Any]:
        row = {"actual_invocation": invocation(text)}
        case = {"eval_id": "c1", "eval_metric_result_per_invocation": [row]}
        return {"eval_set_id": set_id, "eval_case_results": [case]}

    results = write(tmp_path / "results.json", [result("a", "from a"), result("b", "from b")])
    fallback = write(tmp_path / "traces.json", {"c1": [invocation("from mapping")]})

    traces = load_traces([results, fallback])

    def text(set_id: str) -> str | None:
        found = traces.get(set_id, "c1")
        assert found is not None
        parts = found[0].user_content.parts
        assert parts is not None
        return parts[0].text

    assert (text("a"), text("b"), text("c")) == ("from a", "from b", "from mapping")


def test_a_case_result_without_invocations_gives_no_trace_for_that_case(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    run_cli("eval", example.evalset, "--traces", example.regressed, "--output", out)

    traces = load_traces([out])

    assert traces.get("travel_assistant", "greeting") is None
    assert traces.get("travel_assistant", "forecast_paris") is not None


# --- round trip -------------------------------------------------------------------------------


def verdicts(results: Any) -> list[tuple[str, int, list[tuple[str, Any, int]], list[str]]]:
    return [
        (
            case["eval_id"],
            case["final_eval_status"],
            [
                (m["metric_name"], m.get("score"), m["eval_status"])
                for m in case["overall_eval_metric_results"]
            ],
            sorted(case["assay"]["metric_reasons"]),
        )
        for case in results["eval_case_results"]
    ]


@pytest.mark.parametrize("traces_name", ["traces.json", "traces_regressed.json"])
def test_evaluating_with_a_runs_own_output_as_traces_reproduces_its_scores(
    run_cli: RunCli, example: Example, tmp_path: Path, traces_name: str
) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    one = run_cli("eval", example.evalset, "--traces", example.dir / traces_name, "--output", first)
    two = run_cli("eval", example.evalset, "--traces", first, "--output", second)

    assert one.code == two.code
    a = json.loads(first.read_text(encoding="utf-8"))
    b = json.loads(second.read_text(encoding="utf-8"))
    assert verdicts(a) == verdicts(b)
    assert a["assay"]["summary"] == b["assay"]["summary"]
    invocations_a = [
        row["actual_invocation"]
        for c in a["eval_case_results"]
        for row in c["eval_metric_result_per_invocation"]
    ]
    invocations_b = [
        row["actual_invocation"]
        for c in b["eval_case_results"]
        for row in c["eval_metric_result_per_invocation"]
    ]
    assert invocations_a == invocations_b


# --- several files ----------------------------------------------------------------------------


def test_several_traces_files_merge_and_a_later_file_wins_on_the_same_case(
    tmp_path: Path, mapping: dict[str, Any]
) -> None:
    first = write(tmp_path / "a.json", {k: mapping[k] for k in ("forecast_paris", "greeting")})
    replaced = copy.deepcopy(mapping["forecast_paris"])
    replaced[0]["invocation_id"] = "replaced"
    second = write(
        tmp_path / "b.json",
        {
            "forecast_paris": replaced,
            "book_flight_lisbon": mapping["book_flight_lisbon"],
            "convert_currency": mapping["convert_currency"],
            "book_cheapest_and_convert": mapping["book_cheapest_and_convert"],
        },
    )

    traces = load_traces([first, second])

    assert lengths(traces) == {(None, eval_id): n for eval_id, n in CASE_LENGTHS.items()}
    assert traces.sources == [str(first), str(second)]
    forecast = traces.get("s", "forecast_paris")
    assert forecast is not None
    assert forecast[0].invocation_id == "replaced"


def test_a_first_streamed_files_index_is_taken_as_it_is_and_a_later_file_still_wins(
    tmp_path: Path, mapping: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copying the first file's index key by key held a million cases' keys twice at once."""
    monkeypatch.setenv("ASSAY_STREAM_MB", "0")
    first = write(tmp_path / "a.json", {k: mapping[k] for k in ("forecast_paris", "greeting")})
    replaced = copy.deepcopy(mapping["forecast_paris"])
    replaced[0]["invocation_id"] = "replaced"
    second = write(tmp_path / "b.json", {"forecast_paris": replaced})
    loaded = load_traces([first])
    merged = Traces()

    merged.merge(loaded)
    assert merged.spilled[1] is loaded.spilled[1]
    merged.merge(load_traces([second]))

    forecast, greeting = merged.get("s", "forecast_paris"), merged.get("s", "greeting")
    assert forecast is not None and forecast[0].invocation_id == "replaced"
    assert greeting is not None and len(greeting) == CASE_LENGTHS["greeting"]


@pytest.mark.parametrize("stream_mb", ["0", "100"], ids=["streamed", "held"])
def test_raw_runs_give_a_spilled_runs_json_unparsed_and_a_held_runs_invocations(
    tmp_path: Path, mapping: dict[str, Any], monkeypatch: pytest.MonkeyPatch, stream_mb: str
) -> None:
    """What a worker process is sent: a streamed file's runs as the spill file holds them."""
    monkeypatch.setenv("ASSAY_STREAM_MB", stream_mb)
    again = copy.deepcopy(mapping["greeting"])
    again[0]["invocation_id"] = "second run"
    traces = load_traces([write(tmp_path / "t.json", {**mapping, "greeting#run2": again})])

    raw = traces.raw_runs("s", "greeting")

    assert [run for run, _ in raw] == [1, 2]
    parsed = [parse_invocations(r) if isinstance(r, bytes) else r for _, r in raw]
    assert all(isinstance(r, bytes) == (stream_mb == "0") for _, r in raw)
    assert parsed == [invocations for _, invocations in traces.runs("s", "greeting")]
    assert parsed[1][0].invocation_id == "second run"
    assert traces.raw_runs("s", "no such case") == []


def test_problems_in_several_traces_files_are_all_reported(tmp_path: Path) -> None:
    bad_json = write(tmp_path / "a.json", "{oops")
    bad_value = write(tmp_path / "b.json", {"greeting": "hello"})

    assert problems_of(bad_json, bad_value) == [
        f"{bad_json}: malformed JSON: key must be a string at line 1 column 2",
        f"{bad_value}: greeting: expected a list of invocations; got a string",
    ]


# --- problems name file and JSON path ---------------------------------------------------------


def test_an_invocation_missing_a_key_names_the_case_and_index(
    tmp_path: Path, mapping: dict[str, Any]
) -> None:
    del mapping["book_flight_lisbon"][1]["user_content"]
    path = write(tmp_path / "traces.json", mapping)

    assert problems_of(path) == [
        f"{path}: book_flight_lisbon[1]: missing required key 'user_content'"
    ]


def test_a_wrongly_typed_value_inside_an_invocation_names_its_full_path(
    tmp_path: Path, mapping: dict[str, Any]
) -> None:
    mapping["greeting"][0]["final_response"] = "just text"
    path = write(tmp_path / "traces.json", mapping)

    [problem] = problems_of(path)

    assert problem.startswith(f"{path}: greeting[0].final_response: expected an object")


def test_an_invalid_actual_invocation_in_a_result_file_names_its_path_in_that_file(
    results_file: Path, tmp_path: Path
) -> None:
    data = json.loads(results_file.read_text(encoding="utf-8"))
    row = data["eval_case_results"][0]["eval_metric_result_per_invocation"][0]
    del row["actual_invocation"]["user_content"]
    path = write(tmp_path / "bad.evalset_result.json", data)

    assert problems_of(path) == [
        f"{path}: eval_case_results[0].eval_metric_result_per_invocation[0].actual_invocation: "
        "missing required key 'user_content'"
    ]


def test_a_problem_in_the_second_set_of_a_result_list_is_prefixed_with_its_index(
    results_file: Path, tmp_path: Path
) -> None:
    data = json.loads(results_file.read_text(encoding="utf-8"))
    broken = copy.deepcopy(data)
    row = broken["eval_case_results"][1]["eval_metric_result_per_invocation"][0]
    row["actual_invocation"]["final_response"] = 5
    path = write(tmp_path / "results.json", [data, broken])

    assert problems_of(path) == [
        f"{path}: [1].eval_case_results[1].eval_metric_result_per_invocation[0]"
        ".actual_invocation.final_response: expected an object; got 5"
    ]


def test_a_missing_actual_invocation_in_a_result_row_is_reported_at_that_row(
    results_file: Path, tmp_path: Path
) -> None:
    data = json.loads(results_file.read_text(encoding="utf-8"))
    data["eval_case_results"][2]["eval_metric_result_per_invocation"][0] = {}
    path = write(tmp_path / "results.json", data)

    assert problems_of(path) == [
        f"{path}: eval_case_results[2].eval_metric_result_per_invocation[0].actual_invocation: "
        "expected an object; got null"
    ]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda d: d.update(eval_case_results=3),
            "eval_case_results: expected a list of case results; got a number",
        ),
        (
            lambda d: d["eval_case_results"][1].pop("eval_id"),
            "eval_case_results[1]: expected a case result with 'eval_id'",
        ),
        (
            lambda d: d["eval_case_results"][0].update(eval_metric_result_per_invocation={}),
            "eval_case_results[0].eval_metric_result_per_invocation: expected a list; got an object",
        ),
    ],
    ids=["case-results-not-a-list", "case-without-eval-id", "rows-not-a-list"],
)
def test_a_malformed_result_file_names_the_json_path(
    results_file: Path, tmp_path: Path, mutate: Any, expected: str
) -> None:
    data = json.loads(results_file.read_text(encoding="utf-8"))
    mutate(data)
    path = write(tmp_path / "results.json", data)

    assert problems_of(path) == [f"{path}: {expected}"]


EXPECTED_SHAPE = (
    "expected an object mapping eval_id to a list of invocations, or an ADK .evalset_result.json "
    "(or a list of them); got "
)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("5", EXPECTED_SHAPE + "a number"),
        ("null", EXPECTED_SHAPE + "null"),
        ("[]", EXPECTED_SHAPE + "an empty list"),
        ('"not json inside"', EXPECTED_SHAPE + "a string"),
        ("[{}, 1]", "[1]: expected an eval set result object; got 1"),
    ],
    ids=["number", "null", "empty-list", "plain-string", "list-with-a-non-object"],
)
def test_a_traces_file_of_the_wrong_shape_says_what_was_expected(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = write(tmp_path / "traces.json", content)

    assert problems_of(path) == [f"{path}: {expected}"]


def test_malformed_traces_json_names_the_file_and_position(tmp_path: Path) -> None:
    path = write(tmp_path / "traces.json", '{"greeting": [}')

    [problem] = problems_of(path)

    assert problem.startswith(f"{path}: malformed JSON: ")
    assert "line 1 column 15" in problem


def test_a_missing_traces_file_is_reported_with_its_name(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"

    assert problems_of(path) == [f"{path}: file not found"]


# --- several runs of a case ---------------------------------------------------------------------


def _turn(text: str) -> dict[str, Any]:
    return {
        "user_content": {"parts": [{"text": "q"}]},
        "final_response": {"parts": [{"text": text}]},
    }


def _answers(runs: list[tuple[int, Any]]) -> list[tuple[int, str]]:
    return [(run, invocations[0].final_response.parts[0].text) for run, invocations in runs]


def test_run_keys_written_by_save_traces_load_as_later_runs_of_their_case(tmp_path: Path) -> None:
    path = write(
        tmp_path / "traces.json",
        {"c#run3": [_turn("third")], "c": [_turn("first")], "c#run2": [_turn("second")]},
    )
    traces = load_traces([path])
    assert _answers(traces.runs("any_set", "c")) == [(1, "first"), (2, "second"), (3, "third")]
    assert traces.runs("any_set", "other") == []


def test_a_case_listed_twice_in_a_result_file_is_two_runs(tmp_path: Path) -> None:
    def case(text: str) -> dict[str, Any]:
        return {
            "eval_id": "c",
            "final_eval_status": 1,
            "eval_metric_result_per_invocation": [{"actual_invocation": _turn(text)}],
        }

    path = write(
        tmp_path / "r.evalset_result.json",
        {"eval_set_id": "s", "eval_case_results": [case("one"), case("two")]},
    )
    assert _answers(load_traces([path]).runs("s", "c")) == [(1, "one"), (2, "two")]
