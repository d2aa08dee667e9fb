"""The benchmark's no-op task for `tqadmin worker`."""

from typing import Any

from tqadmin import task


@task("noop")
def noop(ctx: Any, job: dict[str, Any]) -> None:
    """Nothing: the benchmark measures the worker, not the work."""
