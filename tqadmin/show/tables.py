"""Plain text for a terminal: aligned tables whose cells, broker strings among them, cannot drive it.

Below every face that prints (the commands, the demo's summary), so each renders a table the same way; a cell
is shown through the one rule for broker strings (:func:`tqadmin.show.broker_text.escaped`).
"""

from __future__ import annotations

from collections.abc import Sequence

from tqadmin.show.broker_text import escaped


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain aligned text table; numbers right-aligned, ``None`` as "-", control characters escaped."""
    cells = [[("-" if c is None else escaped(str(c))) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    numeric = [all(_is_number(r[i]) for r in rows) and bool(rows) for i in range(len(headers))]

    def fmt(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric, strict=True)
        )

    return "\n".join([fmt(list(headers)), *(fmt(r) for r in cells)]).rstrip()


def _is_number(value: object) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def human_duration(seconds: float | None) -> str:
    """``None`` as '-', otherwise the two largest units (``3m05s``, ``2h10m``, ``4d3h``)."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600}h"
