"""The exporter serves each standing pause: ``tqadmin_paused{profile,queue,task_type}`` (``(all)`` for a whole
queue), when it was set and when it runs out (absent for a pause until resumed)."""

from __future__ import annotations

from test_series import scrape

from tqadmin.exporter.polling import Served
from tqadmin.store.pauses.base import Pause, Target
from tqadmin.telemetry import metric_names as names


def test_pauses_are_served_with_bounded_labels() -> None:
    pauses = (
        Pause(Target("orders", "charge"), "psp down", "alice@h", 1000.0, 1600.0),
        Pause(Target("mail"), "smtp", "bob@h", 1100.0, None),
        Pause(Target(schedule="nightly"), "", "carol@h", 1200.0, None),  # a schedule's: not a queue series
    )
    served = scrape([Served("prod", queues=(), pauses=pauses)])
    by_name = {(n, tuple(sorted(labels.items()))): v for n, labels, v in served if n.startswith(names.PAUSED)}
    charge = (("profile", "prod"), ("queue", "orders"), ("task_type", "charge"))
    mail = (("profile", "prod"), ("queue", "mail"), ("task_type", names.WHOLE_QUEUE))
    assert by_name == {
        (names.PAUSED, charge): 1,
        (names.PAUSED, mail): 1,
        (names.PAUSED_SINCE, charge): 1000.0,
        (names.PAUSED_SINCE, mail): 1100.0,
        (names.PAUSED_UNTIL, charge): 1600.0,
    }
