"""Where log lines and tracebacks go, set up once for every command: stderr, through the masking formatter.

Installing one handler on the root logger at start (rather than one per command) is what makes "every log
line passes through masking" hold for loggers nobody thought of, a driver's included. Tracebacks that are
printed rather than logged (``-v``, a crash in a worker process) go through :func:`print_traceback`, and so do
those Python prints by itself: a thread that dies (``threading.excepthook``: a settler, an HTTP handler) and
an exception nothing caught (``sys.excepthook``); :func:`setup` installs both hooks.
"""

from __future__ import annotations

import logging
import sys
import threading
import traceback
from collections.abc import Mapping
from types import TracebackType
from typing import TextIO

from tqadmin.show.masking import MaskingFormatter, mask_text

FORMAT = "%(asctime)s %(process)d %(levelname)s %(message)s"


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a line is logged: the dashboard swaps it while it runs, and
    a line written past it to the terminal would scribble over the screen."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        """StreamHandler's constructor sets it; there is nothing to keep."""


def setup(verbose: bool, driver_levels: Mapping[str, int] | None = None) -> None:
    """Log to stderr, masked: INFO and up with ``-v``, warnings and errors otherwise; ``driver_levels`` are
    the levels the broker plugins ask for their drivers' loggers (``BrokerPlugin.driver_loggers``: pika's
    every failed attempt is not the one line that counts)."""
    handler = _CurrentStderr()
    handler.setFormatter(MaskingFormatter(FORMAT))
    root = logging.getLogger()
    # Replace only our own (main() may run twice in one process, as in tests); leave others' handlers be.
    root.handlers[:] = [h for h in root.handlers if not isinstance(h, _CurrentStderr)] + [handler]
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    for name, level in (driver_levels or {}).items():
        logging.getLogger(name).setLevel(level)
    sys.excepthook = _uncaught
    threading.excepthook = _thread_died


def _uncaught(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    """What Python prints of an exception nothing caught, masked."""
    print_traceback(exc.with_traceback(tb))


def _thread_died(args: threading.ExceptHookArgs) -> None:
    """What Python prints when a thread dies of an exception, masked (a thread ending by SystemExit says
    nothing, as Python's own hook)."""
    if args.exc_type is SystemExit or args.exc_value is None:
        return
    name = args.thread.name if args.thread is not None else "?"
    print(f"Exception in thread {name}:", file=sys.stderr, flush=True)
    print_traceback(args.exc_value.with_traceback(args.exc_traceback))


def masked_traceback(exc: BaseException) -> str:
    """The traceback of ``exc``, its causes too, with secrets masked (and no frame's locals)."""
    return mask_text("".join(traceback.format_exception(exc)))


def print_traceback(exc: BaseException) -> None:
    print(masked_traceback(exc), end="", file=sys.stderr, flush=True)


def internal_error_line(exc: BaseException) -> str:
    """The one line a bug gets: what it is, masked, and how to see more."""
    detail = mask_text(f"{type(exc).__name__}: {exc}")
    return f"tqadmin: internal error (a bug, please report it): {detail}; rerun with -v"
