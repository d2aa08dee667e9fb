"""The benchmark's no-op task for Huey's consumer, on Huey's SQLite storage (``BENCH_HUEY_DB``).

Its durability is set explicitly, since Huey's default has changed between releases: ``BENCH_HUEY_SYNC=full``
(the default) passes ``fsync=True`` (synchronous=FULL); ``normal`` gives the durability tqadmin's file runs
with (WAL, synchronous=NORMAL; Huey's ``fsync=False`` would be synchronous=OFF).
"""

import os

from counting import ran
from huey import SqliteHuey
from huey.storage import SqliteStorage


class NormalSyncStorage(SqliteStorage):
    def _create_connection(self):  # type: ignore[no-untyped-def]
        connection = super()._create_connection()
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection


if os.environ.get("BENCH_HUEY_SYNC", "full") == "normal":
    huey = SqliteHuey(filename=os.environ["BENCH_HUEY_DB"], results=False, storage_class=NormalSyncStorage)
else:
    huey = SqliteHuey(filename=os.environ["BENCH_HUEY_DB"], results=False, fsync=True)


@huey.task()
def noop(n: int) -> None:
    """Nothing but the count of job ``n``: the benchmark measures the queue, not the work."""
    ran(n)
