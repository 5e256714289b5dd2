"""Verdicts back out as OpenTelemetry: ``gen_ai.evaluation.result`` events over OTLP/HTTP logs.

Each overall metric result of a case becomes one log record (an event named
``gen_ai.evaluation.result``, as the GenAI semantic conventions define it) with
``gen_ai.evaluation.name`` (the metric), ``gen_ai.evaluation.score.value``,
``gen_ai.evaluation.score.label`` (``pass``, ``fail``, ``not_evaluated`` or ``informational``),
``gen_ai.evaluation.explanation`` (the reason or the judge's rationale) and, when the metric was
not evaluated, ``error.type``; its trace and span ids are those of the evaluated span, so the
verdict shows next to the trace in a tracing UI. assay.traces keeps no span id per invocation
(ADK's invocation id is ADK's own), so every verdict of a case is about the session's first
root span (:func:`span_ref`).

Records are POSTed as a protobuf ``ExportLogsServiceRequest`` to ``{endpoint}/v1/logs``, retried
with exponential backoff on 429, 5xx and connection errors; a failure is one warning, never an
exception into the run.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from tenacity import (
    RetryError,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)
from tenacity import (
    Retrying as _Retrying,
)

from assay.metrics.base import EvalStatus
from assay.results.model import EvalCaseResult, EvalMetricResult, EvalSetResult
from assay.traces import Session

EVENT_NAME = "gen_ai.evaluation.result"
BATCH = 512
"""Records per request."""

_LABELS = {
    EvalStatus.PASSED: "pass",
    EvalStatus.FAILED: "fail",
    EvalStatus.NOT_EVALUATED: "not_evaluated",
    EvalStatus.INFORMATIONAL: "informational",
}


class VerdictExportWarning(UserWarning):
    """Verdicts could not be exported; the run goes on."""


@dataclass(frozen=True)
class SpanRef:
    """The span a verdict is about: lowercase hex ids (32 and 16 characters)."""

    trace_id: str
    span_id: str


def span_ref(session: Session) -> SpanRef | None:
    """The evaluated span of ``session``: its first root span (None when it has none)."""
    if not session.trace_ids or not session.root_span_ids:
        return None
    return SpanRef(session.trace_ids[0], session.root_span_ids[0])


def _value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))


def _explanation(result: EvalCaseResult, metric: EvalMetricResult) -> str | None:
    """The metric's reason, else the rubric rationales, else the case's reason."""
    reason = result.assay.metric_reasons.get(metric.metric_name)
    if reason:
        return reason
    rationales = [
        score.rationale
        for score in metric.details.rubric_scores or []
        if getattr(score, "rationale", None)
    ]
    if rationales:
        return " | ".join(str(r) for r in rationales)
    return result.assay.reason


def _attributes(result: EvalCaseResult, metric: EvalMetricResult) -> dict[str, Any]:
    status = EvalStatus(metric.eval_status)
    found: dict[str, Any] = {
        "event.name": EVENT_NAME,
        "gen_ai.evaluation.name": metric.metric_name,
        "gen_ai.evaluation.score.label": _LABELS.get(status, status.name.lower()),
        "assay.eval_set_id": result.eval_set_id,
        "assay.eval_id": result.eval_id,
    }
    if metric.score is not None:
        found["gen_ai.evaluation.score.value"] = float(metric.score)
    if metric.threshold is not None:
        found["assay.threshold"] = float(metric.threshold)
    explanation = _explanation(result, metric)
    if explanation:
        found["gen_ai.evaluation.explanation"] = explanation
    if status == EvalStatus.NOT_EVALUATED:
        found["error.type"] = "not_evaluated"
    return found


def evaluation_records(result: EvalCaseResult, target: SpanRef | None) -> list[LogRecord]:
    """One ``gen_ai.evaluation.result`` log record per overall metric result of ``result``."""
    now = time.time_ns()
    records = []
    for metric in result.overall_eval_metric_results:
        record = LogRecord(time_unix_nano=now, observed_time_unix_nano=now, event_name=EVENT_NAME)
        for key, value in _attributes(result, metric).items():
            record.attributes.append(KeyValue(key=key, value=_value(value)))
        if target is not None:
            record.trace_id = bytes.fromhex(target.trace_id)
            record.span_id = bytes.fromhex(target.span_id)
        records.append(record)
    return records


def logs_url(endpoint: str) -> str:
    """Where the logs go: ``{endpoint}/v1/logs``, or ``endpoint`` when it names that path (a
    query string, where some endpoints take their key, kept after the path)."""
    parts = urlsplit(endpoint.strip())
    path = parts.path.rstrip("/")
    if not path.endswith("/v1/logs"):
        path = f"{path}/v1/logs"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def shown_url(url: str) -> str:
    """``url`` as a message may show it: without user info (``user:token@``), query or fragment,
    where a key could be."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    where = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme, where, parts.path, "", ""))


def otlp_headers(environ: Mapping[str, str]) -> dict[str, str]:
    """The headers OpenTelemetry's exporters send to a logs endpoint:
    ``OTEL_EXPORTER_OTLP_LOGS_HEADERS``, else ``OTEL_EXPORTER_OTLP_HEADERS`` (``key=value``
    pairs, comma separated, values URL-encoded). A pair without ``=`` is ignored, as the
    OpenTelemetry SDK ignores it."""
    raw = environ.get("OTEL_EXPORTER_OTLP_LOGS_HEADERS") or environ.get(
        "OTEL_EXPORTER_OTLP_HEADERS", ""
    )
    headers: dict[str, str] = {}
    for pair in raw.split(","):
        name, equals, value = pair.partition("=")
        if equals and name.strip():
            headers[unquote(name.strip()).lower()] = unquote(value.strip())
    return headers


