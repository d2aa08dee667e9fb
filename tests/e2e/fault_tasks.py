"""The e2e tasks (``e2e_tasks.py``) with a fault injected into a broker plugin's own machinery, in the way a
bug of the plugin would strike: ``E2E_FAULT`` names where, and the first ``E2E_FAULT_TIMES`` worker
processes (counted in the file ``E2E_FAULT_MARKER``) raise there once each; the processes after them heal.

- ``sqs-settler``: the SQS settler thread, as it sends a batch of deletes (the acks of jobs that ran);
- ``redis-settler``: the Redis settler thread, as it sends a batch of acks;
- ``sqlite-loop``: the SQLite consumer's I/O loop, as it applies acks.

The patch is made when ``tqadmin worker`` imports this module, before it forks, so every worker process
its supervisor starts has it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import e2e_tasks  # noqa: F401 - registers the tasks

MESSAGE = "injected fault near amqp://bob:hunter2@broker.example/"  # the password must come out masked


def _faulty(original: Callable[..., Any], busy: Callable[..., bool]) -> Callable[..., Any]:
    marker = Path(os.environ["E2E_FAULT_MARKER"])
    times = int(os.environ.get("E2E_FAULT_TIMES", "1"))

    def call(*args: Any, **kwargs: Any) -> Any:
        if busy(*args, **kwargs):
            faults = marker.read_text().split() if marker.exists() else []
            if len(faults) < times and str(os.getpid()) not in faults:
                with marker.open("a") as out:
                    out.write(f"{os.getpid()}\n")
                raise RuntimeError(MESSAGE)
        return original(*args, **kwargs)

    return call


def _inject(where: str) -> None:
    if where == "sqs-settler":
        from tqadmin_sqs.consuming import SqsConsumer

        SqsConsumer.settle = _faulty(SqsConsumer.settle, lambda _self, acks, _releases: bool(acks))  # type: ignore[method-assign]
    elif where == "redis-settler":
        from tqadmin_redis.connection import Connection

        Connection.run = _faulty(Connection.run, lambda _self, calls: bool(calls))  # type: ignore[method-assign]
    elif where == "sqlite-loop":
        from tqadmin_sqlite import rows

        rows.delete = _faulty(rows.delete, lambda _tx, tokens: bool(tokens))


if os.environ.get("E2E_FAULT"):
    _inject(os.environ["E2E_FAULT"])
