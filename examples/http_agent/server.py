"""A reference agent server for ``assay eval --agent http://...`` (protocol ``assay.agent/v1``).

Run it, then point assay at it::

    python examples/http_agent/server.py --port 8765
    assay eval my.evalset.json --agent http://127.0.0.1:8765/agent

The toy agent tells the weather in a few cities with its ``get_weather`` tool, remembers the
user's name in the session state, can repeat what the user said last (from the history assay
sends), and describes itself in ``app_details`` so the judges see its instructions and tool.

With ``--delegate-tools`` it does not run ``get_weather`` itself: it asks assay to, with
``tool_requests``. Under ``assay eval --mock-tools`` assay answers from the eval case's recorded
tool responses, so the agent can be evaluated without its real tools.

Standard library only; see docs/agents.md for the protocol.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROTOCOL = "assay.agent/v1"
NAME = "weather_agent"
INSTRUCTIONS = (
    "You tell the user the weather in a city, using get_weather. Greet the user by name when "
    "they have told you their name."
)
TOOLS = [
    {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city's name."}},
            "required": ["city"],
        },
    }
]
FORECASTS = {"lisbon": "sunny and 24°C", "paris": "light rain and 14°C", "oslo": "snow and -3°C"}


def get_weather(city: str) -> dict[str, Any]:
    """The toy tool: a canned forecast, or an error for a city it does not know."""
    forecast = FORECASTS.get(city.lower())
    if forecast is None:
        return {"error": f"no forecast for {city}"}
    return {"city": city, "forecast": forecast}


def weather_text(city: str, result: Any) -> str:
    """The agent's answer from the tool's result."""
    if isinstance(result, dict) and "forecast" in result:
        return f"The weather in {city} is {result['forecast']}."
    return f"Sorry, I have no forecast for {city}."


def _weather(request: dict[str, Any], city: str, delegate: bool) -> dict[str, Any]:
    args = {"city": city}
    if not delegate:  # run the tool here and report the call with its result
        result = get_weather(**args)
        call = {"name": "get_weather", "args": args, "response": result}
        return {"tool_calls": [call], "final_response": weather_text(city, result)}
    results = request.get("tool_results")
    if not results:  # ask assay to run the tool; it posts the turn again with tool_results
        return {"tool_requests": [{"id": "weather-1", "name": "get_weather", "args": args}]}
    return {"final_response": weather_text(city, results[-1]["response"])}


def answer(request: dict[str, Any], delegate_tools: bool = False) -> dict[str, Any]:
    """The agent: one protocol request in, one protocol reply out."""
    message = str(request.get("message", ""))
    state = dict(request.get("state") or {})
    city = re.search(r"weather in ([A-Za-z]+)", message, re.IGNORECASE)
    name = re.search(r"my name is ([A-Za-z]+)", message, re.IGNORECASE)
    if city:
        reply = _weather(request, city.group(1).title(), delegate_tools)
        if "tool_requests" in reply:
            return {"protocol": PROTOCOL, **reply}
    elif name:
        state["user_name"] = name.group(1)
        reply = {"final_response": f"Nice to meet you, {name.group(1)}."}
    elif "what did i say" in message.lower():
        history = request.get("history") or []
        said = history[-1]["user"] if history else "nothing yet"
        reply = {"final_response": f"You said: {said}"}
    else:
        greeting = f"Hello, {state['user_name']}!" if "user_name" in state else "Hello!"
        reply = {"final_response": f"{greeting} Ask me about the weather in a city."}
    state["turns"] = int(state.get("turns", 0)) + 1
    details = {NAME: {"name": NAME, "instructions": INSTRUCTIONS, "tool_declarations": TOOLS}}
    return {
        "protocol": PROTOCOL,
        **reply,
        "state": state,
        "app_details": {"agent_details": details},
    }


class AgentHandler(BaseHTTPRequestHandler):
    """Answers ``POST`` (any path) with :func:`answer`; a bad request gets 400 and an error."""

    delegate_tools = False

    def do_POST(self) -> None:
        """One turn, or one round of tool results."""
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length))
        except ValueError:
            self._send(400, {"error": "the request body is not JSON"})
            return
        if not isinstance(request, dict) or request.get("protocol") != PROTOCOL:
            self._send(400, {"error": f"expected a JSON object with protocol {PROTOCOL!r}"})
            return
        try:
            reply = answer(request, self.delegate_tools)
        except Exception as exc:  # the agent's bug: report it, keep serving
            self._send(500, {"error": f"{type(exc).__name__}: {exc}"})
            return
        self._send(200, reply)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: no line per request."""

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def make_server(
    host: str = "127.0.0.1", port: int = 8765, *, delegate_tools: bool = False
) -> ThreadingHTTPServer:
    """A server for the toy agent, bound but not yet serving (port 0 picks a free port)."""
    handler = type("Handler", (AgentHandler,), {"delegate_tools": delegate_tools})
    return ThreadingHTTPServer((host, port), handler)


def main(argv: Sequence[str] | None = None) -> None:
    """``python examples/http_agent/server.py [--host H] [--port P] [--delegate-tools]``."""
    parser = argparse.ArgumentParser(
        description="The toy weather agent, served over assay.agent/v1."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--delegate-tools",
        action="store_true",
        help="ask assay to run get_weather (tool_requests) instead of running it here",
    )
    options = parser.parse_args(argv)
    server = make_server(options.host, options.port, delegate_tools=options.delegate_tools)
    print(f"{NAME} on http://{options.host}:{server.server_address[1]}/agent (Ctrl-C stops it)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
