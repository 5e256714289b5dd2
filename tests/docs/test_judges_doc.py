"""``docs/judges.md`` is true: its worked scripted judge runs the example as it says, and its
table of what each judge asks and reads back matches the requests and the parsers."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _judge_server import JudgeServer
from _support import EXAMPLE_DIR, Example, RunCli

from assay.metrics import final_response_match, hallucinations, rubrics, safety, simulator_quality

DOCS = EXAMPLE_DIR.parent.parent / "docs"
SCRIPT = DOCS / "scripted_judge.yaml"
AGENT = f"{EXAMPLE_DIR / 'agent.py'}:travel_agent"


def passing_score(parse: Callable[[str], Any]) -> Callable[[str], float | None]:
    return lambda text: parse(text).score


def rubric_score(text: str) -> float | None:
    [answer] = rubrics.parse_answers(text)
    return answer.score


# a table row's criterion -> the JSON schema its requests name, and how its answer is scored
ROWS: dict[str, tuple[str, Callable[[str], float | None]]] = {
    "`final_response_match_v2`": (
        "final_response_verdict",
        passing_score(final_response_match.parse_verdict),
    ),
    "`rubric_based_final_response_quality_v1`": ("rubric_verdicts", rubric_score),
    "`rubric_based_tool_use_quality_v1`": ("rubric_verdicts", rubric_score),
    "`hallucinations_v1`, first call": ("sentences", lambda t: 1.0 if hallucinations.parse_sentences(t).value else None),
    "`hallucinations_v1`, second call": ("sentence_labels", passing_score(hallucinations.parse_labels)),
    "`safety_v1`": ("safety_verdict", passing_score(safety.parse_verdict)),
    "`per_turn_user_simulator_quality_v1`": (
        "user_simulator_verdict",
        passing_score(simulator_quality.parse_verdict),
    ),
}  # fmt: skip


def table() -> list[tuple[str, list[str], str]]:
    """Each row of the doc's table: criterion, the tags named, the passing reply."""
    text = (DOCS / "judges.md").read_text(encoding="utf-8")
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] in ROWS:
            tags = re.findall(r"`(<[a-z_]+>)`", cells[1])
            [reply] = re.findall(r"`(\{.*\})`", cells[2])
            rows.append((cells[0], tags, reply))
    return rows


def last_user_text(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    return str(users[-1]["content"])


def test_the_worked_script_passes_every_judged_criterion_of_the_example(
    run_cli: RunCli, example: Example
) -> None:
    judge = f"scripted:{SCRIPT}"

    scored = run_cli("eval", example.evalset, "--traces", example.traces, "--judge-model", judge)
    ran = run_cli("eval", example.evalset, "--agent", AGENT, "--judge-model", judge)

    assert scored.code == 0, scored.output
    assert "5 passed, 0 failed, 0 not evaluated" in scored.out
    assert ran.code == 1, ran.output
    assert "4 passed, 1 failed, 0 not evaluated" in ran.out and "convert_currency" in ran.out


def test_the_table_lists_every_judged_criterion_of_the_example_once() -> None:
    assert sorted(row[0] for row in table()) == sorted(ROWS)


def test_each_passing_reply_of_the_table_parses_as_a_pass() -> None:
    for criterion, _, reply in table():
        _, score = ROWS[criterion]
        assert score(reply) == 1.0, criterion


def test_each_judges_request_holds_the_tags_the_table_names(
    run_cli: RunCli, example: Example, judge_env: JudgeServer
) -> None:
    before = judge_env.count()
    run = run_cli("eval", example.evalset, "--agent", AGENT, "--no-cache")
    assert run.code == 1, run.output
    requests = judge_env.completions[before:]

    for criterion, tags, _ in table():
        schema, _ = ROWS[criterion]
        asked = [
            last_user_text(r.body)
            for r in requests
            if (r.body.get("response_format") or {}).get("json_schema", {}).get("name") == schema
        ]
        assert any(all(tag in text for tag in tags) for text in asked), (criterion, tags)


@pytest.mark.parametrize("line", ["- only one reply\n", "rules:\n  - match: x\n    reply: y\n"])
def test_the_two_forms_the_doc_describes_load(tmp_path: Path, line: str) -> None:
    from assay.llm.backends.scripted import ScriptedBackend

    script = tmp_path / "script.yaml"
    script.write_text(line)
    assert ScriptedBackend.from_file(script).model == f"scripted:{script}"
