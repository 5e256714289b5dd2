"""One session's spans -> its invocations (assay's ``Invocation``, ADK's JSON shape).

An invocation is one user turn: the topmost agent or workflow span of a tree (``invoke_agent``,
ADK's ``invocation``/``invoke_workflow``, an OpenInference ``AGENT``), or a root with none
under it. Its model calls give the model events (their function calls, usage and model), its
tool spans the function responses, joined to the calls by tool-call id, else by name in order.
Durations follow ADK 2.13: the root's wall clock; model seconds the union of the model calls;
tool seconds the union of the tool spans less the model time inside them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from assay.evalset.invocation import Invocation
from assay.traces import conventions as conv
from assay.traces.conventions import Msg
from assay.traces.spans import Span
from assay.traces.tree import Forest, build_forest

CONTENT_SETTINGS = {
    "adk": (
        "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (or SPAN_AND_EVENT) "
        "where the ADK agent runs, so that its spans carry the messages and tool arguments"
    ),
    "adk-legacy": (
        "unset ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS (or set it to true) where the ADK agent "
        "runs, so that its call_llm and tool spans carry the request, response and tool data"
    ),
    "openinference": (
        "unset OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS (and the *_MESSAGES "
        "variants) where the agent runs, so that its spans carry inputs and outputs"
    ),
    "genai": (
        "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT where the agent runs (SPAN_ONLY "
        "for instrumentations of the latest GenAI conventions, true for older ones; the OpenAI "
        "Agents instrumentation captures unless it is false), so that its spans carry the "
        "messages and tool arguments"
    ),
}
"""Per convention: the setting that makes spans carry message content."""


@dataclass
class Session:
    """A conversation read from spans: its invocations and what was wrong with it."""

    session_id: str
    source: str = ""
    invocations: list[Invocation] = field(default_factory=list)
    conventions: set[str] = field(default_factory=set)
    trace_ids: list[str] = field(default_factory=list)
    root_span_ids: list[str] = field(default_factory=list)
    attributes: dict[str, Any] = field(default_factory=dict)
    """The root spans' attributes (the first value of each key), for matching cases."""
    problem: str | None = None
    """Why the session cannot be scored as it is (the case is then NOT_EVALUATED)."""
    notes: list[str] = field(default_factory=list)
    content_missing: bool = False

    @property
    def framework(self) -> str:
        for name in ("adk-legacy", "adk", "openinference", "genai"):
            if name in self.conventions:
                return name
        return "unknown"


def build_session(
    spans: Iterable[Span], source: str = "", session_id: str | None = None
) -> Session:
    """A session from its spans (any order; those of several traces)."""
    forest = build_forest(spans)
    found = Session(session_id or "", source=source)
    for span in forest.spans.values():
        found.conventions |= conv.conventions(span)
        if span.trace_id not in found.trace_ids:
            found.trace_ids.append(span.trace_id)
        found.session_id = found.session_id or conv.session_id(span) or ""
    found.session_id = found.session_id or (found.trace_ids[0] if found.trace_ids else "")
    for root in forest.roots:
        found.root_span_ids.append(root.span_id)
        for key, value in root.attributes.items():
            found.attributes.setdefault(key, value)
    missing = False
    for top in _invocation_roots(forest):
        invocation, lacks = _invocation(forest, top)
        missing = missing or lacks
        if isinstance(invocation, str):
            forest.problems.append(invocation)
        else:
            found.invocations.append(invocation)
    found.invocations.sort(key=lambda i: i.creation_timestamp)
    found.notes.extend(forest.notes)
    if forest.problems:
        found.problem = "; ".join(forest.problems)
    if missing:
        found.content_missing = True
        setting = CONTENT_SETTINGS.get(found.framework, CONTENT_SETTINGS["genai"])
        found.notes.append(f"the spans carry no message content: {setting}")
    if not found.invocations and found.problem is None:
        found.problem = "no agent, model or tool spans: nothing to evaluate"
    return found


def _invocation_roots(forest: Forest) -> list[Span]:
    found: list[Span] = []
    for root in forest.roots:
        tops: list[Span] = []
        todo = [root]
        while todo:
            span = todo.pop()
            if forest.role(span) in (conv.AGENT, conv.WORKFLOW):
                tops.append(span)
            else:
                todo.extend(forest.kids(span))
        tops = [turn for top in tops for turn in _turns(forest, top)]
        useful = any(
            forest.role(s) in (conv.LLM, conv.TOOL) for s in [root, *forest.descendants(root)]
        )
        found.extend(tops if tops else [root] if useful else [])
    return _adopt(forest, found)


