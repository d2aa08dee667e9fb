"""argparse types and options shared by commands, so every command words the same mistake the same way."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

N = TypeVar("N", int, float)


def positive(convert: Callable[[str], N]) -> Callable[[str], N]:
    """An argparse ``type`` for a number greater than 0 (``positive(int)``, ``positive(float)``)."""

    def parse(text: str) -> N:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a valid number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError("must be greater than 0")
        return value

    return parse


def fraction(text: str) -> float:
    """An argparse ``type`` for a fraction from 0 to 1 (a failure rate, a share)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError("must be a fraction from 0 to 1 (0.1 is 10%)")
    return value


def add_force(parser: argparse.ArgumentParser, file_option: str) -> None:
    """``--force``: replace an existing ``file_option`` (by a new 0600 file, never through a symbolic link:
    :mod:`tqadmin.files.private_file`)."""
    parser.add_argument(
        "--force",
        action="store_true",
        help=f"replace {file_option} if it exists (a new 0600 file; a symbolic link is refused even so)",
    )