def case_targets(
    results: Iterable[EvalSetResult],
    sessions: Mapping[tuple[str | None, str], tuple[str, str] | None],
) -> Iterator[tuple[EvalCaseResult, SpanRef | None]]:
    """Each case result with the span it is about: its session's (``sessions``, as
    :attr:`assay.results.traces.Traces.sessions` keeps them), else None."""
    for set_result in results:
        for case in set_result.eval_case_results:
            ids = sessions.get((case.eval_set_id, case.eval_id))
            if ids is None:
                ids = sessions.get((None, case.eval_id))
            yield case, (SpanRef(*ids) if ids is not None else None)


def _request(records: list[LogRecord]) -> bytes:
    resource = Resource(attributes=[KeyValue(key="service.name", value=_value("assay"))])
    scope = ScopeLogs(scope=InstrumentationScope(name="assay"), log_records=records)
    request = ExportLogsServiceRequest(
        resource_logs=[ResourceLogs(resource=resource, scope_logs=[scope])]
    )
    return bytes(request.SerializeToString())


class _Retryable(Exception):
    """A 429 or 5xx answer: worth another try."""


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, _Retryable | httpx.TransportError)


@dataclass
class VerdictExporter:
    """Buffers verdicts (:meth:`add`) and sends them (:meth:`flush`, :meth:`close`).

    ``headers`` go with each request (an API key of the logs endpoint: never in a message).
    ``attempts`` tries per request, backing off exponentially (``backoff_s`` first). At most one
    warning per exporter, to ``warn`` (default: a :class:`VerdictExportWarning`)."""

    endpoint: str
    headers: Mapping[str, str] | None = None
    timeout_s: float = 10.0
    attempts: int = 4
    backoff_s: float = 0.5
    warn: Callable[[str], None] | None = None
    sent: int = 0
    failed: bool = False
    _pending: list[LogRecord] = field(default_factory=list, repr=False)

    @property
    def where(self) -> str:
        """Where the records go, as a message may show it (:func:`shown_url`)."""
        return shown_url(logs_url(self.endpoint))

    def add(self, result: EvalCaseResult, target: SpanRef | None) -> None:
        """Queue the verdicts of one case."""
        self._pending.extend(evaluation_records(result, target))

    def add_all(self, cases: Iterable[tuple[EvalCaseResult, SpanRef | None]]) -> int:
        """Queue (and send, a batch at a time) the verdicts of ``cases``; how many cases had
        no span to be about."""
        unparented = 0
        for result, target in cases:
            self.add(result, target)
            unparented += target is None
            if len(self._pending) >= BATCH:
                self.flush()
        return unparented

    def flush(self) -> int:
        """Send what is queued; the number of records accepted."""
        pending, self._pending = self._pending, []
        if not pending or self.failed:
            return 0
        accepted = 0
        try:
            with httpx.Client(timeout=self.timeout_s) as client:
                for start in range(0, len(pending), BATCH):
                    self._post(client, _request(pending[start : start + BATCH]))
                    accepted += len(pending[start : start + BATCH])
        except Exception as exc:
            self._fail(exc)
        self.sent += accepted
        return accepted

    def close(self) -> int:
        """Send what is left."""
        return self.flush()

    def _post(self, client: httpx.Client, body: bytes) -> None:
        headers = {"Content-Type": "application/x-protobuf", **(self.headers or {})}
        url = logs_url(self.endpoint)
        for attempt in _Retrying(
            stop=stop_after_attempt(max(1, self.attempts)),
            wait=wait_exponential(multiplier=self.backoff_s, max=30),
            retry=retry_if_exception(_transient),
            reraise=True,
        ):
            with attempt:
                answer = client.post(url, content=body, headers=headers)
                if answer.status_code == 429 or answer.status_code >= 500:
                    raise _Retryable(f"{shown_url(url)} answered {answer.status_code}")
                if answer.status_code >= 400:
                    raise RuntimeError(f"{shown_url(url)} answered {answer.status_code}")

    def _fail(self, exc: BaseException) -> None:
        self.failed = True
        cause = exc.last_attempt.exception() if isinstance(exc, RetryError) else exc
        detail = _scrubbed(_plain(cause), self.endpoint, self.headers)
        message = f"verdicts not exported to {self.where}: {detail}"
        if self.warn is not None:
            self.warn(message)
        else:
            warnings.warn(message, VerdictExportWarning, stacklevel=3)


def _plain(exc: BaseException | None) -> str:
    """The error in a few words (its type and message; no headers, so no key)."""
    if exc is None:
        return "unknown error"
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, _Retryable | RuntimeError) else f"{type(exc).__name__}: {text}"


def _scrubbed(text: str, endpoint: str, headers: Mapping[str, str] | None) -> str:
    """``text`` without the URL's user info and query, nor any header value (the key)."""
    parts = urlsplit(endpoint)
    secrets = [parts.netloc.rpartition("@")[0], parts.query, *(headers or {}).values()]
    for secret in sorted((s for s in secrets if len(s) >= 3), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def export_verdicts(
    endpoint: str,
    cases: Iterable[tuple[EvalCaseResult, SpanRef | None]],
    *,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 10.0,
    attempts: int = 4,
    warn: Callable[[str], None] | None = None,
) -> int:
    """Export the verdicts of ``cases`` (each with the span it is about); records accepted.
    Never raises: a failure is one warning."""
    exporter = VerdictExporter(endpoint, headers, timeout_s, attempts, warn=warn)
    for result, target in cases:
        exporter.add(result, target)
    return exporter.close()
