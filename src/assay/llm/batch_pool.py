"""The judge pool of a run with ``--judge-batch``: each judge whose provider has a batch API
calls through a :class:`~assay.llm.batch.BatchingClient`; the simulated user, whose every turn
needs the last one's answer, and judges without a batch API call one request at a time."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from assay.llm.base import LlmBackend
from assay.llm.batch import (
    IMMEDIATE,
    BatchApi,
    BatchingClient,
    BatchProgress,
    BatchRecords,
    BatchSettings,
    MemoryBatchRecords,
    Progress,
)
from assay.llm.client import LlmClient, RetryPolicy
from assay.llm.judge import Judge
from assay.llm.selection import REMOTE_TIMEOUT_S, JudgePool

if TYPE_CHECKING:
    from assay.config import BaseCriterion


class BatchJudgePool(JudgePool):
    """A :class:`~assay.llm.selection.JudgePool` whose judges send their calls through their
    provider's batch API, where ``batch_api`` gives one for the backend
    (:func:`assay.llm.backends.openai_batch.batch_api`); a judge whose backend has none (the
    embedded judge, Ollama) calls one request at a time as usual. ``on_progress`` is given the
    batches of every judge of the pool together."""

    def __init__(
        self,
        *,
        batch_api: Callable[[LlmBackend], BatchApi | None],
        records: BatchRecords | None = None,
        settings: BatchSettings | None = None,
        on_progress: Progress | None = None,
        run_id: str | None = None,
        immediate: frozenset[str] = IMMEDIATE,
        **pool: Any,
    ) -> None:
        super().__init__(**pool)
        self._immediate = immediate
        self._batch_api = batch_api
        self._batch_records = records if records is not None else MemoryBatchRecords()
        self._batch_settings = settings or BatchSettings()
        self._progress_hook = on_progress
        self._batch_run_id = run_id
        self._batching: list[BatchingClient] = []

    def judge_for(self, metric: str, criterion: BaseCriterion | None) -> Judge | str:
        """The judge for ``metric``, as :class:`JudgePool` chooses it; one that calls at once
        for a metric in ``immediate`` (the simulated user: each turn needs the last answer)."""
        judge = super().judge_for(metric, criterion)
        if metric in self._immediate and isinstance(judge, Judge):
            client = judge.client
            if isinstance(client, BatchingClient):
                return dataclasses.replace(judge, client=client.immediate())
        return judge

    def progress(self) -> BatchProgress:
        """The batches of every judge so far."""
        total = BatchProgress()
        for client in self._batching:
            for name, value in dataclasses.asdict(client.progress).items():
                setattr(total, name, getattr(total, name) + value)
        return total

    def _client(self, backend: LlmBackend) -> LlmClient:
        api = self._batch_api(backend)
        if api is None:
            return super()._client(backend)
        timeout = self.timeout_s or REMOTE_TIMEOUT_S
        retry = self.retry or RetryPolicy()
        if retry.deadline_s < timeout:
            retry = dataclasses.replace(retry, deadline_s=timeout)
        client = BatchingClient(
            backend,
            api,
            records=self._batch_records,
            settings=self._batch_settings,
            on_progress=self._report_progress,
            run_id=self._batch_run_id,
            concurrency=self.concurrency,
            timeout_s=timeout,
            retry=retry,
            cache=self.cache,
            limit=self.limit,
            endpoint=self.endpoint_for(backend),
        )
        self._batching.append(client)
        return client

    def _report_progress(self, _: BatchProgress) -> None:
        if self._progress_hook is not None:
            self._progress_hook(self.progress())
