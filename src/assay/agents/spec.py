"""What an agent argument is, and the factory that makes it: an ``--agent SPEC`` string, or an
object (:func:`agent_factory` answers for every kind).

* ``http://...`` or ``https://...``: an agent behind HTTP (:mod:`assay.agents.http`);
* ``openai:MODEL`` or ``ollama:MODEL``: a tool-calling model as the agent, given the eval set's
  tool declarations, its tool calls answered from the recorded responses
  (:mod:`assay.agents.model`);
* ``module:attr`` or ``path/to/file.py:attr``: a Python function or agent object
  (:mod:`assay.agents.python`), or an ADK agent object (:mod:`assay.agents.adk`);
* ``module`` or ``path/to/folder`` (no ``:attr``): ADK's layout, a module or package exposing
  ``root_agent`` (directly or in its ``agent`` submodule), as ``adk eval`` loads it; an ADK
  ``App`` named ``app`` beside it takes part (its plugins), and a ``reset_data()`` beside it
  runs before each conversation, as ADK's ``AgentEvaluator`` runs it.

An object is an :class:`~assay.agents.base.Agent`, a Python function ``(message, session)``, an
ADK agent, a class or ``assay_factory`` callable making one of these, or an agent factory (a
callable taking one :class:`~assay.agents.base.CaseContext`).

A spec is checked when it is resolved, so a typo is reported once, before any case runs.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from assay.agents.base import Agent, AgentFactory, CaseContext, WrappedAgent
from assay.agents.python import AgentLoadError, FunctionAgent, load_python_target

MODEL_PREFIXES = ("openai:", "ollama:")

AgentLike = Any
"""A spec string, an :class:`~assay.agents.base.Agent`, a Python function agent, an ADK agent,
or an :data:`~assay.agents.base.AgentFactory` (see the module docstring)."""


def is_adk_agent(target: Any) -> bool:
    """Whether ``target`` is an ADK agent object (checked without importing ADK)."""
    return any(
        cls.__module__.startswith("google.adk.agents") and cls.__name__ == "BaseAgent"
        for cls in type(target).__mro__
    )


def _import_package(target: str) -> Any:
    path = Path(target)
    if path.is_dir():
        parent, name = str(path.resolve().parent), path.resolve().name
        if parent not in sys.path:
            sys.path.insert(0, parent)
        module = name
    elif "/" in target or target.endswith(".py"):
        raise AgentLoadError(
            f"--agent {target!r}: no such folder; give a folder or module exposing root_agent, "
            "or module:attr / path/to/file.py:attr"
        )
    else:
        module = target
        if str(Path.cwd()) not in sys.path:
            sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise AgentLoadError(f"--agent: cannot import {target!r}: {exc}") from None
    except Exception as exc:
        raise AgentLoadError(f"--agent: importing {target!r} failed: {exc!r}") from None


def _root_agent_module(target: str) -> Any:
    """The module holding ``root_agent``: the module or package itself, or its ``agent``."""
    module = _import_package(target)
    if hasattr(module, "root_agent"):
        return module
    try:
        submodule = importlib.import_module(f"{module.__name__}.agent")
    except ImportError:
        submodule = None
    except Exception as exc:
        raise AgentLoadError(f"--agent: importing {target!r}.agent failed: {exc!r}") from None
    if submodule is not None and hasattr(submodule, "root_agent"):
        return submodule
    raise AgentLoadError(
        f"--agent {target!r}: found no root_agent in it or in its agent module; "
        "use module:attr to name the agent"
    )


def find_root_agent(target: str) -> Any:
    """``root_agent`` of a module or package folder, or of its ``agent`` submodule."""
    return _root_agent_module(target).root_agent


def _adk_app(module: Any) -> Any:
    """The ADK ``App`` beside ``root_agent``, which ``adk eval`` prefers (its plugins and
    settings), or None."""
    app = getattr(module, "app", None)
    return app if type(app).__module__.startswith("google.adk.apps") else None


class _Shared(WrappedAgent):
    """An agent object given as it is serves every case: the run must not close it after each
    conversation, so its ``aclose`` is left to its owner."""

    async def aclose(self) -> None:
        """Nothing: the agent outlives the conversation."""


def _python_factory(target: Any, spec: str) -> AgentFactory:
    fresh = bool(getattr(target, "assay_factory", False)) or inspect.isclass(target)

    def make_from(value: Any) -> Agent:
        if is_adk_agent(value):
            raise AgentLoadError(f"--agent {spec!r}: the factory returned an ADK agent")
        if isinstance(value, Agent) and not inspect.isfunction(value):
            return value
        return FunctionAgent(value)

    if not fresh:
        made = make_from(target)  # checked now; the same object serves every case
        shared: Agent = made if isinstance(made, FunctionAgent) else _Shared(made)
        return lambda context: shared

    def make(context: CaseContext) -> Agent:
        try:
            value = target()
        except Exception as exc:
            raise AgentLoadError(f"--agent {spec!r}: making the agent failed: {exc!r}") from None
        return make_from(value)

    _probe(make)
    return make


def _probe(make: AgentFactory) -> None:
    """Make (and close) one agent now, so a factory that cannot make one fails before any case
    runs; skipped inside a running event loop, where the first case reports it instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return

    async def once() -> None:
        made = make(CaseContext(case=_probe_case()))
        agent = await made if inspect.isawaitable(made) else made
        await agent.aclose()

    asyncio.run(once())


