"""A click group that imports a command's module only when that command is used.

Importing every command to build the group would load pydantic, rich, numpy and the rest
(about half a second) before ``assay --help`` could print a line. So :class:`LazyGroup` knows
each command by where it lives (``module:attribute``) and by its summary, the first paragraph
of its help: listing the commands (``list_commands``) and printing ``assay --help`` import
nothing, and looking one up to run it or show its own help (``get_command``) imports its module.
That module declares the command's options with click alone and imports what its run needs
inside the command, so ``assay eval --help`` answers as fast (tests/cli/test_startup.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import import_module
from typing import Any

import click


@dataclass(frozen=True)
class LazyCommand:
    """A command not imported yet: ``target`` is ``module:attribute``, ``summary`` the first
    paragraph of its help (what the group's help shortens, as click shortens a command's own)."""

    target: str
    summary: str

    def load(self) -> click.Command:
        """Import the command."""
        module, _, attribute = self.target.partition(":")
        command = getattr(import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.target} is not a click command")
        return command


class LazyGroup(click.Group):
    """A :class:`click.Group` whose ``lazy_commands`` are imported on first look-up."""

    def __init__(
        self, *args: Any, lazy_commands: Mapping[str, LazyCommand] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands: dict[str, LazyCommand] = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in self.lazy_commands:
            command = self.lazy_commands[cmd_name].load()
            self.add_command(command, cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their short help, as :meth:`click.Group.format_commands` writes
        them, from the summaries of the commands not imported yet."""
        listed: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            command = self.commands.get(name)
            if command is None:
                command = click.Command(name, help=self.lazy_commands[name].summary)
            if not command.hidden:
                listed.append((name, command))
        if not listed:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in listed)
        with formatter.section("Commands"):
            formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in listed])