def _adopt(forest: Forest, tops: list[Span]) -> list[Span]:
    """Spans whose parent is missing go into the turn of their trace whose time holds them
    (a lost span between a turn and them), else stay turns of their own."""
    kept: list[Span] = []
    for top in tops:
        orphan = top.parent_id is not None and (top.trace_id, top.parent_id) not in forest.spans
        home = None
        if orphan and forest.role(top) not in (conv.AGENT, conv.WORKFLOW):
            home = next(
                (
                    t
                    for t in tops
                    if t is not top
                    and t.trace_id == top.trace_id
                    and forest.role(t) in (conv.AGENT, conv.WORKFLOW)
                    and t.start_ns <= top.start_ns <= t.end_ns
                ),
                None,
            )
        if home is None:
            kept.append(top)
        else:
            forest.children.setdefault((home.trace_id, home.span_id), []).append(top)
    return kept


def _turns(forest: Forest, top: Span) -> list[Span]:
    """An agent span around a whole conversation (OpenAI Agents' ``agents.trace``: a root
    over one task span per turn) split into its turns: its children that hold an agent, when
    there are several one after another. A workflow (ADK: one per turn) is never split."""
    if forest.role(top) != conv.AGENT:
        return [top]
    holders = [
        child
        for child in forest.kids(top)
        if forest.role(child) == conv.OTHER
        and any(forest.role(s) == conv.AGENT for s in forest.descendants(child))
    ]
    if len(holders) < 2:
        return [top]
    ordered = sorted(holders, key=lambda s: s.start_ns)
    apart = all(a.end_ns <= b.start_ns for a, b in itertools.pairwise(ordered))
    return ordered if apart else [top]


def _author(forest: Forest, span: Span, default: str) -> str:
    node: Span | None = span
    for _ in range(256):
        if node is None:
            break
        name = conv.agent_name(node) if forest.role(node) == conv.AGENT else None
        if name:
            return name
        node = forest.spans.get((node.trace_id, node.parent_id or ""))
    return default


def _invocation(forest: Forest, top: Span) -> tuple[Invocation | str, bool]:
    """The invocation under ``top`` (or why it cannot be read), and whether its spans lacked
    message content."""
    steps = (
        [top, *forest.descendants(top)]
        if forest.role(top) in (conv.LLM, conv.TOOL)
        else forest.descendants(top)
    )
    llms = [s for s in steps if forest.role(s) == conv.LLM and not _under_llm(forest, s, top)]
    tools = [s for s in steps if forest.role(s) == conv.TOOL]
    default = conv.agent_name(top) or "agent"
    user, answer = conv.agent_io(top)
    outputs = [conv.llm_output(s) for s in llms]
    if user is None:
        user = next((_last_user(given) for s in llms if (given := conv.llm_input(s))), None)
    infos = [conv.tool_info(t) for t in tools]
    events = _events(forest, llms, outputs, tools, infos, default)
    if answer is None:
        answer = next((o for o in reversed(outputs) if _is_final(o)), None)
    _drop_final_content(events, answer)
    lacks = (bool(llms) and not any(conv.has_content(s) for s in llms)) or (
        bool(infos) and all(i.args is None and i.result is None for i in infos)
    )
    invocation_id = _first_attr([top, *steps], "gcp.vertex.agent.invocation_id") or top.span_id
    model_s = _union([(s.start_ns, s.end_ns) for s in llms])
    tool_s = _union([(s.start_ns, s.end_ns) for s in tools]) - _overlap(tools, llms)
    data = {
        "invocation_id": str(invocation_id),
        "user_content": user or conv.make_content("user", []),
        "final_response": answer,
        "intermediate_data": {"invocation_events": events},
        "creation_timestamp": top.start_ns / 1e9,
        "duration": max(top.end_ns - top.start_ns, 0) / 1e9,
        "model_duration": model_s / 1e9 if llms else None,
        "tool_duration": max(tool_s, 0) / 1e9 if tools else None,
    }
    try:
        return Invocation.model_validate(data), lacks
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"turn of span {top.span_id} cannot be read: {where}: {first['msg']}", lacks


def _under_llm(forest: Forest, span: Span, top: Span) -> bool:
    """Whether a model span is inside another (ADK legacy: ``call_llm`` > ``generate_content``,
    one call whose tokens both carry)."""
    node = forest.spans.get((span.trace_id, span.parent_id or ""))
    for _ in range(256):
        if node is None or node is top:
            return False
        if forest.role(node) == conv.LLM:
            return True
        node = forest.spans.get((node.trace_id, node.parent_id or ""))
    return False


def _first_attr(spans: list[Span], key: str) -> Any:
    return next((s.attributes[key] for s in spans if s.attributes.get(key)), None)


