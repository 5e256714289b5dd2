"""``module:attr``: an agent written in Python.

``attr`` names one of:

* a function, sync or async, ``(message: str, session: Session) -> str | TurnResult | events``
  (see :func:`assay.agents.base.to_turn` for what it may return). Optional attributes on the
  function describe it to the judges: ``name``, ``instructions`` (str) and ``tool_declarations``
  (a list of ADK/OpenAI-style function declarations);
* an object with an async ``turn(user: Content, session: Session) -> AgentTurn`` (the
  :class:`~assay.agents.base.Agent` protocol), used as it is;
* a class or a factory function called with no arguments that returns one of the above (marked
  by an ``assay_factory = True`` attribute), so each case gets a fresh agent.

``module`` is a dotted module importable from the current directory, or a path to a ``.py``
file (``examples/travel/agent.py:travel_agent``).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

from assay.agents.base import AgentTurn, Session, to_turn
from assay.errors import AssayError
from assay.evalset.content import Content
from assay.evalset.invocation import AgentDetails, AppDetails


class AgentLoadError(AssayError):
    """An ``--agent`` spec that cannot be used, with what to do about it."""


def _import(module: str) -> Any:
    if module.endswith(".py") or "/" in module:
        path = Path(module)
        if not path.is_file():
            raise AgentLoadError(f"--agent: no such file {module}")
        name = f"assay_agent_{abs(hash(path.resolve()))}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise AgentLoadError(f"--agent: cannot import {module}")
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        try:
            spec.loader.exec_module(loaded)
        except Exception as exc:
            raise AgentLoadError(f"--agent: importing {module} failed: {exc!r}") from None
        return loaded
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise AgentLoadError(f"--agent: cannot import module {module!r}: {exc}") from None
    except Exception as exc:
        raise AgentLoadError(f"--agent: importing {module!r} failed: {exc!r}") from None


def load_python_target(spec: str) -> Any:
    """The object ``module:attr`` names."""
    module, sep, attr = spec.rpartition(":")
    if not sep or not module or not attr:
        raise AgentLoadError(
            f"--agent {spec!r}: expected module:attr (a module or .py file, then the name of a "
            "function or agent object in it)"
        )
    loaded = _import(module)
    target = loaded
    for part in attr.split("."):
        if not hasattr(target, part):
            raise AgentLoadError(
                f"--agent {spec!r}: {module} has no attribute {attr!r}; {_candidates(loaded, attr)}"
            )
        target = getattr(target, part)
    return target


_MOST_NAMED = 8


def _candidates(module: Any, wanted: str) -> str:
    """What a misspelt ``module:attr`` may have meant: the agents the module itself defines
    (not the names it imports), closest to ``wanted`` first; else its other functions."""
    ranked: dict[int, list[str]] = {2: [], 1: []}
    for name, value in vars(module).items():
        rank = 0 if name.startswith("_") else _agent_rank(module.__name__, value)
        if rank:
            ranked[rank].append(name)
    names, what = ranked[2], "agent"
    if not names:
        names, what = ranked[1], "function that could take (message, session)"
    if not names:
        return "it defines no agent and no function of (message, session)"
    if len(names) == 1:
        return f"the one {what} it defines is {names[0]}"
    closest = sorted(names, key=lambda n: -difflib.SequenceMatcher(None, wanted, n).ratio())
    more = len(closest) - _MOST_NAMED
    listed = ", ".join(closest[:_MOST_NAMED]) + (f" and {more} more" if more > 0 else "")
    return f"each {what} it defines, closest first: {listed}"


def _agent_rank(module_name: str, value: Any) -> int:
    """2 for what is surely an agent (an ADK agent, an object or class with ``turn``, an
    ``assay_factory``, a function of ``(message, session)``); 1 for another function defined in
    the module that takes two arguments; 0 for the rest (constants, imported names, tools that
    cannot be called so)."""
    if inspect.ismodule(value):
        return 0
    if any(c.__name__ == "BaseAgent" and c.__module__.startswith("google.adk.agents")
           for c in type(value).__mro__):  # fmt: skip
        return 2
    own = getattr(value, "__module__", None) == module_name
    if inspect.isclass(value):
        return 2 if own and callable(getattr(value, "turn", None)) else 0
    if not inspect.isfunction(value):
        return 2 if callable(getattr(value, "turn", None)) else 0
    if not own:
        return 0
    if getattr(value, "assay_factory", False):
        return 2
    return _function_rank(value)


def _function_rank(function: Any) -> int:
    try:
        signature = inspect.signature(function)
        signature.bind(None, None)
    except (TypeError, ValueError):
        return 0
    second = list(signature.parameters.values())[1:2]
    session = bool(second) and (
        second[0].name == "session" or "Session" in str(second[0].annotation)
    )
    return 2 if session else 1


def _user_text(user: Content) -> str:
    return "\n".join(p.text for p in user.parts or [] if p.text and not p.thought)


class FunctionAgent:
    """A Python function as an :class:`~assay.agents.base.Agent`."""

    def __init__(self, function: Any, name: str | None = None) -> None:
        if not callable(function):
            raise AgentLoadError(f"--agent: {function!r} is not callable")
        self._function = function
        self._name = name or str(
            getattr(function, "name", None)
            or getattr(function, "__name__", None)
            or type(function).__name__
        )

    @property
    def name(self) -> str:
        """The function's ``name`` attribute, else its ``__name__``."""
        return self._name

    async def turn(self, user: Content, session: Session) -> AgentTurn:
        """Call the function with the user's text and the session; await it if needed."""
        result = self._function(_user_text(user), session)
        if inspect.isawaitable(result):
            result = await result
        return to_turn(result, self._name)

    def app_details(self) -> AppDetails | None:
        """From the function's ``instructions`` and ``tool_declarations`` attributes."""
        instructions = getattr(self._function, "instructions", None)
        tools = getattr(self._function, "tool_declarations", None)
        if instructions is None and tools is None:
            return None
        details = AgentDetails(
            name=self._name,
            instructions=str(instructions or ""),
            tool_declarations=list(tools or []),
        )
        return AppDetails(agent_details={self._name: details})

    async def aclose(self) -> None:
        """Nothing to release."""
