"""Producers of real spans for the trace tests: real frameworks, traced by their own tracing code
through the real OpenTelemetry SDK, written as the collector's file exporter writes OTLP/JSON.

* :func:`run_adk` (in process): an ADK agent with a scripted model, ADK's Runner and
  InMemorySessionService, in ADK's default or legacy telemetry schema; returns the in-memory spans
  and ADK's own record of each session (``convert_session_to_eval_invocations``, as ``adk web``
  and ADK's eval use).
* :func:`produce_openai_agents` (in a subprocess, see ``_openai_producer``): the OpenAI Agents SDK
  against a scripted Responses API on 127.0.0.1, bridged by the GenAI-conventions or the
  OpenInference instrumentation; returns the OTLP/JSON documents it wrote.

Every producer run takes a second or two and needs no network beyond 127.0.0.1.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._adk_producer import AdkRun, run_adk
from ._otlp import batches_by_end, otlp_document, otlp_lines, write_lines

__all__ = [
    "AdkRun",
    "OpenAIAgentsOutput",
    "batches_by_end",
    "openai_agents_job",
    "otlp_document",
    "otlp_lines",
    "produce_openai_agents",
    "produce_openai_agents_many",
    "read_otlp_lines",
    "run_adk",
    "spans_of",
    "write_adk",
    "write_lines",
]

_OPENAI_SCRIPT = Path(__file__).with_name("_openai_producer.py")


def read_otlp_lines(path: Path) -> list[dict[str, Any]]:
    """The OTLP/JSON documents of a file written by these producers (gzip or not)."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]


def spans_of(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every span (OTLP/JSON dict) in ``documents``, each with its ``attributes`` flattened to a
    ``{"key": python value}`` dict under ``"attrs"``."""
    spans: list[dict[str, Any]] = []
    for document in documents:
        for resource in document.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    flat = {
                        a["key"]: _any_value(a.get("value", {})) for a in span.get("attributes", [])
                    }
                    spans.append(
                        {**span, "attrs": flat, "scope": scope.get("scope", {}).get("name")}
                    )
    return spans


def _any_value(value: dict[str, Any]) -> Any:
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [_any_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return {
            kv["key"]: _any_value(kv.get("value", {}))
            for kv in value["kvlistValue"].get("values", [])
        }
    return None


def write_adk(run: AdkRun, path: Path, batch: int = 4) -> Path:
    """Write an ADK run's spans as OTLP/JSON lines (batches of ``batch`` spans, by end time)."""
    return write_lines(path, otlp_lines(batches_by_end(run.spans, batch)))


@dataclass
class OpenAIAgentsOutput:
    """What an OpenAI Agents producer run wrote and reported."""

    path: Path
    documents: list[dict[str, Any]]
    finals: dict[str, list[str]]
    requests: int

    @property
    def spans(self) -> list[dict[str, Any]]:
        """The spans, as :func:`spans_of` gives them."""
        return spans_of(self.documents)


def openai_agents_job(
    convention: str,
    out: Path,
    *,
    capture: str | None = None,
    group_ids: tuple[str | None, ...] = (None,),
    one_trace: bool = True,
    batch: int = 4,
) -> dict[str, Any]:
    """One OpenAI Agents producer job, for :func:`produce_openai_agents_many`.

    ``convention``: ``"genai"`` or ``"openinference"``; ``capture``: the value of
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (None: unset, which the GenAI
    instrumentation reads as "capture"); ``group_ids``: one concurrent session each (None: no
    group id); ``one_trace``: each session in one trace (``agents.trace``), else one per turn.
    """
    return {
        "convention": convention,
        "out": str(out),
        "capture": capture,
        "group_ids": list(group_ids),
        "one_trace": one_trace,
        "batch": batch,
    }


def produce_openai_agents_many(jobs: list[dict[str, Any]]) -> list[OpenAIAgentsOutput]:
    """Run the OpenAI Agents SDK producer's ``jobs`` in one subprocess (the SDK takes seconds to
    import); each writes its ``out`` file."""
    command = [sys.executable, str(_OPENAI_SCRIPT), *(json.dumps(job) for job in jobs)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the OpenAI Agents producer failed:\n{done.stderr[-4000:]}")
    summaries = json.loads(done.stdout.strip().splitlines()[-1])
    return [
        OpenAIAgentsOutput(
            Path(job["out"]),
            read_otlp_lines(Path(job["out"])),
            summary["finals"],
            summary["requests"],
        )
        for job, summary in zip(jobs, summaries, strict=True)
    ]


def produce_openai_agents(convention: str, out: Path, **options: Any) -> OpenAIAgentsOutput:
    """One job (see :func:`openai_agents_job`) in a subprocess of its own."""
    return produce_openai_agents_many([openai_agents_job(convention, out, **options)])[0]
