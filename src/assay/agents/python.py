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
            known = sorted(n for n in dir(loaded) if not n.startswith("_"))[:12]
            raise AgentLoadError(
                f"--agent {spec!r}: {module} has no attribute {attr!r} (it has: {', '.join(known)})"
            )
        target = getattr(target, part)
    return target


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
