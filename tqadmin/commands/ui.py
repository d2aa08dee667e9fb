"""`tqadmin` / `tqadmin ui`: open the dashboard on the configured broker."""

from __future__ import annotations

import argparse

from tqadmin.commands.context import CommandContext


def _refresh(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value < 0.2:
        raise argparse.ArgumentTypeError("must be at least 0.2 seconds")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--refresh", type=_refresh, default=2.0, metavar="S", help="seconds between polls (default 2)"
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from tqadmin.tui.app import TqadminApp

    app = TqadminApp(settings=ctx.settings, refresh_s=float(getattr(args, "refresh", 2.0)))
    app.run()
    return app.return_code or 0  # 1 after a crash
