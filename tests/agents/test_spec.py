"""``--agent SPEC``: each form reaches the right kind of agent, and a bad spec says what to do."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest

from assay.agents.base import Agent, CaseContext
from assay.agents.python import AgentLoadError
from assay.agents.spec import (
    agent_factory,
    find_root_agent,
    is_adk_agent,
    is_case_factory,
    resolve_agent,
)
from assay.evalset.case import EvalCase
from assay.evalset.content import Content, Part

CASE = EvalCase.model_validate(
    {"eval_id": "c", "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}]}
)


def _answer(agent: Agent, text: str = "hi") -> str | None:
    from assay.agents.base import Session

    async def go() -> str | None:
        turn = await agent.turn(
            Content(role="user", parts=[Part(text=text)]), Session("app", "u", "s")
        )
        return turn.final_response.parts[0].text if turn.final_response else None  # type: ignore[index]

    return asyncio.run(go())


def _make(spec: str) -> Agent:
    made = resolve_agent(spec, env={})(CaseContext(case=CASE))
    assert isinstance(made, Agent)
    return made


def _package(root: Path, name: str, body: str, *, in_agent_module: bool) -> Path:
    folder = root / name
    folder.mkdir()
    if in_agent_module:
        (folder / "__init__.py").write_text("from . import agent\n")
        (folder / "agent.py").write_text(textwrap.dedent(body))
    else:
        (folder / "__init__.py").write_text(textwrap.dedent(body))
    return folder


def test_a_file_and_attribute_names_a_python_function_agent(tmp_path: Path) -> None:
    source = tmp_path / "bot.py"
    source.write_text("def reply(message, session):\n    return 'you said ' + message\n")
    assert _answer(_make(f"{source}:reply")) == "you said hi"


def test_a_class_gives_every_case_a_fresh_agent_and_an_object_is_shared(tmp_path: Path) -> None:
    source = tmp_path / "bots.py"
    source.write_text(
        textwrap.dedent(
            """
            class Counter:
                def __init__(self):
                    self.turns = 0
                def __call__(self, message, session):
                    self.turns += 1
                    return str(self.turns)

            def shared(message, session):
                return 'same'
            """
        )
    )
    factory = resolve_agent(f"{source}:Counter", env={})
    first, second = factory(CaseContext(case=CASE)), factory(CaseContext(case=CASE))
    assert first is not second
    shared = resolve_agent(f"{source}:shared", env={})
    assert shared(CaseContext(case=CASE)) is shared(CaseContext(case=CASE, run=2))


@pytest.mark.parametrize("in_agent_module", [False, True])
def test_a_folder_exposing_root_agent_is_loaded_like_adk_loads_it(
    tmp_path: Path, in_agent_module: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"pkg_{int(in_agent_module)}"
    folder = _package(
        tmp_path,
        name,
        "def root_agent(message, session):\n    return 'root says ' + message\n",
        in_agent_module=in_agent_module,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _answer(_make(str(folder))) == "root says hi"
    assert _answer(_make(name)) == "root says hi"  # the same package by module name


def test_a_folder_without_root_agent_says_to_name_the_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _package(tmp_path, "empty_pkg", "x = 1\n", in_agent_module=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AgentLoadError, match=r"found no root_agent.*use module:attr"):
        find_root_agent(str(folder))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "the spec is empty"),
        ("no/such/folder", "no such folder"),
        ("no_such_module_xyz", "cannot import 'no_such_module_xyz'"),
        ("no/such/file.py:agent", "no such file"),
    ],
)
def test_a_bad_spec_is_an_error_saying_what_to_give(spec: str, message: str) -> None:
    with pytest.raises(AgentLoadError, match=message):
        resolve_agent(spec, env={})


def test_a_factory_that_cannot_make_an_agent_fails_when_resolved(tmp_path: Path) -> None:
    source = tmp_path / "broken.py"
    source.write_text(
        "class Agent:\n    def __init__(self):\n        raise RuntimeError('no credentials')\n"
    )
    with pytest.raises(AgentLoadError, match=r"making the agent failed.*no credentials"):
        resolve_agent(f"{source}:Agent", env={})


def test_only_adk_agent_classes_count_as_adk_agents() -> None:
    class BaseAgent:  # same name, other module
        pass

    assert not is_adk_agent(BaseAgent())
    assert not is_adk_agent(lambda m, s: "x")
    from google.adk.agents import LlmAgent

    assert is_adk_agent(LlmAgent(name="a", model="gemini-2.5-flash"))


AGENT_OBJECTS = """
from assay.agents import AgentTurn

