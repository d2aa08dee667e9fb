"""The state store: its contract (idempotency, heartbeats, telemetry history) and implementations.

``open_store(url)`` picks the implementation by scheme; drivers are imported only then.
"""

from tqadmin.store.factory import open_store

__all__ = ["open_store"]
