"""The Ray executor's parts that need no cluster: the shared limiter's leases (a killed task's
slots are freed when it starts again, or ends), and how the agent's code is shipped."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from assay.llm.shared import Limiter
from assay.runner.ray_worker import shipping


def test_a_slot_is_waited_for_and_handed_over_in_order() -> None:
    async def scenario() -> list[str]:
        limiter = Limiter()
        order: list[str] = []
        first = await limiter.acquire("judge:m", 1, "task-a", await limiter.begin("task-a"))

        async def later(owner: str) -> None:
            lease = await limiter.acquire("judge:m", 1, owner, await limiter.begin(owner))
            order.append(owner)
            await limiter.release(lease)

        waiting = [asyncio.create_task(later(owner)) for owner in ("task-b", "task-c")]
        await asyncio.sleep(0.01)
        order.append("released")
        await limiter.release(first)
        await asyncio.gather(*waiting)
        assert (await limiter.peaks()) == {"judge:m": 1}
        return order

    assert asyncio.run(scenario()) == ["released", "task-b", "task-c"]


def test_a_task_started_again_frees_what_its_dead_attempt_held() -> None:
    async def scenario() -> int:
        limiter = Limiter()
        dead = await limiter.begin("task-a")
        await limiter.acquire("agent", 1, "task-a", dead)  # its worker dies holding it
        again = await limiter.begin("task-a")
        return await asyncio.wait_for(limiter.acquire("agent", 1, "task-a", again), 1.0)

    assert asyncio.run(scenario()) > 0


def test_a_slot_granted_to_an_attempt_that_was_given_up_is_freed_at_once() -> None:
    async def scenario() -> tuple[int, int]:
        limiter = Limiter()
        holder = await limiter.acquire("agent", 1, "task-a", await limiter.begin("task-a"))
        stale = asyncio.create_task(
            limiter.acquire("agent", 1, "task-b", await limiter.begin("task-b"))
        )
        await asyncio.sleep(0.01)
        await limiter.end("task-b")  # its task failed for good while it waited
        await limiter.release(holder)
        granted_to_stale = await stale
        fresh = await asyncio.wait_for(
            limiter.acquire("agent", 1, "task-c", await limiter.begin("task-c")), 1.0
        )
        return granted_to_stale, fresh

    stale, fresh = asyncio.run(scenario())
    assert stale == 0 and fresh > 0


def test_a_file_agent_ships_its_folder_and_is_named_inside_it(tmp_path: Path) -> None:
    agent = tmp_path / "agents" / "mine.py"
    agent.parent.mkdir()
    agent.write_text("def agent(message, session):\n    return message\n")

    assert shipping(f"{agent}:agent") == ({"working_dir": str(agent.parent)}, "mine.py:agent")


def test_a_module_under_the_working_directory_ships_as_a_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "shipped_pkg_for_test"
    package.mkdir()
    (package / "__init__.py").write_text("def agent(message, session):\n    return message\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))

    env, spec = shipping("shipped_pkg_for_test:agent")

    assert env == {"py_modules": [str(package)]} and spec == "shipped_pkg_for_test:agent"


@pytest.mark.parametrize(
    "spec", ["json:loads", "http://127.0.0.1:9/agent", "openai:gpt-4o-mini", "ollama:qwen"]
)
def test_installed_modules_urls_and_models_ship_nothing(spec: str) -> None:
    assert shipping(spec) == ({}, spec)