CLOSED = []

class Bot:
    name = "bot"
    async def turn(self, user, session):
        return AgentTurn()
    def app_details(self):
        return None
    async def aclose(self):
        CLOSED.append(self)

shared = Bot()
"""


def test_an_agent_object_serving_every_case_is_not_closed_after_each_and_a_probe_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    (tmp_path / "assay_test_objects.py").write_text(AGENT_OBJECTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("assay_test_objects")
    shared = resolve_agent("assay_test_objects:shared", env={})(CaseContext(case=CASE))
    asyncio.run(shared.aclose())  # what the runner does after each conversation
    assert module.CLOSED == []  # the user's object lives on for the next case
    fresh = resolve_agent("assay_test_objects:Bot", env={})
    assert len(module.CLOSED) == 1  # the agent made to check the factory was closed
    made = fresh(CaseContext(case=CASE))
    assert isinstance(made, Agent) and made is not module.CLOSED[0]


# --- agent_factory: whatever an agent argument is ---------------------------------------------


def _function_agent(message: str, session: object) -> str:
    return f"echo {message}"


class _Made:
    """A class making a function agent's answers (a class is called once per case)."""

    name = "made"

    def __call__(self, message: str, session: object) -> str:
        return "made"


def _case_factory(context: CaseContext) -> Agent:
    raise NotImplementedError("never called here")


def test_a_case_factory_is_a_callable_taking_exactly_one_positional_argument() -> None:
    assert is_case_factory(_case_factory)
    assert is_case_factory(lambda context, *, extra=1: None)
    assert not is_case_factory(_function_agent)  # (message, session)
    assert not is_case_factory(_Made)  # a class: called with nothing
    assert not is_case_factory(lambda *args: None)  # binds two as well
    assert not is_case_factory("module:attr")


def test_agent_factory_takes_a_case_factory_as_it_is_and_wraps_the_rest() -> None:
    assert agent_factory(_case_factory) is _case_factory
    assert _answer(_agent_of(agent_factory(_function_agent))) == "echo hi"
    assert _answer(_agent_of(agent_factory(_Made))) == "made"


def test_agent_factory_resolves_a_spec_string(tmp_path: Path) -> None:
    (tmp_path / "agents_here.py").write_text("def agent(message, session):\n    return 'ok'\n")

    assert _answer(_agent_of(agent_factory(f"{tmp_path / 'agents_here.py'}:agent"))) == "ok"


def test_agent_factory_is_what_assay_testing_offers() -> None:
    import assay.testing

    assert assay.testing.agent_factory is agent_factory


def _agent_of(factory: Any) -> Agent:
    made = factory(CaseContext(case=CASE))
    assert isinstance(made, Agent)
    return made


@pytest.mark.parametrize(
    ("spec", "opening"),
    [
        ("no/such/file.py:agent", "agent: no such file no/such/file.py"),
        ("no/such/folder", "agent 'no/such/folder': no such folder"),
        ("openai:", "agent 'openai:' names no model"),
    ],
)
def test_from_python_a_bad_spec_names_the_parameter_not_the_command_line_flag(
    spec: str, opening: str
) -> None:
    with pytest.raises(AgentLoadError) as failed:
        agent_factory(spec, env={})
    assert str(failed.value).startswith(opening)
    assert "--agent" not in str(failed.value)
    with pytest.raises(AgentLoadError, match=r"^--agent"):  # the command line's own wording
        resolve_agent(spec, env={})
