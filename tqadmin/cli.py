"""The ``tqadmin`` command: global options, dispatch to one module per command, errors to exit codes.

Global options are accepted before or after the command name (``tqadmin --json queues`` and
``tqadmin queues --json``): they are declared on the root parser and again on every sub-parser with
``SUPPRESS`` defaults, so a value given after the command overrides one given before it and an absent one
leaves it alone. A command's module is imported only to run it or to show its ``--help``: ``tqadmin --help``
imports none, ``tqadmin queues --help`` only the queues module, so neither pays for pika or Textual, and a
command whose module cannot be imported breaks that command alone (exit 1, one line), not every other one.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Collection, Sequence
from typing import Protocol, cast

from tqadmin import __version__, config
from tqadmin.commands.arguments import positive
from tqadmin.commands.context import CommandContext
from tqadmin.errors import ExitCode, TqadminError
from tqadmin.plugin.base import PluginOption
from tqadmin.plugin.registry import driver_log_levels, installed_options
from tqadmin.show import logs
from tqadmin.show.masking import mask_text

# name -> (module under tqadmin.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "ui": ("ui", "open the dashboard (the default)"),
    "demo": ("demo", "run the whole pipeline with injected failures and open the dashboard"),
    "queues": ("queues", "queues with depth, rates, oldest-message age and dead-letter queue"),
    "peek": ("peek", "look at messages without consuming them"),
    "dead-letters": ("dead_letters", "why messages died, grouped with counts"),
    "move": ("move", "move messages between queues; each copy confirmed before the original is acked"),
    "replay": (
        "replay",
        "send dead-lettered messages back to their original queue, adding 1 to x-tq-replays",
    ),
    "purge": ("purge", "drop every message of a queue (asks for the queue name)"),
    "export": ("export", "write a queue's messages to a JSONL file without consuming them"),
    "import": ("import_", "publish the messages of a JSONL file to a queue"),
    "delete": ("delete", "delete one message, found by job id"),
    "publish": ("publish", "publish jobs durably with confirms"),
    "worker": ("worker", "run the reference worker"),
    "cron": ("cron", "run the distributed cron"),
    "schedules": ("schedules", "cron schedules with next and last fire and the current leader"),
    "workers": ("workers", "live and dead workers with heartbeat age and current job"),
    "stats": ("stats", "throughput, failure rate and latency percentiles from worker telemetry"),
    "exporter": ("exporter", "serve every profile's queues, workers and task metrics to Prometheus"),
    "completion": ("completion", "print the shell completion script for bash, zsh or fish"),
    "pause": (
        "pause",
        "stop every worker starting a queue's (or one task type's) jobs, or a schedule's ticks, for a while",
    ),
    "resume": ("resume", "end a pause: the workers start the jobs again (or the cron fires the ticks)"),
    "pauses": ("pauses", "the pauses that stand: what, why, who, since, until"),
    "trigger": ("trigger", "fire one tick of a cron schedule now, through the cron's leader"),
    "health": (
        "health",
        "each queue's verdict (stalled, degraded...) and wedged workers; exit 7 if unhealthy",
    ),
}
# Commands that read no settings: a broken config file or profile must not break them (the completion script
# runs at every shell start).
_WITHOUT_SETTINGS = frozenset({"completion"})
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a tool killed by a closed pipe
# Global options followed by a value, which is not a command name even when it reads like one (the broker
# plugins' flags, such as --management-url, come on top).
_VALUED_OPTIONS = frozenset({"--profile", "--broker", "--store", "--config", "--timeout"})


class CommandModule(Protocol):
    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace, ctx: CommandContext) -> int: ...


class SettingsFreeModule(Protocol):
    """A command of :data:`_WITHOUT_SETTINGS`: run before the settings are resolved, without them, and given
    the parser of every command (the completion scripts are written from it)."""

    def run(self, args: argparse.Namespace, whole_parser: Callable[[], argparse.ArgumentParser]) -> int: ...


def _add_global_options(
    parser: argparse.ArgumentParser, plugin_options: Sequence[PluginOption], *, suppress: bool
) -> None:
    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("global options")
    group.add_argument("--profile", default=default(None), help="profile from the config file")
    group.add_argument("--broker", dest="broker_url", default=default(None), metavar="URL", help="broker URL")
    for option in plugin_options:  # --management-url and the like, declared by the broker plugins
        if option.flag:
            group.add_argument(
                option.flag,
                dest=_option_dest(option),
                default=default(None),
                metavar="VALUE",
                help=option.help,
            )
    group.add_argument(
        "--store", dest="store_url", default=default(None), metavar="URL", help="state store URL"
    )
    group.add_argument(
        "--config", dest="config_path", default=default(None), metavar="FILE", help="config file"
    )
    group.add_argument("--read-only", action="store_true", default=default(False), help="refuse every write")
    group.add_argument("--json", action="store_true", default=default(False), help="print one JSON document")
    group.add_argument(
        "--timeout",
        dest="timeout_s",
        type=positive(float),
        default=default(None),
        metavar="S",
        help="seconds for each broker or API call (default 10)",
    )
    group.add_argument(
        "-v", "--verbose", action="store_true", default=default(False), help="tracebacks, debug"
    )
    group.add_argument(
        "--version", action="version", version=f"tqadmin {__version__}", help="print the version and exit"
    )


def _option_dest(option: PluginOption) -> str:
    return f"broker_option_{option.name}"


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors, which is our usage exit code too; keep its message to one line."""


