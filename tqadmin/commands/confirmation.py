"""Asking before an action that cannot be undone: the operator types the queue's name (or passes --yes)."""

from __future__ import annotations

import sys

from tqadmin.errors import ConfirmationRefused


def confirm_by_name(queue: str, action: str, warning: str) -> None:
    """Say ``warning`` and ask for the queue's name on a terminal; anything else refuses (exit 2), and so
    does a run without a terminal."""
    if not sys.stdin.isatty():
        raise ConfirmationRefused(
            f"{action} of {queue!r} needs confirmation: run it on a terminal or pass --yes"
        )
    print(f"{warning}. Type the queue name to confirm: ", end="", file=sys.stderr)
    answer = sys.stdin.readline().rstrip("\r\n")  # exact: queue names may begin or end with a space
    if answer != queue:
        raise ConfirmationRefused(
            f"{action} of {queue!r} refused: the name typed did not match; nothing was sent"
        )
