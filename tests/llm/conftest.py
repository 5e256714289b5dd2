"""Fixtures for the LLM layer's tests: a running stub judge server, a sleep that does not wait,
and clients wired to the server."""

from __future__ import annotations

import asyncio
import random
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _judge_server import JudgeServer

from assay.llm.backends.openai_compat import OpenAICompatBackend
from assay.llm.client import LlmClient, RetryPolicy

FAST_RETRY = RetryPolicy(max_attempts=4, initial_delay_s=1.0, max_delay_s=30.0, deadline_s=300.0)


class FakeSleep:
    """An injected ``sleep`` that records each requested delay and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


MakeClient = Callable[..., LlmClient]


@pytest.fixture
def judge_server() -> Iterator[JudgeServer]:
    """A stub judge server answering "ok" until a test scripts something else."""
    with JudgeServer() as server:
        yield server


@pytest.fixture
def sleeps() -> FakeSleep:
    """The fake sleep clients built by ``make_client`` use; ``sleeps.delays`` lists the waits."""
    return FakeSleep()


@pytest.fixture
def closed_port() -> int:
    """A local port nothing listens on (connections to it are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def make_client(judge_server: JudgeServer, sleeps: FakeSleep) -> MakeClient:
    """Build an :class:`LlmClient` on an OpenAI-compatible backend pointed at ``judge_server``
    (or ``base_url``), with the fake sleep and a seeded rng. Use it as ``async with``."""

    def make(
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        retry: RetryPolicy = FAST_RETRY,
        timeout_s: float = 5.0,
        **kwargs: Any,
    ) -> LlmClient:
        backend = OpenAICompatBackend(
            "openai:stub-judge", base_url=base_url or judge_server.base_url, api_key=api_key
        )
        kwargs.setdefault("sleep", sleeps)
        kwargs.setdefault("rng", random.Random(7))
        return LlmClient(backend, retry=retry, timeout_s=timeout_s, **kwargs)

    return make