def build_parser(configure: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; only those named in ``configure`` (all when ``None``) get their own
    options, which imports their modules."""
    plugin_options = installed_options()  # once: it reads every installed distribution's entry points
    parser = _Parser(prog="tqadmin", description="The terminal for task queues on fire.")
    _add_global_options(parser, plugin_options, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (module_name, help_text) in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        if configure is None or name in configure:
            _load(module_name).configure(command_parser)
        _add_global_options(command_parser, plugin_options, suppress=True)
    return parser


def whole_parser() -> argparse.ArgumentParser:
    """The parser of every command with its options, but a command whose module cannot be imported: that
    one without them (running it says what is wrong)."""
    importable = set()
    for name, (module_name, _help) in COMMANDS.items():
        try:
            _load(module_name)
        except Exception:  # noqa: S112 - the command's own run reports it
            continue
        importable.add(name)
    return build_parser(importable)


def command_in(argv: Sequence[str], plugin_options: Sequence[PluginOption] = ()) -> str | None:
    """The command ``argv`` names (the first word that is not an option or an option's value), if any."""
    valued = _VALUED_OPTIONS | {o.flag for o in plugin_options if o.flag}
    words = iter(argv)
    for word in words:
        if word in valued:
            next(words, None)
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def _load(module_name: str) -> CommandModule:
    return cast(CommandModule, importlib.import_module(f"tqadmin.commands.{module_name}"))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    command = command_in(words, installed_options())
    try:
        args = build_parser({command} if command else ()).parse_args(words)
        if args.command is None:
            args = build_parser({"ui"}).parse_args([*words, "ui"])
    except Exception as exc:  # a command module that cannot be imported: a bug in that command alone
        print(logs.internal_error_line(exc), file=sys.stderr)
        return int(ExitCode.INTERNAL)
    verbose = bool(args.verbose)
    logs.setup(verbose, driver_log_levels(verbose))
    try:
        if args.command in _WITHOUT_SETTINGS:
            module = importlib.import_module(f"tqadmin.commands.{COMMANDS[args.command][0]}")
            return cast(SettingsFreeModule, module).run(args, whole_parser)
        settings = config.resolve(
            config.Overrides(
                profile=args.profile,
                broker_url=args.broker_url,
                broker_options={
                    o.name: value
                    for o in installed_options()
                    if (value := getattr(args, _option_dest(o), None))
                },
                store_url=args.store_url,
                config_path=args.config_path,
                read_only=args.read_only,
                timeout_s=args.timeout_s,
                verbose=verbose,
            )
        )
        ctx = CommandContext(settings=settings, json_output=bool(args.json))
        module_name = COMMANDS[args.command][0]
        return _load(module_name).run(args, ctx)
    except TqadminError as exc:
        if verbose:
            logs.print_traceback(exc)
        print(f"tqadmin: {mask_text(str(exc))}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("tqadmin: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of stdout went away (`tqadmin peek q --json | head`): stop quietly, like other tools.
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        if verbose:
            logs.print_traceback(exc)
        print(logs.internal_error_line(exc), file=sys.stderr)
        return int(ExitCode.INTERNAL)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail a second time."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
