"""A session's spans as trees: duplicates, missing parents, cycles and clock skew found.

What is wrong with a session's spans is said in notes (kept going) or in a problem (the session
cannot be scored as it is, e.g. it never ended); nothing raises.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from assay.traces import conventions
from assay.traces.spans import Span


@dataclass
class Forest:
    """A session's spans by id, each span's children (by start time) and the roots."""

    spans: dict[tuple[str, str], Span] = field(default_factory=dict)
    children: dict[tuple[str, str], list[Span]] = field(default_factory=dict)
    roots: list[Span] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    _roles: dict[tuple[str, str], str] = field(default_factory=dict, repr=False)

    def role(self, span: Span) -> str:
        """The span's role (:func:`assay.traces.conventions.role`), worked out once."""
        key = (span.trace_id, span.span_id)
        found = self._roles.get(key)
        if found is None:
            found = self._roles[key] = conventions.role(span)
        return found

    def kids(self, span: Span) -> list[Span]:
        return self.children.get((span.trace_id, span.span_id), [])

    def descendants(self, span: Span) -> list[Span]:
        """Every span under ``span``, by start time (a cycle cannot loop: each span once)."""
        found: list[Span] = []
        seen = {(span.trace_id, span.span_id)}
        todo = list(self.kids(span))
        while todo:
            child = todo.pop()
            key = (child.trace_id, child.span_id)
            if key in seen:
                continue
            seen.add(key)
            found.append(child)
            todo.extend(self.kids(child))
        return sorted(found, key=lambda s: (s.start_ns, s.end_ns))


def build_forest(spans: Iterable[Span]) -> Forest:
    forest = Forest()
    for span in spans:
        _add(forest, span)
    for span in forest.spans.values():
        if span.end_ns < span.start_ns:
            forest.notes.append(
                f"span {span.span_id} ends before it starts (clock skew): its duration is taken as 0"
            )
            span.end_ns = span.start_ns
    _link(forest)
    for kids in forest.children.values():
        kids.sort(key=lambda s: (s.start_ns, s.end_ns))
    forest.roots.sort(key=lambda s: (s.start_ns, s.end_ns))
    return forest


def _add(forest: Forest, span: Span) -> None:
    key = (span.trace_id, span.span_id)
    held = forest.spans.get(key)
    if held is None:
        forest.spans[key] = span
    elif held.as_tuple() != span.as_tuple():  # the same span sent twice is no problem
        forest.problems.append(
            f"span id {span.span_id} is used by two different spans ({held.name!r} and "
            f"{span.name!r}) in trace {span.trace_id}: the second is ignored"
        )


def _link(forest: Forest) -> None:
    missing: dict[str, list[str]] = {}
    for key, span in forest.spans.items():
        parent = (span.trace_id, span.parent_id) if span.parent_id else None
        if parent is None:
            forest.roots.append(span)
        elif parent not in forest.spans:
            forest.roots.append(span)
            missing.setdefault(span.trace_id, []).append(
                f"{span.span_id} (parent {span.parent_id})"
            )
        elif parent == key:
            forest.roots.append(span)
            forest.problems.append(f"span {span.span_id} is its own parent (a cycle)")
        else:
            forest.children.setdefault(parent, []).append(span)
    _cycles(forest)
    whole = {s.trace_id for s in forest.roots if s.parent_id is None}
    for trace_id, orphans in missing.items():
        if trace_id in whole:
            forest.notes.append(
                f"trace {trace_id}: spans whose parent is missing (kept in the turn their time falls "
                "in, else as turns of their own): "
                + ", ".join(orphans[:5])
                + (f" and {len(orphans) - 5} more" if len(orphans) > 5 else "")
            )
        else:
            forest.problems.append(
                f"trace {trace_id} never ended: its root span was not exported (the process "
                f"stopped or the session is still open); spans {', '.join(orphans[:3])} point to "
                "it"
            )


def _cycles(forest: Forest) -> None:
    """Spans on a loop of parents reach no root: each loop is cut at its earliest span."""
    reached: set[tuple[str, str]] = set()
    todo = list(forest.roots)
    while todo:
        span = todo.pop()
        key = (span.trace_id, span.span_id)
        if key not in reached:
            reached.add(key)
            todo.extend(forest.kids(span))
    lost = [s for k, s in forest.spans.items() if k not in reached]
    while lost:
        first = min(lost, key=lambda s: (s.start_ns, s.span_id))
        forest.problems.append(
            f"span {first.span_id} is its own ancestor (a cycle of parent ids in trace "
            f"{first.trace_id}): cut there"
        )
        parent = (first.trace_id, first.parent_id or "")
        forest.children[parent] = [s for s in forest.children.get(parent, []) if s is not first]
        forest.roots.append(first)
        todo = [first]
        while todo:
            span = todo.pop()
            key = (span.trace_id, span.span_id)
            if key not in reached:
                reached.add(key)
                todo.extend(forest.kids(span))
        lost = [s for s in lost if (s.trace_id, s.span_id) not in reached]
