"""tqadmin: inspect, operate and drive task queues from one terminal.

``from tqadmin import task, TransientError, FatalError`` is all a task module needs (docs/interface.md).
Those names live in :mod:`tqadmin.pipeline.tasks` and load on first use (PEP 562): every module of tqadmin,
and every broker plugin, starts by importing this package, and none of them should pay for the pipeline and
the state store it uses (or, through them, sit above them: the floors of tests/unit/test_layering.py). This
package never imports the TUI or a driver.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy names are, for the type checker; at run time __getattr__ loads them
    from tqadmin.pipeline.tasks import FatalError, TransientError, task

__version__ = "0.1.0"
__all__ = ["FatalError", "TransientError", "__version__", "task"]

LAZY_EXPORTS = {name: "tqadmin.pipeline.tasks" for name in ("FatalError", "TransientError", "task")}
"""Public name -> the module it comes from, imported when the name is first asked for."""


def __getattr__(name: str) -> Any:
    module = LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # asked once: later lookups find it without this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(LAZY_EXPORTS))
