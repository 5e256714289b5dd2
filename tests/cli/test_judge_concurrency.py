"""``assay eval --judge-concurrency-fixed``: the judges' endpoints keep ``--judge-concurrency``
calls in flight instead of adapting it; without it they adapt under it."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support import Example, RunCli

from assay.llm.base import LlmBackend
from assay.llm.endpoint import Endpoint, Endpoints


def _endpoints_of_a_run(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch, *flags: str
) -> list[Endpoint]:
    made: list[Endpoint] = []
    original = Endpoints.for_backend

    def recorded(self: Endpoints, backend: LlmBackend, concurrency: int) -> Endpoint:
        found = original(self, backend, concurrency)
        made.append(found)
        return found

    monkeypatch.setattr(Endpoints, "for_backend", recorded)
    run = run_cli("eval", example.evalset, "--traces", example.traces, "--no-cache",
                  "--judge-concurrency", "3", *flags)  # fmt: skip
    assert run.code == 0, run.output
    assert made
    return made


def test_judge_concurrency_fixed_keeps_every_judge_endpoint_at_the_concurrency_given(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    made = _endpoints_of_a_run(run_cli, example, monkeypatch, "--judge-concurrency-fixed")
    assert {(e.adaptive, e.slots.capacity) for e in made} == {(None, 3)}


def test_without_it_every_judge_endpoint_adapts_under_the_concurrency_given(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _endpoints_of_a_run(run_cli, example, monkeypatch)
    assert all(e.adaptive is not None and e.adaptive.ceiling == 3 for e in made)
