"""The benchmark's no-op task for `tqadmin worker`: it counts its run (``counting``) and does nothing else.

``BENCH_FAIL=1`` makes it fail fatally instead (every job dead-lettered): how the bench's checks are seen
to fail a run.
"""

import os
from typing import Any

from counting import ran

from tqadmin import FatalError, task

FAIL = os.environ.get("BENCH_FAIL") == "1"


@task("noop")
def noop(ctx: Any, job: dict[str, Any]) -> None:
    """Nothing but the count: the benchmark measures the worker, not the work."""
    if FAIL:
        raise FatalError("BENCH_FAIL=1: the bench checks a failing run")
    ran(job["id"])
