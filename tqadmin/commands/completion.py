"""`tqadmin completion bash|zsh|fish`: print the shell's completion script (commands, options, profiles).

Runs without resolving the settings (``tqadmin.cli``): a shell sources the script at every start, and a config
file with an error in it must not break that. ``--profiles`` (hidden) prints the config file's profile names,
one a line, for the scripts to offer; it prints nothing, and exits 0, when the file cannot be read.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from tqadmin.config import DEFAULT_CONFIG_PATH, load_config_file, profile_names
from tqadmin.errors import ConfigError, UsageError

SHELLS = ("bash", "zsh", "fish")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", nargs="?", choices=SHELLS, help="the shell whose script to print")
    parser.add_argument("--profiles", action="store_true", help=argparse.SUPPRESS)


def run(args: argparse.Namespace, whole_parser: Callable[[], argparse.ArgumentParser]) -> int:
    if args.profiles:
        for name in _profiles(args.config_path):
            print(name)
        return 0
    if args.shell is None:
        raise UsageError(f"name the shell: tqadmin completion {'|'.join(SHELLS)}")
    from tqadmin.commands.completion_model import read_cli
    from tqadmin.commands.completion_scripts import render

    sys.stdout.write(render(args.shell, read_cli(whole_parser())))
    return 0


def _profiles(config_path: str | None) -> list[str]:
    path = Path(config_path or os.environ.get("TQADMIN_CONFIG") or DEFAULT_CONFIG_PATH).expanduser()
    try:
        return profile_names(load_config_file(path))
    except ConfigError:
        return []
