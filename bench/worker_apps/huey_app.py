"""The benchmark's no-op task for Huey's consumer, on Huey's SQLite storage (``BENCH_HUEY_DB``).

``fsync`` is set explicitly, as ``BENCH_HUEY_FSYNC`` says (``1``: synchronous=FULL; ``0``: NORMAL, what
tqadmin's file runs with), since its default has changed between Huey releases.
"""

import os

from counting import ran
from huey import SqliteHuey

FSYNC = os.environ.get("BENCH_HUEY_FSYNC", "1") == "1"
huey = SqliteHuey(filename=os.environ["BENCH_HUEY_DB"], results=False, fsync=FSYNC)


@huey.task()
def noop(n: int) -> None:
    """Nothing but the count of job ``n``: the benchmark measures the queue, not the work."""
    ran(n)
