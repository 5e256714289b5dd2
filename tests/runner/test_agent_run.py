"""Saved traces written as conversations end: the same bytes as the whole document, a file under
its name only once the run is complete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.evalset.content import Content, Part
from assay.evalset.invocation import Invocation
from assay.runner.agent_run import TracesWriter, _indented, traces_document, write_traces
from assay.runner.inference import CaseInference


def _invocation(eval_id: str, text: str) -> Invocation:
    return Invocation(
        invocation_id=f"{eval_id}-turn0",
        user_content=Content(role="user", parts=[Part(text="question")]),
        final_response=Content(role="model", parts=[Part(text=text)]),
        creation_timestamp=1.5,
    )


INFERENCES = [
    CaseInference("plain", 1, [_invocation("plain", "ok")]),
    CaseInference("plain", 2, [_invocation("plain", "ok again"), _invocation("plain", "more")]),
    CaseInference("broken", 1, error="turn 1: the agent raised ValueError: no"),
    CaseInference("lines", 1, [_invocation("lines", 'two\nlines, "quoted", \\ and \t tab')]),
    CaseInference("unicode", 1, [_invocation("unicode", "naïve café — 東京 🚆")]),
    CaseInference("silent", 1, []),
]


def _whole(inferences: list[CaseInference]) -> str:
    """What the traces file was when it was written at the end from the whole document."""
    return json.dumps(traces_document(inferences), indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("count", [0, 1, 3, len(INFERENCES)])
def test_a_streamed_traces_file_is_byte_for_byte_the_whole_document(
    tmp_path: Path, count: int
) -> None:
    path = tmp_path / "saved.json"
    with TracesWriter(path) as writer:
        for inference in INFERENCES[:count]:
            writer.add(inference)

    assert path.read_text(encoding="utf-8") == _whole(INFERENCES[:count])
    assert not writer.partial.exists()


def test_write_traces_writes_the_same_bytes_as_the_document(tmp_path: Path) -> None:
    path = tmp_path / "saved.json"
    write_traces(path, INFERENCES)
    assert path.read_text(encoding="utf-8") == _whole(INFERENCES)


def test_the_file_has_its_name_only_once_closed(tmp_path: Path) -> None:
    path = tmp_path / "saved.json"
    writer = TracesWriter(path)
    writer.add(INFERENCES[0])

    assert not path.exists() and writer.partial.exists()
    writer.close()
    assert path.exists() and not writer.partial.exists()


def test_a_run_that_fails_leaves_a_complete_partial_file_and_nothing_under_the_name(
    tmp_path: Path,
) -> None:
    path = tmp_path / "saved.json"
    with pytest.raises(KeyboardInterrupt), TracesWriter(path) as writer:
        writer.add(INFERENCES[0])
        writer.add(INFERENCES[3])
        raise KeyboardInterrupt

    assert not path.exists()
    written = writer.partial.read_text(encoding="utf-8")
    assert written == _whole([INFERENCES[0], INFERENCES[3]])


def test_a_run_that_fails_before_any_conversation_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "saved.json"
    with pytest.raises(RuntimeError), TracesWriter(path):
        raise RuntimeError("bad input")
    assert list(tmp_path.iterdir()) == []


def test_a_run_written_again_under_a_key_keeps_the_first(tmp_path: Path) -> None:
    path = tmp_path / "saved.json"
    again = CaseInference("plain", 1, [_invocation("plain", "from the resumed run")])
    with TracesWriter(path) as writer:
        writer.add(INFERENCES[0])
        writer.add(again)

    assert path.read_text(encoding="utf-8") == _whole([INFERENCES[0]])


TRICKY: list[object] = [
    {},
    [],
    {"empty": {}, "none": [], "nested": [{"a": [1, 2.5, None, True, False]}, []]},
    {"floats": [1e-05, 1e16, 0.1, -0.0, 123456789.123456, float("inf"), float("-inf")]},
    {"big": 10**30, "text": 'tab\t nl\n cr\r "q" \\ \x00 \x1f \x7f é 東 🚆 \u2028'},
    {7: "int key", 2.5: "float key", True: "bool key", None: "none key"},
    ("a", "tuple"),
]


def test_the_traces_writer_lays_out_json_data_as_json_dumps_does(tmp_path: Path) -> None:
    for value in TRICKY:
        parts: list[str] = []
        _indented(value, "  ", parts)
        whole = json.dumps({"k": value}, indent=2, ensure_ascii=False)
        assert "{\n  " + '"k": ' + "".join(parts) + "\n}" == whole
