"""``tqadmin trigger``: ask the cron's leader for one tick of a schedule now, wait for it, audit it.

The command does not publish the job itself: the leader fires it (:mod:`tqadmin.store.triggers.base`), claimed
under its fencing token like every tick, with its own job id. The command writes the request, waits for the
tick to be recorded as fired (``wait_s``; a leader takes requests at each of its steps, a third of its
``--lock-ttl`` apart at the most), and writes one audit record: ``action`` ``trigger``, ``outcome`` ``ok``
(fired: its job id, fencing token and the instance that fired it) or ``pending`` (not fired yet: the request
stands, and the next leader fires it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tqadmin.admin.pausing import operator
from tqadmin.config import Settings
from tqadmin.files import audit
from tqadmin.store.cron.base import CronStore, TickState
from tqadmin.store.triggers.base import TriggerRequest, TriggerRequests

POLL_S = 0.1


@dataclass(frozen=True, slots=True)
class Triggered:
    """What came of a trigger: the request, and the token and instance that fired it (None: not yet)."""

    request: TriggerRequest
    fencing_token: int | None
    instance: str | None

    @property
    def fired(self) -> bool:
        return self.fencing_token is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "action": "trigger",
            "target": self.request.schedule,
            "schedule": self.request.schedule,
            "job_id": self.request.job_id,
            "fired": self.fired,
            "fencing_token": self.fencing_token,
            "instance": self.instance,
            "who": self.request.who,
        }


def trigger(
    settings: Settings,
    cron: CronStore,
    requests: TriggerRequests,
    schedule: str,
    *,
    wait_s: float,
    via: str,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[Triggered, list[str]]:
    """Ask for one tick of ``schedule`` and wait up to ``wait_s`` for the leader to fire it; the outcome and
    the warnings to show."""
    request = requests.request(schedule, operator())
    deadline = time.monotonic() + wait_s
    triggered = Triggered(request, None, None)
    while True:
        record = cron.tick(request.tick_name, request.ident)
        if record is not None and record.state is TickState.FIRED:
            triggered = Triggered(request, record.token, record.instance)
            break
        if time.monotonic() >= deadline:
            break
        sleep(POLL_S)
    extra = {
        "schedule": schedule,
        "job_id": request.job_id,
        "who": request.who,
        "fencing_token": triggered.fencing_token,
        "instance": triggered.instance,
        "via": via,
    }
    try:
        audit.append(
            settings.audit_log,
            profile=settings.profile,
            action="trigger",
            target=schedule,
            count=1,
            outcome="ok" if triggered.fired else "pending",
            extra=extra,
        )
    except OSError as exc:
        return triggered, [f"cannot append to the audit log {settings.audit_log}: {exc.strerror}"]
    return triggered, []
