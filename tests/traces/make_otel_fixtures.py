"""Regenerate the real-span sample files under tests/fixtures/otel/ (see its README.md).

    .venv/bin/python tests/traces/make_otel_fixtures.py [OUT_DIR]

Every file is produced by a real framework's own tracing code through the real OpenTelemetry SDK
(see ``_producers``). Ids, timestamps and ADK invocation ids differ on every run; the shapes,
names, attributes and contents do not.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from traces._producers import (
    openai_agents_job,
    produce_openai_agents_many,
    run_adk,
    write_adk,
)

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "fixtures" / "otel"
TWO_SESSIONS = ("adk-s1", "adk-s2")


def _adk(out: Path, name: str, **kwargs: object) -> None:
    run = run_adk(session_ids=TWO_SESSIONS, **kwargs)  # type: ignore[arg-type]
    write_adk(run, out / f"{name}.jsonl")
    record = json.dumps(run.adk_record(), indent=1, ensure_ascii=False)
    (out / f"{name}.adk.json").write_text(record + "\n", encoding="utf-8")


def make(out: Path) -> list[Path]:
    """Write every sample file into ``out``; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    _adk(out, "adk_default_content", schema="default", capture="SPAN_ONLY")
    _adk(out, "adk_default_nocontent", schema="default", capture=None)
    _adk(out, "adk_legacy", schema="legacy", capture=None)
    _adk(out, "adk_legacy_nocontent", schema="legacy", capture=None, legacy_content=False)
    two = ("thread-a", None)
    produce_openai_agents_many(
        [
            openai_agents_job("genai", out / "openai_agents_genai.jsonl", group_ids=two),
            openai_agents_job(
                "genai", out / "openai_agents_genai_nocontent.jsonl", capture="false"
            ),
            openai_agents_job(
                "genai", out / "openai_agents_genai_trace_per_turn.jsonl", one_trace=False
            ),
            openai_agents_job(
                "openinference", out / "openai_agents_openinference.jsonl.gz", group_ids=two
            ),
        ]
    )
    return sorted(p for p in out.iterdir() if p.name != "README.md")


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    for path in make(out):
        print(f"{path.stat().st_size:>8}  {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