def _probe_case() -> Any:
    from assay.evalset.case import EvalCase

    return EvalCase.model_validate(
        {"eval_id": "assay-probe", "conversation": [{"user_content": {"parts": [{"text": ""}]}}]}
    )


def factory_for(target: Any, spec: str) -> AgentFactory:
    """The factory for an agent given as an object: an ADK agent, an :class:`Agent`, a Python
    function, or a class/factory making one (``spec`` names it in messages)."""
    if is_adk_agent(target):
        from assay.agents.adk import adk_agent_factory

        return adk_agent_factory(target, source=spec)
    return _python_factory(target, spec)


SpecKind = Literal["http", "model", "python", "package"]


def spec_kind(spec: str) -> SpecKind:
    """Which form ``spec`` has: ``http(s)://...``, ``openai:``/``ollama:MODEL``, ``module:attr``
    or ``path/to/file.py:attr`` (python), else an ADK module or folder (package)."""
    spec = spec.strip()
    if spec.startswith(("http://", "https://")):
        return "http"
    if spec.startswith(MODEL_PREFIXES):
        return "model"
    head, sep, attr = spec.rpartition(":")
    if sep and head and attr and "/" not in attr and not attr.endswith(".py"):
        return "python"
    return "package"


def resolve_agent(spec: str, *, env: Mapping[str, str] | None = None) -> AgentFactory:
    """The factory for the agent ``spec`` names (see the module docstring); raises
    :class:`~assay.agents.python.AgentLoadError` with what to do when it cannot be used."""
    spec = spec.strip()
    environ: Mapping[str, str] = os.environ if env is None else env
    if not spec:
        raise AgentLoadError("--agent: the spec is empty")
    kind = spec_kind(spec)
    if kind == "http":
        from assay.agents.http import http_agent_factory

        return http_agent_factory(spec, env=environ)
    if kind == "model":
        from assay.agents.model import model_agent_factory

        return model_agent_factory(spec, env=environ)
    if kind == "python":
        return factory_for(load_python_target(spec), spec)
    module = _root_agent_module(spec)
    reset = getattr(module, "reset_data", None)
    app = _adk_app(module)
    if is_adk_agent(module.root_agent) and (app is not None or callable(reset)):
        from assay.agents.adk import adk_agent_factory

        return adk_agent_factory(
            module.root_agent, source=spec, app=app, reset=reset if callable(reset) else None
        )
    return factory_for(module.root_agent, spec)


def _binds(signature: inspect.Signature, count: int) -> bool:
    try:
        signature.bind(*([None] * count))
    except TypeError:
        return False
    return True


def is_case_factory(target: Any) -> bool:
    """Whether ``target`` is an agent factory: a callable taking exactly one positional argument
    (the :class:`~assay.agents.base.CaseContext`). Python function agents take two (the message
    and the session); classes and ``assay_factory`` callables take none."""
    if inspect.isclass(target) or is_adk_agent(target) or getattr(target, "assay_factory", False):
        return False
    if isinstance(target, Agent) or not callable(target):
        return False
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return False
    return _binds(signature, 1) and not _binds(signature, 2)


def _describe(target: Any) -> str:
    name = getattr(target, "__qualname__", None) or getattr(target, "name", None)
    return str(name or type(target).__name__)


CLI_FLAG = "--agent"
"""How :func:`resolve_agent`'s messages name the spec's source: the command line's flag."""


def for_argument(error: AgentLoadError, argument: str) -> AgentLoadError:
    """``error`` as a Python caller reads it: naming the parameter ``argument`` where the
    message names the command line's ``--agent`` (``agent 'x.py:typo': x.py has no ...``)."""
    text = str(error)
    if text.startswith(CLI_FLAG + ":") or text.startswith(CLI_FLAG + " "):
        text = argument + text[len(CLI_FLAG) :]
    return AgentLoadError(text)


def agent_factory(agent: AgentLike, *, env: Mapping[str, str] | None = None) -> AgentFactory:
    """The factory that makes a fresh agent per case and run from whatever ``agent`` is (see the
    module docstring); raises :class:`~assay.agents.python.AgentLoadError` when it cannot, its
    message naming the parameter ``agent`` (of the Python caller), not ``--agent``."""
    try:
        if isinstance(agent, str):
            return resolve_agent(agent, env=env)
        if is_case_factory(agent):
            factory: AgentFactory = agent
            return factory
        return factory_for(agent, _describe(agent))
    except AgentLoadError as exc:
        raise for_argument(exc, "agent") from None
