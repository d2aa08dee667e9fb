"""Thresholds written as they were configured, in the alert rules and in the dashboard's phrases alike.

``:g`` keeps six significant digits, so a depth threshold of 1234567 became ``1.23457e+06`` and the rule
fired at 1234570; a threshold is written exactly instead: an integer as an integer, any other number with the
shortest digits that read back as the same float (``repr``), which PromQL parses to that float again.
"""

from __future__ import annotations

from decimal import Decimal


def exact(value: float) -> str:
    """``1234567``, ``300``, ``0.001``, ``2.5``: never rounded (the value is finite: the config refuses
    others)."""
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


def exact_percent(fraction: float) -> str:
    """A fraction as a percentage without float error or rounding: 0.05 is ``5``, 0.055 ``5.5``, 0.07 ``7``
    (where ``0.07 * 100`` is 7.000000000000001)."""
    return format(Decimal(exact(fraction)).scaleb(2).normalize(), "f")
