"""The lazy click group: commands listed and summarised without importing them, imported when
one is used; and ``assay``'s map of commands, which must say what the commands themselves say."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import assay.cli
from assay.cli.lazy import LazyCommand, LazyGroup
from assay.cli.main import COMMANDS, cli

ABSENT = "assay_test_no_such_module"  # importing it fails: nothing may try before a command runs


def group(**lazy: LazyCommand) -> LazyGroup:
    return LazyGroup("tool", lazy_commands=lazy, help="A tool.")


def write_module(folder: Path, name: str) -> None:
    (folder / f"{name}.py").write_text(
        "import click\n\n"
        "@click.command('hello')\n"
        "@click.option('--name', default='world')\n"
        "def hello(name):\n"
        "    '''Say hello.'''\n"
        "    click.echo(f'hello {name}')\n\n"
        "not_a_command = 42\n",
        encoding="utf-8",
    )


# --- the group --------------------------------------------------------------------------------


def test_listing_and_the_group_help_import_no_command() -> None:
    tool = group(
        build=LazyCommand(f"{ABSENT}:build", "Build everything that is out of date, then stop."),
        add=LazyCommand(f"{ABSENT}:add", "Add a file."),
    )

    help_run = CliRunner().invoke(tool, ["--help"], terminal_width=40)

    assert help_run.exit_code == 0, help_run.output
    assert tool.list_commands(click.Context(tool)) == ["add", "build"]
    assert "  add    Add a file.\n" in help_run.output
    assert "  build  Build everything that is...\n" in help_run.output
    assert ABSENT not in sys.modules
    assert tool.commands == {}


def test_a_command_is_imported_when_it_runs_and_then_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path, "lazy_hello")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_hello", raising=False)
    tool = group(hello=LazyCommand("lazy_hello:hello", "Say hello."))

    run = CliRunner().invoke(tool, ["hello", "--name", "you"])

    assert run.exit_code == 0, run.output
    assert run.output == "hello you\n"
    assert tool.commands["hello"] is sys.modules["lazy_hello"].hello
    assert tool.get_command(click.Context(tool), "hello") is tool.commands["hello"]


def test_a_commands_own_help_imports_it_and_names_it_under_the_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path, "lazy_hello_help")
    monkeypatch.syspath_prepend(str(tmp_path))
    tool = group(hello=LazyCommand("lazy_hello_help:hello", "Say hello."))

    run = CliRunner().invoke(tool, ["hello", "--help"], prog_name="tool")

    assert run.exit_code == 0, run.output
    assert run.output.startswith("Usage: tool hello [OPTIONS]\n\n  Say hello.\n")
    assert "--name TEXT" in run.output


def test_running_a_command_whose_module_is_missing_fails_on_the_import() -> None:
    tool = group(build=LazyCommand(f"{ABSENT}:build", "Build."))

    run = CliRunner().invoke(tool, ["build"])

    assert isinstance(run.exception, ModuleNotFoundError)


def test_a_target_that_is_not_a_click_command_is_a_type_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path, "lazy_not_command")
    monkeypatch.syspath_prepend(str(tmp_path))
    tool = group(odd=LazyCommand("lazy_not_command:not_a_command", "Odd."))

    with pytest.raises(TypeError, match="lazy_not_command:not_a_command is not a click command"):
        tool.get_command(click.Context(tool), "odd")


def test_an_unknown_command_is_still_no_such_command() -> None:
    tool = group(build=LazyCommand(f"{ABSENT}:build", "Build."))

    run = CliRunner().invoke(tool, ["nope"])

    assert run.exit_code == 2
    assert "No such command 'nope'" in run.output


def test_commands_added_as_objects_are_listed_with_the_lazy_ones() -> None:
    tool = group(build=LazyCommand(f"{ABSENT}:build", "Build."))
    tool.add_command(click.Command("clean", help="Remove what was built."))
    tool.add_command(click.Command("secret", help="Not listed.", hidden=True))

    out = CliRunner().invoke(tool, ["--help"]).output

    assert tool.list_commands(click.Context(tool)) == ["build", "clean", "secret"]
    assert "  build  Build.\n  clean  Remove what was built.\n" in out
    assert "secret" not in out


# --- assay's commands -------------------------------------------------------------------------


def commands_in_the_cli_package() -> dict[str, str]:
    """Every click command defined at the top of a module of assay.cli (a group's subcommands
    aside: they are reached through their group): name -> module:attr."""
    found: dict[str, str] = {}
    modules = [
        (info.name, vars(importlib.import_module(info.name)))
        for info in pkgutil.iter_modules(assay.cli.__path__, "assay.cli.")
    ]
    grouped = {  # a subcommand may be defined in a module of its own and added to its group
        id(command)
        for _, values in modules
        for value in values.values()
        if isinstance(value, click.Group) and value is not cli
        for command in value.commands.values()
    }
    lazily_grouped = {  # or named by its group, to be imported when used
        lazy.target
        for _, values in modules
        for value in values.values()
        if isinstance(value, LazyGroup) and value is not cli
        for lazy in value.lazy_commands.values()
    }
    for name, values in modules:
        for attribute, value in values.items():
            if f"{name}:{attribute}" in lazily_grouped:
                continue
            if isinstance(value, click.Command) and value is not cli and id(value) not in grouped:
                assert value.name is not None
                found.setdefault(value.name, f"{name}:{attribute}")
    return found


def test_every_command_in_the_cli_package_is_in_the_map_under_its_own_name() -> None:
    assert {name: lazy.target for name, lazy in COMMANDS.items()} == commands_in_the_cli_package()
    for name, lazy in COMMANDS.items():
        assert lazy.load().name == name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_summary_shortens_as_the_commands_own_help_does(name: str) -> None:
    real = COMMANDS[name].load()
    stand_in = click.Command(name, help=COMMANDS[name].summary)

    for limit in range(10, 400, 3):
        assert stand_in.get_short_help_str(limit) == real.get_short_help_str(limit), limit


@pytest.mark.parametrize("width", [50, 80, 100, 140, 220])
def test_assay_help_is_what_a_group_of_the_imported_commands_prints(width: int) -> None:
    lazy = LazyGroup(
        "assay",
        lazy_commands=COMMANDS,
        params=cli.params,
        help=cli.help,
        context_settings=cli.context_settings,
    )
    eager = click.Group(
        "assay",
        commands={name: command.load() for name, command in COMMANDS.items()},
        params=cli.params,
        help=cli.help,
        context_settings=cli.context_settings,
    )
    runner = CliRunner()

    shown = runner.invoke(lazy, ["--help"], prog_name="assay", terminal_width=width)
    expected = runner.invoke(eager, ["--help"], prog_name="assay", terminal_width=width)

    assert shown.exit_code == expected.exit_code == 0
    assert shown.output == expected.output
    assert lazy.commands == {}  # listed from the summaries alone
    for name in COMMANDS:
        assert f"\n  {name} " in shown.output
