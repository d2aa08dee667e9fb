"""Prometheus alerting rules for exactly the conditions the dashboard paints red
(:mod:`tqadmin.alerting.conditions`), over the exporter's metric names, one rule group per profile.

YAML is written by hand (strings JSON-quoted, which YAML reads as they are), so the core needs no YAML
library. Summaries name the queue or task type and the threshold, not the value, which the alert carries.
Every rule waits ``for`` one minute, so a consumer that restarts does not page; the dashboard paints at once.

The exporter sums the queues past ``--max-queues`` into one series (``folded="true"``): summed figures are
no queue's, so no per-queue rule looks at it (each matches ``folded!="true"``), and one more rule pages while
any queue is folded, since the dashboard may paint a folded queue red that no rule can see.

One rule pages on a pause that has stood longer than the profile's ``pause_threshold_s`` (an hour by default):
a pause is meant to stop the bleeding for a while, and one forgotten stops the work for good
(:data:`PAUSE_LONG`, over ``tqadmin_paused_since_timestamp_seconds``).

Two rules watch the exporter's own view of each profile, which the dashboard shows in its banner: the
profile down (``tqadmin_up`` 0: the last poll failed, or the one under way is past its deadline) for
:data:`DOWN_FOR`, and its values older than :data:`POLL_STALE_S` (the poll age, which grows while the broker
hangs or the exporter stops polling).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from tqadmin.alerting import conditions as c
from tqadmin.alerting.figures import exact, exact_percent
from tqadmin.config import Thresholds
from tqadmin.telemetry import metric_names as names

FOR = "1m"
FAILURE_WINDOW = "1m"  # the dashboard's telemetry window (tqadmin.reading.reader.WINDOW_S)
QUEUES_FOLDED = "TqadminQueuesFolded"
PROFILE_DOWN = "TqadminProfileDown"
POLL_STALE = "TqadminPollStale"
PAUSE_LONG = "TqadminPauseLong"
DOWN_FOR = "5m"  # a broker restart or a failover is waited out; an outage pages
POLL_STALE_S = 120  # the values served are that old: a poller that hangs or stopped
VERDICT_FOR = "0s"  # a verdict is judged over the profile's stall_after_s: no second wait on top


def rules_yaml(profiles: Sequence[tuple[str, Thresholds]]) -> str:
    lines = ["groups:"]
    for profile, thresholds in profiles:
        lines += [f"  - name: {json.dumps(f'tqadmin-{profile}')}", "    rules:"]
        rules = [
            (*rule, FOR) for rule in profile_rules(profile, thresholds) + pause_rules(profile, thresholds)
        ]
        rules += verdict_rules(profile) + health_rules(profile)
        for alert, expr, summary, wait in rules:
            lines += [
                f"      - alert: {alert}",
                f"        expr: {json.dumps(expr)}",
                f"        for: {wait}",
                "        labels:",
                "          severity: warning",
                "        annotations:",
                f"          summary: {json.dumps(summary)}",
            ]
    return "\n".join(lines) + "\n"


def profile_rules(profile: str, thresholds: Thresholds) -> list[tuple[str, str, str]]:
    """(alert, expression, summary) of each condition that applies to the profile."""
    p = f"profile={json.dumps(profile)}"
    queue = f'{p},{names.FOLDED}!="true"'  # a queue's own series, never the fold of the queues past the cap
    on = "on(profile, queue)"
    found: list[tuple[str, str, str]] = []
    over: tuple[tuple[str, str, float | None, str], ...] = (
        (c.DEPTH, names.QUEUE_MESSAGES, thresholds.depth, "depth at or over {}"),
        (c.OLDEST, names.QUEUE_OLDEST_AGE, thresholds.oldest_age_s, "oldest message at least {} s old"),
        (c.DEAD_LETTERS, names.QUEUE_DEAD_LETTERS, thresholds.dlq_messages, "{} or more dead-lettered"),
    )
    over += (
        (
            c.DLQ_AGE,
            names.QUEUE_DLQ_OLDEST_AGE,
            thresholds.dlq_oldest_age_s,
            "oldest dead letter at least {} s old",
        ),
    )
    for alert, metric, limit, summary in over:
        if limit is not None:
            found.append(
                (
                    alert,
                    f"{metric}{{{queue}}} >= {exact(limit)}",
                    "{{ $labels.queue }}: " + summary.format(exact(limit)),
                )
            )
    if thresholds.failure_rate is not None:
        failures = f"sum by (profile, task_type) (increase({names.TASK_FAILURES}{{{p}}}[{FAILURE_WINDOW}]))"
        runs = f"sum by (profile, task_type) (increase({names.TASK_RUNS}{{{p}}}[{FAILURE_WINDOW}]))"
        found.append(
            (
                c.FAILURE_RATE,
                f"({failures} / {runs}) >= {exact(thresholds.failure_rate)}",
                f"{{{{ $labels.task_type }}}}: {exact_percent(thresholds.failure_rate)} % or more of its runs"
                " failed",
            )
        )
    found.append(
        (
            c.NO_CONSUMER,
            f"({names.QUEUE_READY}{{{queue}}} > 0 and {on} {names.QUEUE_CONSUMERS}{{{queue}}} == 0)"
            f" unless {on} {names.QUEUE_IS_DEAD_LETTER_QUEUE}{{{queue}}}",
            "{{ $labels.queue }}: messages ready and no consumer",
        )
    )
    found.append(
        (
            c.WORKERS_DEAD,
            f'{names.QUEUE_WORKERS}{{{queue},state="live"}} == 0'
            f' and {on} {names.QUEUE_WORKERS}{{{queue},state="dead"}} > 0',
            "{{ $labels.queue }}: every worker of the queue is dead",
        )
    )
    found.append(
        (
            QUEUES_FOLDED,
            f"{names.QUEUES_FOLDED}{{{p}}} > 0",
            "{{ $labels.profile }}: queues past --max-queues are summed into one series that no queue alert"
            " watches: raise --max-queues",
        )
    )
    return found


def verdict_rules(profile: str) -> list[tuple[str, str, str, str]]:
    """(alert, expression, summary, for) of the verdicts the read service gives, as the dashboard paints
    them: a queue stalled or degraded over the profile's ``stall_after_s``, a live worker wedged. They wait
    :data:`VERDICT_FOR`: the verdict's own window already waited (docs/health.md)."""
    p = f"profile={json.dumps(profile)}"
    queue = f'{p},{names.FOLDED}!="true"'
    return [
        (
            c.STALLED,
            f'{names.QUEUE_VERDICT}{{{queue},verdict="stalled"}} == 1',
            "{{ $labels.queue }}: stalled: work waited through the window, consumers on, nothing completed"
            " (tqadmin health says why)",
            VERDICT_FOR,
        ),
        (
            c.DEGRADED,
            f'{names.QUEUE_VERDICT}{{{queue},verdict="degraded"}} == 1',
            "{{ $labels.queue }}: degraded: the backlog grows or drains too slowly (tqadmin health says why)",
            VERDICT_FOR,
        ),
        (
            c.WEDGED,
            f"{names.WORKERS_WEDGED}{{{p}}} > 0",
            "{{ $labels.profile }}: {{ $labels.framework }} workers alive and wedged (tqadmin workers says"
            " which and why)",
            VERDICT_FOR,
        ),
    ]


