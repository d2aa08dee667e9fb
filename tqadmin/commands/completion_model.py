"""What the shell completion scripts offer, read from the parser ``tqadmin.cli`` builds.

The scripts are generated rather than written by hand so that a new command or option is completed the day it
is added. Profile names are not in them: they change with the config file, so each script asks
``tqadmin completion --profiles`` when a profile is to be completed.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

PROFILE_DESTS = frozenset({"profile", "profiles"})
"""Options whose value is a profile name (``--profile``) or several (``exporter --profiles``)."""


@dataclass(frozen=True, slots=True)
class Option:
    flags: tuple[str, ...]  # "-n", "--limit"
    help: str
    takes_value: bool
    choices: tuple[str, ...] = ()
    profile: bool = False  # its value is a profile name of the config file

    @property
    def longs(self) -> tuple[str, ...]:
        return tuple(f for f in self.flags if f.startswith("--"))

    @property
    def shorts(self) -> tuple[str, ...]:
        return tuple(f for f in self.flags if not f.startswith("--"))


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    help: str
    options: tuple[Option, ...]  # its own, the global options apart
    arguments: tuple[str, ...] = ()  # the values its arguments may take, where argparse lists them


@dataclass(frozen=True, slots=True)
class Cli:
    globals: tuple[Option, ...]  # accepted before and after the command name
    commands: tuple[Command, ...]

    def valued_globals(self) -> list[str]:
        """The global flags followed by a value: that value is never the command name."""
        return [flag for option in self.globals if option.takes_value for flag in option.flags]


def read_cli(parser: argparse.ArgumentParser) -> Cli:
    """The commands and options of ``parser``, the one ``tqadmin.cli.whole_parser`` builds; a command's help
    is its sub-parser's description."""
    globals_ = _options(parser, set())
    global_flags = {flag for option in globals_ for flag in option.flags}
    commands = tuple(
        Command(name, sub.description or "", _options(sub, global_flags), _argument_choices(sub))
        for name, sub in _subparsers(parser)
    )
    return Cli(globals_, commands)


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.items())
    return []


def _options(parser: argparse.ArgumentParser, skip: set[str]) -> tuple[Option, ...]:
    """The parser's options but help, hidden ones and those whose flags are in ``skip``."""
    found = []
    for action in parser._actions:
        flags = tuple(action.option_strings)
        if not flags or action.help == argparse.SUPPRESS or set(flags) & (skip | {"-h", "--help"}):
            continue
        found.append(
            Option(
                flags,
                " ".join((action.help or "").split()),
                action.nargs != 0,
                tuple(str(choice) for choice in action.choices or ()),
                action.dest in PROFILE_DESTS,
            )
        )
    return tuple(found)


def _argument_choices(parser: argparse.ArgumentParser) -> tuple[str, ...]:
    return tuple(str(c) for a in parser._actions if not a.option_strings for c in a.choices or ())
