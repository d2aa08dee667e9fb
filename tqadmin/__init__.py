"""tqadmin: inspect, operate and drive task queues from one terminal.

This package never imports the TUI; ``from tqadmin import task, TransientError, FatalError`` is all a
task module needs.
"""

__version__ = "0.1.0"
