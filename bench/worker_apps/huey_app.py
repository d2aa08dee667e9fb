"""The benchmark's no-op task for Huey's consumer, on Huey's SQLite storage (``BENCH_HUEY_DB``).

``BENCH_HUEY_SYNC=normal`` gives Huey the durability tqadmin runs with (WAL, synchronous=NORMAL); without
it Huey runs with ``fsync=True`` (synchronous=FULL, a sync at every commit), set explicitly because what
Huey does when it is not set has changed between versions.
"""

import os

from huey import SqliteHuey
from huey.storage import SqliteStorage


class NormalSyncStorage(SqliteStorage):
    def _create_connection(self):  # type: ignore[no-untyped-def]
        connection = super()._create_connection()
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection


storage = NormalSyncStorage if os.environ.get("BENCH_HUEY_SYNC") == "normal" else SqliteStorage
huey = SqliteHuey(filename=os.environ["BENCH_HUEY_DB"], results=False, storage_class=storage, fsync=True)


@huey.task()
def noop() -> None:
    """Nothing: the benchmark measures the queue, not the work."""
