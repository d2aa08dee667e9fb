"""The state store: a folder per contract (completion and heartbeats, history, pauses, the cron's lease,
trigger requests), each with its Redis and SQLite implementations.

``open_store(url)`` and the other openers of :mod:`tqadmin.store.factory` pick the implementation by scheme;
drivers are imported only then.
"""

from tqadmin.store.factory import open_store

__all__ = ["open_store"]
