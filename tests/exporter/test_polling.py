"""One profile's poller: it reads each part once a poll, keeps the last values of a part that fails, says
so once per outage and once on recovery, and outlives any answer."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tqadmin.config import Overrides, resolve
from tqadmin.errors import NotAuthorized, Unreachable
from tqadmin.exporter.polling import ProfilePoller
from tqadmin.files.access import Access
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import QueueListing, QueueStats
from tqadmin.store import open_store
from tqadmin.store.factory import open_history
from tqadmin.store.history.base import TIERS
from tqadmin.telemetry.progress import BusyThread, Progress
from tqadmin.telemetry.snapshot import WorkerSnapshot

ORDERS = QueueStats(name="orders", messages=4, ready=3, unacked=1, consumers=2)


class ScriptedAdmin:
    """A broker admin that answers the listing with each of ``answers`` in turn (an exception is raised)."""

    capabilities = Capabilities(frozenset())

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.connections = 0

    def list_queues(self) -> QueueListing:
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return QueueListing(answer)

    def close(self) -> None:
        pass


def poller_for(admin: ScriptedAdmin) -> ProfilePoller:
    def connect() -> ScriptedAdmin:
        admin.connections += 1
        return admin

    return ProfilePoller(resolve(Overrides()), 5.0, connect_admin=connect)  # type: ignore[arg-type]


def test_on_a_fresh_machine_the_profile_is_up_with_nothing_to_show_and_no_file_is_created(
    isolated_env: Path,
) -> None:
    poller = ProfilePoller(resolve(Overrides()), 5.0)
    assert poller.poll()
    reading = poller.reading()
    assert reading.up and reading.queues == () and reading.tasks == {} and reading.cron is None
    assert not (isolated_env / ".local" / "state" / "tqadmin").exists()
    poller.close()


def test_a_broker_that_fails_keeps_its_last_values_marked_stale_and_is_said_once_then_recovered(
    isolated_env: Path, caplog: pytest.LogCaptureFixture
) -> None:
    denied = NotAuthorized("the management API refused guest:*** (401)")
    admin = ScriptedAdmin((ORDERS,), Unreachable("broker down"), RuntimeError("garbage"), denied, (ORDERS,))
    poller = poller_for(admin)
    caplog.set_level(logging.WARNING, "tqadmin.exporter")
    assert poller.poll()
    outcomes = [poller.poll() for _ in range(4)]
    assert outcomes == [False, False, False, True]
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2, said
    assert "broker: broker down" in said[0] and "stale" in said[0]
    assert "read again after 3 failed polls" in said[1]
    assert admin.connections == 4, "a failed connection is dropped and opened again at the next poll"
    assert poller.reading().errors == 3 and poller.reading().up


def test_while_down_the_reading_serves_the_last_queues_with_up_0(isolated_env: Path) -> None:
    poller = poller_for(ScriptedAdmin((ORDERS,), Unreachable("broker down")))
    poller.poll()
    poller.poll()
    reading = poller.reading()
    assert not reading.up and reading.queues == (ORDERS,) and reading.errors == 1


def test_each_poll_goes_to_the_profiles_history_so_the_dashboard_can_chart_it(isolated_env: Path) -> None:
    settings = resolve(Overrides())
    open_store(settings.store_url).close()  # a worker ran: the embedded file exists
    poller = poller_for(ScriptedAdmin((ORDERS,)))
    poller.poll()
    poller.close()
    history = open_history(settings.store_url, access=Access.READ)
    [(_, figures)] = history.queue_history("default", "orders", TIERS[0])
    history.close()
    assert figures["messages"] == 4


def test_a_read_only_profile_writes_no_history(isolated_env: Path) -> None:
    settings = resolve(Overrides(read_only=True))
    open_store(settings.store_url).close()
    poller = ProfilePoller(settings, 5.0, connect_admin=lambda: ScriptedAdmin((ORDERS,)))  # type: ignore[arg-type,return-value]
    poller.poll()
    poller.close()
    history = open_history(settings.store_url, access=Access.READ)
    assert history.queue_history("default", "orders", TIERS[0]) == []
    history.close()


def test_successive_polls_give_each_queue_a_drain_estimate(isolated_env: Path) -> None:
    now = [1000.0]
    falling = [dataclasses.replace(ORDERS, messages=depth) for depth in (40, 30, 20)]
    admin = ScriptedAdmin(*((queue,) for queue in falling))
    settings = resolve(Overrides())
    poller = ProfilePoller(settings, 5.0, connect_admin=lambda: admin, clock=lambda: now[0])  # type: ignore[arg-type,return-value]
    drains = []
    for _ in falling:
        poller.poll()
        now[0] += 10
        (orders,) = poller.reading().queues or ()
        drains.append((orders.drain_s, orders.growing))
    poller.close()
    assert drains[0] == (None, None)  # one reading, and no rates to go by
    assert drains[-1] == (20.0, False)  # 1 a second, 20 left


def test_a_live_worker_stuck_past_its_limits_is_counted_wedged(isolated_env: Path) -> None:
    """Its heartbeat is fresh; its one job thread has been busy for an hour on a task type never finished."""
    settings = resolve(Overrides())
    store = open_store(settings.store_url)
    now = time.time()
    stuck = Progress(1, (BusyThread("j1", "resize", now - 3600),), now, None)
    moving = Progress(1, (), now, now)
    for name, progress in (("stuck", stuck), ("moving", moving)):
        store.beat(WorkerSnapshot(name, "h", 1, ("orders",), now - 7200, now, progress=progress), 60)
    store.close()
    poller = poller_for(ScriptedAdmin((ORDERS,)))
    poller.poll()
    poller.close()
    assert poller.reading().wedged == Counter(tqadmin=1)
