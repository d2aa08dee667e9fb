"""tqadmin: inspect, operate and drive task queues from one terminal.

This package never imports the TUI or a driver; ``from tqadmin import task, TransientError, FatalError`` is
all a task module needs, and costs only the standard library.
"""

from tqadmin.pipeline.tasks import FatalError, TransientError, task

__version__ = "0.1.0"
__all__ = ["FatalError", "TransientError", "__version__", "task"]