def _last_user(given: list[Msg]) -> Msg | None:
    for message in reversed(given):
        parts = message.get("parts") or []
        if (
            message.get("role") == "user"
            and any(p.get("text") for p in parts)
            and not any(p.get("function_response") for p in parts)
        ):
            return message
    return None


def _is_final(message: Msg | None) -> bool:
    return bool(conv.text_of(message)) and not conv.calls_of(message)


def _drop_final_content(events: list[Msg], answer: Msg | None) -> None:
    """As ADK does: the final response's text is on ``final_response``, not repeated."""
    if answer is None:
        return
    for event in reversed(events):
        content = event.get("content")
        if content is not None and content.get("role") == "model":
            same = content is answer or conv.text_of(content) == conv.text_of(answer)
            if _is_final(content) and same:
                event["content"] = None
            return


def _events(
    forest: Forest,
    llms: list[Span],
    outputs: list[Msg | None],
    tools: list[Span],
    infos: list[conv.ToolInfo],
    default: str,
) -> list[Msg]:
    """Model events and function-response events in time order, calls joined to tool spans."""
    timeline = sorted(
        [(s.start_ns, 0, i) for i, s in enumerate(llms)]
        + [(s.start_ns, 1, i) for i, s in enumerate(tools)]
    )
    steps = _Steps()
    for _start, kind, index in timeline:
        if kind == 0:
            span = llms[index]
            event = {"author": _author(forest, span, default), "content": outputs[index]}
            usage, version = conv.usage(span), conv.model_version(span)
            if usage is not None:
                event["usage_metadata"] = usage
            if version is not None:
                event["model_version"] = version
            steps.model(event)
        else:
            steps.tool(infos[index], _author(forest, tools[index], default))
    return steps.events


class _Steps:
    """The events of a turn as they are built: the last model event, its calls not yet
    answered, and the event gathering their responses (parallel calls answer in one)."""

    def __init__(self) -> None:
        self.events: list[Msg] = []
        self.open_calls: list[Msg] = []
        self.last_model: Msg | None = None
        self.responses: Msg | None = None

    def model(self, event: Msg) -> None:
        self.events.append(event)
        self.last_model = event
        self.open_calls = conv.calls_of(event["content"])
        self.responses = None

    def tool(self, info: conv.ToolInfo, author: str) -> None:
        call = _join(self.open_calls, info)
        if call is None:  # no call recorded for it (no content, or ids and names differ)
            call = conv.make_call(info.call_id, info.name, info.args)
            self._calling(author)["parts"].append({"function_call": call})
        response = conv.make_response(
            call.get("id") or info.call_id, call.get("name") or info.name, info.result
        )
        if self.responses is None:
            self.responses = {"author": author, "content": conv.make_content("user", [])}
            self.events.append(self.responses)
        self.responses["content"]["parts"].append({"function_response": response})

    def _calling(self, author: str) -> Msg:
        """The model message a call without one is added to: the last model event's, unless
        that is a text answer (then a new model event)."""
        event = self.last_model
        if event is not None and event["content"] is None:
            event["content"] = conv.make_content("model", [])
        if event is None or (event["content"]["parts"] and not conv.calls_of(event["content"])):
            event = {"author": author, "content": conv.make_content("model", [])}
            self.events.append(event)
            self.last_model = event
            self.responses = None
        content: Msg = event["content"]
        return content


def _join(open_calls: list[Msg], info: conv.ToolInfo) -> Msg | None:
    """The model's call a tool span answers: same id, else the first of the same name (then
    the call takes the tool span's id: ADK runs a call the model sent without an id under one
    it makes, which its events record)."""
    pick = None
    if info.call_id:
        pick = next((c for c in open_calls if c.get("id") == info.call_id), None)
    if pick is None:
        pick = next((c for c in open_calls if c.get("name") == info.name), None)
    if pick is None:
        return None
    open_calls.remove(pick)
    if info.call_id and pick.get("id") != info.call_id:  # the id the tool really ran under
        pick["id"] = info.call_id
    if pick.get("args") is None and info.args is not None:
        pick["args"] = info.args
    return pick


def _union(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for start, stop in sorted(intervals):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def _overlap(outer: list[Span], inner: list[Span]) -> int:
    """Nanoseconds of ``inner`` spans inside ``outer`` ones (model time inside a tool)."""
    clipped = [
        (max(i.start_ns, o.start_ns), min(i.end_ns, o.end_ns))
        for o in outer
        for i in inner
        if i.start_ns < o.end_ns and i.end_ns > o.start_ns
    ]
    return _union(clipped)
