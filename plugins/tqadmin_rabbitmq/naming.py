"""Names tqadmin gives the queues it declares on RabbitMQ; driver-free, so the listing can read them."""

from __future__ import annotations

RETRY_INFIX = ".retry."


def tier_queue(queue: str, delay_s: float) -> str:
    """``Q.retry.5s`` or ``Q.retry.1500ms``: the delay queue of one tier."""
    ms = round(delay_s * 1000)
    label = f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"
    return f"{queue}{RETRY_INFIX}{label}"


def is_delay_queue_of(name: str, queue: str) -> bool:
    """Whether ``name`` is one of ``queue``'s retry tiers, whose expired messages go back to ``queue``."""
    return name.startswith(queue + RETRY_INFIX)
