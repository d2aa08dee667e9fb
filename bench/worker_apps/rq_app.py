"""The benchmark's no-op job for RQ, and its worker: a SimpleWorker (no fork per job) in burst mode."""

import sys

from counting import ran


def noop(n: int) -> None:
    """Nothing but the count of job ``n``."""
    ran(n)


if __name__ == "__main__":
    from redis import Redis
    from rq import Queue, SimpleWorker

    connection = Redis.from_url(sys.argv[2])
    SimpleWorker([Queue(sys.argv[1], connection=connection)], connection=connection).work(
        burst=True, logging_level="WARNING"
    )
