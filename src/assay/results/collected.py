"""A set's case results as they finish, held in memory while few, spilled to disk when many.

A run of a few thousand cases keeps its results as models (reports read them many times, and
that is cheap). Past ``ASSAY_KEEP_BYTES`` of results' compact JSON (default 8 MB: results hold
their actual invocations, which a real agent's tool results can make large) or
``ASSAY_KEEP_CASES`` results (default 2,000), whichever comes first, a set's results are moved to
the process's spill file (:mod:`assay._internal.spill`) and every later one is written there as it
finishes, so memory stops growing with the eval set. Each result's JSON is made once, as it
arrives, compact (``exclude_none``, no indent: half the bytes of the indented text, and a fifth
less time to make): its length counts against the budget, and a held result keeps it as it is
(the budget bounds it), to be written or spilled without serialising it again. Each spilled
result is stored twice:

* its compact JSON, compressed by zlib at level 1 (a sixth of its size, 0.08 ms a case; a million
  cases' results would take 11 GB of disk otherwise): ``--output`` indents it
  (:func:`texts`: msgspec's formatter lays it out byte for byte as pydantic's ``indent=2`` does,
  in a seventh of the time), and a full read (iterating, indexing) validates it again;
* its *head*, the few fields a pass that counts and picks cases reads (:class:`Head`: the
  console table, the summary of a large run, the run history's case order), as a msgpack array
  of about 200 bytes (:meth:`CaseResults.heads`): 7 µs a case to write, 3 to read. A pickled
  model without its per-invocation rows took 0.1 ms each way (pydantic's ``__setstate__`` once
  per nested model, 11 a case) and 900 bytes compressed.

Pickling whole results instead cost 0.8 ms a case to write and as much to read on every pass:
at 5,000 cases, 13 of 39 profiled seconds. The summary, token usage and the count of unevaluated
metrics in passed cases are kept as the results arrive, so that reading them costs no pass at
all.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Protocol, overload

import msgspec
from pydantic import TypeAdapter

from assay._internal.spill import Spill, SpilledSequence, shared_spill
from assay.llm.base import TokenUsage
from assay.metrics.base import EvalStatus
from assay.results.model import SIMULATOR, EvalCaseResult, EvalSetResult, RunSummary, summarize

KEEP_CASES = 2000
"""Case results of one set held as models before they are spilled (``ASSAY_KEEP_CASES``)."""

KEEP_BYTES = 8 * 1024 * 1024
"""Bytes of compact JSON of one set's case results held as models before they are spilled
(``ASSAY_KEEP_BYTES``; about 16 MB of the results file's indented JSON)."""

_FLUSH = 256
"""Spilled results written per transaction."""

_KIND = "result"
_HEAD = "result-head"


def keep_cases() -> int:
    """``ASSAY_KEEP_CASES``, else :data:`KEEP_CASES` (0 spills every result)."""
    return _env_count("ASSAY_KEEP_CASES", KEEP_CASES)


def keep_bytes() -> int:
    """``ASSAY_KEEP_BYTES``, else :data:`KEEP_BYTES` (0 spills every result)."""
    return _env_count("ASSAY_KEEP_BYTES", KEEP_BYTES)


def _env_count(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    try:
        return max(int(raw), 0) if raw else default
    except ValueError:
        return default


class HeadRow(Protocol):
    """What a head keeps of one metric's overall result."""

    @property
    def metric_name(self) -> str: ...
    @property
    def eval_status(self) -> EvalStatus: ...
    @property
    def score(self) -> float | None: ...


class HeadNotes(Protocol):
    """What a head keeps of a case's ``assay`` notes."""

    @property
    def run(self) -> int: ...
    @property
    def not_applicable(self) -> Collection[str]: ...


class Head(Protocol):
    """What a pass that counts and picks cases reads of a case result (an
    :class:`~assay.results.model.EvalCaseResult` has all of it)."""

    @property
    def eval_id(self) -> str: ...
    @property
    def final_eval_status(self) -> EvalStatus: ...
    @property
    def overall_eval_metric_results(self) -> Sequence[HeadRow]: ...
    @property
    def assay(self) -> HeadNotes: ...


class _Row(msgspec.Struct, array_like=True, frozen=True):
    metric_name: str
    eval_status: EvalStatus
    score: float | None


class _Notes(msgspec.Struct, array_like=True, frozen=True):
    run: int
    not_applicable: list[str]


class _Head(msgspec.Struct, array_like=True, frozen=True):
    """A spilled result's :class:`Head`, read back from its msgpack array."""

    eval_id: str
    final_eval_status: EvalStatus
    overall_eval_metric_results: list[_Row]
    assay: _Notes


_encode_head = msgspec.msgpack.Encoder().encode
_decode_head = msgspec.msgpack.Decoder(_Head).decode


def _head_bytes(result: EvalCaseResult) -> bytes:
    """``result``'s head as the msgpack array :class:`_Head` reads (made from tuples: no
    struct is built to write it)."""
    rows = [(r.metric_name, r.eval_status, r.score) for r in result.overall_eval_metric_results]
    notes = (result.assay.run, result.assay.not_applicable)
    return _encode_head((result.eval_id, result.final_eval_status, rows, notes))


def _compact(result: EvalCaseResult) -> bytes:
    """``result``'s JSON as the results file holds it (``exclude_none``), without indents."""
    return result.__pydantic_serializer__.to_json(result, exclude_none=True)


def _indent(compact: bytes) -> bytes:
    """Compact JSON laid out as pydantic's ``to_json(indent=2)`` lays it out (two spaces, a
    key and its value on one line, ``[]`` and ``{}`` when empty: the same bytes)."""
    return msgspec.json.format(compact, indent=2)


def _parse(body: bytes) -> EvalCaseResult:
    return EvalCaseResult.model_validate_json(zlib.decompress(body))


def _spilled_text(body: bytes) -> bytes:
    return _indent(zlib.decompress(body))


def spill_forms(result: EvalCaseResult, compact: bytes) -> tuple[bytes, bytes]:
    """What the spill file keeps of ``result`` (its compact JSON ``compact``), made where it
    was scored so that the run's process need not: that JSON compressed, and its head
    (:meth:`CaseResults.append` takes both). It is indented as the results file is written:
    compressing the indented text would cost twice as much, while writing that file waits on
    the disk."""
    return zlib.compress(compact, 1), _head_bytes(result)


_encode_output = msgspec.msgpack.Encoder().encode
_decode_output = msgspec.msgpack.Decoder(tuple[bytes, bytes, bytes]).decode
_USAGE = TypeAdapter(dict[str, TokenUsage])


def pack_output(stored: tuple[bytes, bytes], result: EvalCaseResult) -> bytes:
    """What the run history keeps of a case result made in another process, for a resumed run
    to add it back without decoding it (:meth:`CaseResults.append_output`): its spill forms
    ``stored`` (:func:`spill_forms`) and the tokens it used (``result`` may be its summary), as
    a msgpack array."""
    return _encode_output((*stored, _USAGE.dump_json(_case_usage(result))))


def _case_usage(result: EvalCaseResult) -> dict[str, TokenUsage]:
    """The tokens ``result`` used, per metric and by the simulated user, as
    :meth:`CaseResults.append` adds them up."""
    used = {metric: notes.usage for metric, notes in result.assay.metrics.items()}
    if result.assay.simulator_usage is not None:
        used[SIMULATOR] = result.assay.simulator_usage
    return used


def _unevaluated(head: Head) -> list[str]:
    """What :meth:`EvalCaseResult.unevaluated_metrics` gives, from a head."""
    return [
        row.metric_name
        for row in head.overall_eval_metric_results
        if row.eval_status is EvalStatus.NOT_EVALUATED
        and row.metric_name not in head.assay.not_applicable
    ]


def heads(cases: Sequence[EvalCaseResult]) -> Iterable[Head]:
    """Each case result, or (for spilled results) its :class:`Head`, in order: enough to count
    statuses and choose the cases to show, which are then read whole by index."""
    return cases.heads() if isinstance(cases, CaseResults) else cases


def texts(cases: Sequence[EvalCaseResult]) -> Iterator[bytes]:
    """Each case result's JSON as the results file writes it, UTF-8 (what
    ``model_dump_json(indent=2, exclude_none=True)`` gives)."""
    if isinstance(cases, CaseResults):
        return cases.texts()
    return (
        case.__pydantic_serializer__.to_json(case, indent=2, exclude_none=True) for case in cases
    )


class CaseResults(Sequence[EvalCaseResult]):
    """One set's case results in order: append each as it finishes, then read them like a list
    (each pass over spilled results parses them again). Up to ``keep`` results and
    ``max_bytes`` bytes of their compact JSON are held (by default ``ASSAY_KEEP_CASES`` and
    ``ASSAY_KEEP_BYTES``)."""

    def __init__(
        self, keep: int | None = None, spill: Spill | None = None, max_bytes: int | None = None
    ) -> None:
        self._keep = keep_cases() if keep is None else keep
        self._keep_bytes = keep_bytes() if max_bytes is None else max_bytes
        self._spill_given = spill
        self._held: list[EvalCaseResult] = []
        self._held_texts: list[bytes] = []
        """The held results' compact JSON, not compressed (the byte budget bounds it): indented
        when written, compressed only if it is spilled."""
        self._held_bytes = 0
        self._buffer: list[tuple[str, int, bytes]] = []
        """Spilled results' compressed compact JSON, waiting for :meth:`_flush`."""
        self._head_buffer: list[tuple[str, int, bytes]] = []
        self._spill: Spill | None = None
        self._key = ""
        self._count = 0
        self._statuses = {EvalStatus.PASSED: 0, EvalStatus.FAILED: 0}
        self._usage: dict[str, TokenUsage] = {}
        self.unevaluated_in_passed = 0
        """Applicable metrics not evaluated in cases that passed (see
        :meth:`EvalCaseResult.unevaluated_metrics`)."""

    @classmethod
    def of(cls, results: Sequence[EvalCaseResult]) -> CaseResults:
        """``results`` collected (as :func:`~assay.runner.evaluate.set_result` takes them)."""
        if isinstance(results, CaseResults):
            return results
        collected = cls()
        for result in results:
            collected.append(result)
        return collected.close()

    @property
    def spilled(self) -> bool:
        return self._spill is not None

    def append(self, result: EvalCaseResult, stored: tuple[bytes, bytes] | None = None) -> None:
        """Add the next case result. ``stored``, when given, is what the spill file keeps of it
        (:func:`spill_forms`), made where it was scored (in another process), and ``result`` may
        then be its summary (without per-invocation rows: enough to count it): such a result
        is never held as a model, so the set is spilled from it on."""
        self._count_case(result.final_eval_status, result.unevaluated_metrics)
        self._add_usage(_case_usage(result))
        if stored is not None:
            self._append_stored(stored)
        else:
            self._add(result)
            self._next()

    def append_output(self, output: bytes) -> None:
        """Add the next case result as the run history kept it (:func:`pack_output`): counted
        from its head, and spilled as it is, without a model being made."""
        body, head_bytes, used = _decode_output(output)
        head = _decode_head(head_bytes)
        self._count_case(head.final_eval_status, lambda: _unevaluated(head))
        self._add_usage(_USAGE.validate_json(used))
        self._append_stored((body, head_bytes))

    def _add_usage(self, used: dict[str, TokenUsage]) -> None:
        for metric, usage in used.items():
            self._usage[metric] = self._usage.get(metric, TokenUsage()) + usage

    def _count_case(self, status: EvalStatus, unevaluated: Callable[[], Sequence[str]]) -> None:
        if status in self._statuses:
            self._statuses[status] += 1
        if status is EvalStatus.PASSED:
            self.unevaluated_in_passed += len(unevaluated())

    def _append_stored(self, stored: tuple[bytes, bytes]) -> None:
        if self._spill is None:
            self._start_spilling()
        self._buffer.append((self._key, self._count, stored[0]))
        self._head_buffer.append((self._key, self._count, stored[1]))
        self._next()

    def _next(self) -> None:
        if len(self._buffer) >= _FLUSH:
            self._flush()
        self._count += 1

    def _add(self, result: EvalCaseResult) -> None:
        """Hold ``result``, or store it in the spill file once the set is spilled (or past
        what may be held)."""
        text = _compact(result)
        if self._spill is None and (
            self._count >= self._keep or self._held_bytes + len(text) > self._keep_bytes
        ):
            self._start_spilling()
        if self._spill is None:
            self._held.append(result)
            self._held_texts.append(text)
            self._held_bytes += len(text)
        else:
            self._store(self._count, result, text)

    @property
    def held_bytes(self) -> int:
        """Bytes of compact JSON of the results held as models (0 once they are spilled)."""
        return self._held_bytes

    def close(self) -> CaseResults:
        """Write what is still buffered (reading does this too); the collection itself."""
        self._flush()
        return self

    @property
    def summary(self) -> RunSummary:
        passed = self._statuses[EvalStatus.PASSED]
        failed = self._statuses[EvalStatus.FAILED]
        return RunSummary(passed=passed, failed=failed, not_evaluated=self._count - passed - failed)

    @property
    def usage(self) -> dict[str, TokenUsage]:
        """Tokens used per judged metric (and by the simulated user), over every case."""
        return dict(self._usage)

    def _start_spilling(self) -> None:
        self._spill = self._spill_given or shared_spill()
        self._key = self._spill.new_key("results")
        for index, (held, text) in enumerate(zip(self._held, self._held_texts, strict=True)):
            self._store(index, held, text)
            if len(self._buffer) >= _FLUSH:
                self._flush()
        self._held, self._held_texts, self._held_bytes = [], [], 0
        self._flush()

    def _store(self, index: int, result: EvalCaseResult, text: bytes) -> None:
        """Buffer ``result`` (its compact JSON ``text``) and its head for the spill file."""
        self._buffer.append((self._key, index, zlib.compress(text, 1)))
        self._head_buffer.append((self._key, index, _head_bytes(result)))

    def _flush(self) -> None:
        if self._spill is not None and self._buffer:
            self._spill.put_many(_KIND, self._buffer)
            self._spill.put_many(_HEAD, self._head_buffer)
            self._buffer, self._head_buffer = [], []

    def _stored(self) -> Sequence[EvalCaseResult]:
        if self._spill is None:
            return self._held
        self._flush()
        return SpilledSequence(self._spill, _KIND, self._key, self._count, _parse)

    def heads(self) -> Iterator[Head]:
        """Each result in order: held ones whole, spilled ones as their :class:`Head`, read a
        batch at a time."""
        if self._spill is None:
            return iter(self._held)
        self._flush()
        return map(_decode_head, self._spill.scan(_HEAD, self._key, 0, self._count))

    def texts(self) -> Iterator[bytes]:
        """Each result's JSON as ``model_dump_json(indent=2, exclude_none=True)`` gives it,
        UTF-8: indented from the compact JSON made as it arrived, without making models."""
        if self._spill is None:
            return map(_indent, self._held_texts)
        self._flush()
        return map(_spilled_text, self._spill.scan(_KIND, self._key, 0, self._count))

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> EvalCaseResult: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[EvalCaseResult]: ...
    def __getitem__(self, index: int | slice) -> EvalCaseResult | Sequence[EvalCaseResult]:
        return self._stored()[index]

    def __iter__(self) -> Iterator[EvalCaseResult]:
        return iter(self._stored())

    def __bool__(self) -> bool:
        return self._count > 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        where = "spilled" if self.spilled else "held"
        return f"<{self._count} case results, {where}>"


def run_summary(results: Sequence[EvalSetResult]) -> RunSummary:
    """The whole run's counts: a set's recorded summary where it counts all its cases (counted
    as the run went, or read from the history with it), else its cases counted now."""
    total = RunSummary()
    for result in results:
        cases = result.eval_case_results
        recorded = result.assay.summary if result.assay is not None else None
        if isinstance(cases, list) or recorded is None or recorded.total != len(cases):
            recorded = summarize(cases)
        total = RunSummary(
            passed=total.passed + recorded.passed,
            failed=total.failed + recorded.failed,
            not_evaluated=total.not_evaluated + recorded.not_evaluated,
        )
    return total


def unevaluated_in_passed(results: Sequence[EvalSetResult]) -> int:
    """Applicable metrics not evaluated in cases that still passed (ADK counts the case as
    passed; a CI gate does not): counted as the run went, or else now."""
    return sum(
        cases.unevaluated_in_passed
        if isinstance(cases := result.eval_case_results, CaseResults)
        else sum(
            len(case.unevaluated_metrics())
            for case in cases
            if case.final_eval_status is EvalStatus.PASSED
        )
        for result in results
    )