def pause_rules(profile: str, thresholds: Thresholds) -> list[tuple[str, str, str]]:
    """(alert, expression, summary) of the rule on pauses that stood too long (none without a threshold)."""
    if thresholds.pause_s is None:
        return []
    p = f"profile={json.dumps(profile)}"
    limit = exact(thresholds.pause_s)
    return [
        (
            PAUSE_LONG,
            f"time() - {names.PAUSED_SINCE}{{{p}}} > {limit}",
            "{{ $labels.queue }} ({{ $labels.task_type }}): paused for over " + limit + " s; resume it"
            " (tqadmin resume) or say why it stands",
        )
    ]


def health_rules(profile: str) -> list[tuple[str, str, str, str]]:
    """(alert, expression, summary, for) of the rules on the exporter's view of the profile itself."""
    p = f"profile={json.dumps(profile)}"
    return [
        (
            PROFILE_DOWN,
            f"{names.UP}{{{p}}} == 0",
            "{{ $labels.profile }}: not read for 5 minutes (the broker or the store fails or hangs): every"
            " other alert of the profile is blind",
            DOWN_FOR,
        ),
        (
            POLL_STALE,
            f"{names.POLL_AGE}{{{p}}} > {POLL_STALE_S}",
            f"{{{{ $labels.profile }}}}: the values served are over {POLL_STALE_S} s old",
            FOR,
        ),
    ]
