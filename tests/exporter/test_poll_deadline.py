"""Staleness is loud: a broker that hangs mid-poll marks the profile down (``tqadmin_up`` 0) within one
interval and ``--timeout``, while the poll still hangs (no failed poll has ended yet), and up again once it
answers; every SQS call is bounded by ``--timeout``, botocore's retries included."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import REDIS_URL
from tests.support.tcp_proxy import BlackHole, TcpProxy
from tqadmin.config import Overrides, Settings, resolve
from tqadmin.errors import ConnectTimeout
from tqadmin.exporter.polling import ProfilePoller
from tqadmin.exporter.series import health_families
from tqadmin.plugin.base import BrokerConfig
from tqadmin.reading.deadline import PollDeadline
from tqadmin.telemetry import metric_names as names

INTERVAL_S = 1.0
TIMEOUT_S = 2.0
SLACK_S = 3.0  # a loaded machine's delays on top of interval + timeout: the poll itself takes 4 x timeout
DEADLINE_S = 60.0  # for the conditions that only have to come: a deadline, not a speed


def served_up(poller: ProfilePoller) -> float:
    (up, *_rest) = health_families([poller.reading()], time.time())
    assert up.name == names.UP
    return float(up.samples[0].value)


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def polling() -> Iterator[Callable[[Settings], ProfilePoller]]:
    """A poller polling in its thread, as the exporter runs it; stopped and closed after."""
    started: list[tuple[ProfilePoller, threading.Event, threading.Thread]] = []

    def start(settings: Settings) -> ProfilePoller:
        poller, stop = ProfilePoller(settings, INTERVAL_S), threading.Event()
        thread = threading.Thread(target=poller.run, args=(stop,), daemon=True)
        thread.start()
        started.append((poller, stop, thread))
        return poller

    yield start
    for poller, stop, thread in started:
        stop.set()
        thread.join(DEADLINE_S)
        poller.close()


def down_after(poller: ProfilePoller, hang: Callable[[], None]) -> tuple[float, int]:
    """Seconds from ``hang()`` to ``tqadmin_up`` 0, and the polls that had failed by then (that ended)."""
    until(lambda: served_up(poller) == 1, "the profile up")
    failed_polls = poller.reading().errors
    hung_at = time.monotonic()
    hang()
    until(lambda: served_up(poller) == 0, "tqadmin_up 0")
    return time.monotonic() - hung_at, poller.reading().errors - failed_polls


@pytest.mark.redis
def test_a_frozen_redis_marks_the_profile_down_within_interval_and_timeout_and_up_once_it_answers(
    isolated_env: Path, polling: Callable[[Settings], ProfilePoller]
) -> None:
    proxy = TcpProxy(("127.0.0.1", 6379))
    try:
        url = f"redis://127.0.0.1:{proxy.port}/0"
        settings = resolve(Overrides(broker_url=url, store_url=url, timeout_s=TIMEOUT_S, read_only=True))
        poller = polling(settings)
        took, failed = down_after(poller, proxy.freeze)
        assert took <= INTERVAL_S + TIMEOUT_S + SLACK_S, f"{took:.1f} s"
        assert (failed, poller.deadline.overdue() is not None) == (0, True), "down while the poll hangs"
        proxy.thaw()
        until(lambda: served_up(poller) == 1, "the profile up again")
    finally:
        proxy.thaw()
        proxy.close()


@pytest.mark.redis
def test_a_black_holed_sqs_marks_the_profile_down_within_interval_and_timeout(
    sqs_env: str, polling: Callable[[Settings], ProfilePoller], monkeypatch: pytest.MonkeyPatch
) -> None:
    host, port = sqs_env.removeprefix("http://").rsplit(":", 1)
    proxy = TcpProxy((host, int(port)))
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{proxy.port}")
    try:
        poller = polling(resolve(Overrides(store_url=REDIS_URL, timeout_s=TIMEOUT_S, read_only=True)))
        took, _failed = down_after(poller, proxy.freeze)  # every connection now a black hole
        assert took <= INTERVAL_S + TIMEOUT_S + SLACK_S, f"{took:.1f} s"
    finally:
        proxy.thaw()
        proxy.close()


def test_an_sqs_call_into_a_black_hole_ends_within_its_timeout_retries_included(sqs_env: str) -> None:
    from tqadmin_sqs.admin import SqsAdmin

    hole = BlackHole()
    admin = SqsAdmin(BrokerConfig("sqs://us-east-1", timeout_s=TIMEOUT_S, options={"endpoint_url": hole.url}))
    try:
        started = time.monotonic()
        with pytest.raises(ConnectTimeout):
            admin.list_queues()
        took = time.monotonic() - started
        assert took < 2 * TIMEOUT_S + SLACK_S, f"{took:.1f} s"  # was 110 s: 5 attempts of --timeout + 20 s
        assert hole.accepted == 1  # the attempt that timed out was not retried
    finally:
        admin.close()
        hole.close()


def test_a_poll_is_overdue_a_timeout_past_its_expected_end_and_never_before() -> None:
    now = [100.0]
    deadline = PollDeadline(2.0, clock=lambda: now[0])
    assert deadline.overdue() is None  # no poll under way
    deadline.started()
    now[0] += 1.5
    deadline.ended()  # the usual poll takes 1.5 s
    deadline.started()
    now[0] += 3.4
    assert deadline.overdue() is None and deadline.no_answer() is None  # within 1.5 s + the 2 s timeout
    now[0] += 0.2
    assert deadline.overdue() == pytest.approx(3.6)
    assert deadline.no_answer() == "no answer in 4 s (--timeout 2 s)"
    deadline.ended()
    assert deadline.overdue() is None
