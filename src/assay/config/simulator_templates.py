"""The simulated user's instructions as Jinja templates, rendered in a sandbox.

ADK 2.13 writes ``custom_instructions`` with Jinja placeholders (``{{ stop_signal }}``,
``{{ conversation_plan }}``, ``{{ conversation_history }}``, and ``{{ persona }}`` when the
scenario has a persona); the older ``{stop_signal}`` ``str.format`` style is no longer read, so a
template written that way is refused with a message that shows the Jinja spelling.

As in ADK, templates are checked when the config is loaded (syntax, and that each required
placeholder is used) and rendered in Jinja's sandbox with lenient undefined values: a placeholder
the template uses but nobody supplies renders as nothing. ADK's ``render_string_filter`` (render a
persona's text, which may itself hold ``{{ stop_signal }}``) is available under the same name.

jinja2 is imported only when a template is checked or rendered. The checks run as the config is
read (:mod:`assay.config.simulator`), so this module lives below the config, not in
:mod:`assay.simulation`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from assay.errors import UserSimulatorError

if TYPE_CHECKING:
    from jinja2.runtime import Context
    from jinja2.sandbox import SandboxedEnvironment

REQUIRED_PLACEHOLDERS = ("stop_signal", "conversation_plan", "conversation_history")
"""What every ``custom_instructions`` must use."""

PERSONA_PLACEHOLDER = "persona"
"""What ``custom_instructions`` must also use when the scenario has a persona."""

INSTALL_JINJA = "pip install 'jinja2>=3.1'"

_FORMAT_STYLE = re.compile(r"(?<!\{)\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}(?!\})")


@cache
def _environment() -> SandboxedEnvironment:
    try:
        from jinja2 import pass_context
        from jinja2.sandbox import SandboxedEnvironment
    except ImportError:  # pragma: no cover - only where jinja2 is not installed
        raise UserSimulatorError(
            f"the user simulator's instructions need jinja2: {INSTALL_JINJA}"
        ) from None
    env = SandboxedEnvironment(autoescape=False)

    @pass_context
    def render_string(context: Context, text: Any) -> str:
        if not text:
            return ""
        return env.from_string(str(text)).render(context.get_all())

    env.filters["render_string_filter"] = render_string
    return env


def placeholders(template: str) -> set[str]:
    """The variables a template reads. Raises ``ValueError`` naming a syntax error's line."""
    env = _environment()
    from jinja2 import TemplateSyntaxError, meta

    try:
        return set(meta.find_undeclared_variables(env.parse(template)))
    except TemplateSyntaxError as exc:
        raise ValueError(
            f"is not a valid Jinja template: line {exc.lineno}: {exc.message}"
        ) from None


def missing_placeholders(template: str, required: Iterable[str]) -> str | None:
    """Why ``template`` is not usable as instructions (a syntax error, or the required
    placeholders it does not use), or None when it is."""
    try:
        found = placeholders(template)
    except ValueError as exc:
        return str(exc)
    missing = [name for name in required if name not in found]
    if not missing:
        return None
    wanted = ", ".join("{{ " + name + " }}" for name in missing)
    message = f"must use the Jinja placeholder(s) {wanted}"
    old_style = [m for m in _FORMAT_STYLE.findall(template) if m in missing]
    if old_style:
        message += (
            f"; '{{{old_style[0]}}}' is the old str.format style, which ADK 2.13 no longer "
            f"reads: write '{{{{ {old_style[0]} }}}}'"
        )
    return message


def render(template: str, values: Mapping[str, Any]) -> str:
    """``template`` rendered with ``values`` in the sandbox. Raises :class:`UserSimulatorError`
    when it cannot be rendered (bad syntax, an operation the sandbox forbids)."""
    env = _environment()
    from jinja2 import TemplateError

    try:
        return env.from_string(template).render(dict(values))
    except TemplateError as exc:
        raise UserSimulatorError(
            f"the user simulator's instructions cannot be rendered: {type(exc).__name__}: {exc}"
        ) from None
