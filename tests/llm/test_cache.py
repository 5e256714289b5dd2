"""The response cache: what it stores, what it finds, and that a bad file never stops a run."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

import pytest
from _judge_server import JudgeServer, Reply

from assay.llm.base import Choice, LlmError, LlmRequest, LlmResponse, TokenUsage
from assay.llm.cache import ResponseCache

from .conftest import MakeClient

REQUEST = LlmRequest.user("Is the answer correct?", temperature=0.0)


async def _ask(
    make_client: MakeClient, cache: ResponseCache, *calls: tuple[LlmRequest, int]
) -> list[LlmResponse]:
    async with make_client(cache=cache) as client:
        return [await client.generate(request, sample=sample) for request, sample in calls]


def test_a_repeated_call_is_answered_from_the_cache(
    judge_server: JudgeServer, make_client: MakeClient, tmp_path: Path
) -> None:
    judge_server.default = Reply.ok("yes", prompt_tokens=9, completion_tokens=1)
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        first, second = asyncio.run(_ask(make_client, cache, (REQUEST, 0), (REQUEST, 0)))

    assert judge_server.count() == 1
    assert not first.cached
    assert second.cached
    assert second.text == first.text == "yes"
    assert second.raw == first.raw
    assert second.usage == TokenUsage(cache_hits=1)


def test_another_sample_or_request_is_not_a_hit(
    judge_server: JudgeServer, make_client: MakeClient, tmp_path: Path
) -> None:
    hotter = REQUEST.model_copy(update={"temperature": 0.7})
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        responses = asyncio.run(_ask(make_client, cache, (REQUEST, 0), (REQUEST, 1), (hotter, 0)))

    assert judge_server.count() == 3
    assert not any(r.cached for r in responses)


def test_the_cache_outlives_the_client_and_the_connection(
    judge_server: JudgeServer, make_client: MakeClient, tmp_path: Path
) -> None:
    path = tmp_path / "nested" / "cache.sqlite"
    with ResponseCache(path) as cache:
        asyncio.run(_ask(make_client, cache, (REQUEST, 0)))
    with ResponseCache(path) as cache:
        (again,) = asyncio.run(_ask(make_client, cache, (REQUEST, 0)))

    assert again.cached
    assert judge_server.count() == 1


def test_another_server_is_another_cache_entry(
    judge_server: JudgeServer, make_client: MakeClient, tmp_path: Path
) -> None:
    with JudgeServer() as other, ResponseCache(tmp_path / "cache.sqlite") as cache:
        asyncio.run(_ask(make_client, cache, (REQUEST, 0)))

        async def ask_other() -> LlmResponse:
            async with make_client(base_url=other.base_url, cache=cache) as client:
                return await client.generate(REQUEST)

        assert not asyncio.run(ask_other()).cached
        assert other.count() == 1


def test_a_failed_call_is_not_stored(
    judge_server: JudgeServer, make_client: MakeClient, tmp_path: Path
) -> None:
    judge_server.queue(Reply.error(400, "no"), "yes")
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        with pytest.raises(LlmError):
            asyncio.run(_ask(make_client, cache, (REQUEST, 0)))
        (response,) = asyncio.run(_ask(make_client, cache, (REQUEST, 0)))

    assert response.text == "yes"
    assert not response.cached


def test_a_corrupt_cache_file_warns_once_and_the_run_goes_on(
    judge_server: JudgeServer,
    make_client: MakeClient,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"this is not a database, " * 100)
    caplog.set_level(logging.WARNING, logger="assay.llm.cache")
    with ResponseCache(path) as cache:
        responses = asyncio.run(_ask(make_client, cache, (REQUEST, 0), (REQUEST, 0)))
        assert cache.disabled

    assert [r.text for r in responses] == ["ok", "ok"]
    assert judge_server.count() == 2
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "going on without a cache" in warnings[0].getMessage()


def test_a_cache_in_a_folder_that_cannot_exist_is_disabled(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with ResponseCache(blocker / "cache.sqlite") as cache:
        cache.put("k", LlmResponse(text="t", model="m"), backend="openai", model="openai:m")
        assert cache.get("k") is None
        assert cache.disabled


def test_a_stored_response_reads_back_whole(tmp_path: Path) -> None:
    stored = LlmResponse(
        text="ünïcode ✓",
        model="served-model",
        usage=TokenUsage(prompt_tokens=4, completion_tokens=2, calls=1, retries=1),
        raw={"choices": [{"message": {"content": "ünïcode ✓"}}], "n": 1.5},
        choices=(
            Choice(path="verdict", start=3, chosen="yes", probabilities={"yes": 0.75, "no": 0.25}),
        ),
    )
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        cache.put("key", stored, backend="openai", model="openai:m")
        assert cache.get("key") == stored
        assert cache.get("other") is None


def test_a_cache_file_from_before_choices_gains_the_column_and_its_rows_still_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    with db:
        db.execute(
            "CREATE TABLE responses (key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT"
            " NULL, response_model TEXT NOT NULL, text TEXT NOT NULL, usage TEXT NOT NULL, raw"
            " TEXT, created REAL NOT NULL)"
        )
        db.execute("INSERT INTO responses VALUES ('old', 'openai', 'm', 'm', 'yes', '{}', NULL, 0)")
    db.close()
    with ResponseCache(path) as cache:
        assert cache.get("old") == LlmResponse(text="yes", model="m")
        cache.put("new", LlmResponse(text="no", model="m"), backend="b", model="m")
        assert cache.get("new") == LlmResponse(text="no", model="m")
        assert not cache.disabled


def test_a_row_that_cannot_be_read_back_is_a_miss(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        cache.put("key", LlmResponse(text="t", model="m"), backend="b", model="m")
    db = sqlite3.connect(tmp_path / "c.sqlite")
    try:
        with db:
            db.execute("UPDATE responses SET usage = 'not json'")
    finally:
        db.close()
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert cache.get("key") is None
        assert not cache.disabled


def test_the_default_path_follows_assay_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert ResponseCache.default_path({}) == tmp_path / ".assay" / "cache.sqlite"
    env = {"ASSAY_CACHE_DIR": str(tmp_path / "elsewhere")}
    assert ResponseCache.default_path(env) == tmp_path / "elsewhere" / "cache.sqlite"
    monkeypatch.setenv("ASSAY_CACHE_DIR", "/somewhere")
    assert ResponseCache.default_path() == Path("/somewhere/cache.sqlite")


def test_the_file_uses_write_ahead_logging(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        cache.put("key", LlmResponse(text="t", model="m"), backend="b", model="m")
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        db.close()
