"""The Prometheus names tqadmin serves, written once: the exporter, the worker's ``--metrics-port``, the
alert rules and the Grafana dashboard all read them from here, so a rename cannot leave one of them behind.

Labels are bounded by design (``profile``, ``queue``, ``task_type``, ``reason``, ``framework``, ``state``, and
``folded`` on the one series a profile's queues past ``--max-queues`` are summed into):
never a worker id, host or pod, whose values churn with every restart and turn one queue into thousands of
series. Latency histograms use :data:`LE_EDGES`: each edge is the upper boundary of one of the telemetry's
log buckets (:mod:`tqadmin.telemetry.histogram`), so a ``_bucket`` count is exact, not an estimate split
across a bucket that straddles the edge.
"""

from __future__ import annotations

from tqadmin.telemetry.histogram import GAMMA, bucket_of

PREFIX = "tqadmin_"

# -- the exporter's own health, per profile --------------------------------------------------------------
UP = "tqadmin_up"  # 1 when the last poll of the profile's broker succeeded, 0 while served stale
POLL_AGE = "tqadmin_poll_age_seconds"  # how old the values served are
POLL_DURATION = "tqadmin_poll_duration_seconds"  # how long the last poll took
POLL_ERRORS = "tqadmin_poll_errors_total"  # polls that failed since the exporter started
QUEUES_FOLDED = "tqadmin_queues_folded"  # queues past --max-queues, summed into the fold series
TASK_TYPES_FOLDED = "tqadmin_task_types_folded"  # task types past a cap, summed into task_type="(other)"

# -- per queue, from the broker's plugin (labels: profile, queue) -----------------------------------------
QUEUE_MESSAGES = "tqadmin_queue_messages"  # depth: ready + in flight
QUEUE_READY = "tqadmin_queue_ready"
QUEUE_IN_FLIGHT = "tqadmin_queue_in_flight"
QUEUE_DELAYED = "tqadmin_queue_delayed"  # waiting out a retry delay
QUEUE_OLDEST_AGE = "tqadmin_queue_oldest_age_seconds"  # of what can be taken now; absent where unknown
QUEUE_PUBLISH_RATE = "tqadmin_queue_publish_rate"  # messages a second
QUEUE_DELIVER_RATE = "tqadmin_queue_deliver_rate"
QUEUE_ACK_RATE = "tqadmin_queue_ack_rate"
QUEUE_CONSUMERS = "tqadmin_queue_consumers"
QUEUE_DEAD_LETTERS = "tqadmin_queue_dead_letters"  # the depth of the queue's dead-letter queue
QUEUE_DLQ_OLDEST_AGE = "tqadmin_queue_dlq_oldest_age_seconds"  # the oldest dead letter's age
QUEUE_DRAIN = "tqadmin_queue_drain_seconds"  # time to empty at the present pace; absent when no estimate
QUEUE_GROWING = "tqadmin_queue_growing"  # 1 when the depth rose throughout the drain window, else 0
QUEUE_VERDICT = "tqadmin_queue_verdict"  # 1 for the queue's verdict (label verdict), 0 for the six others
QUEUE_IS_DEAD_LETTER_QUEUE = "tqadmin_queue_is_dead_letter_queue"  # 1 for a queue another names as its DLQ
QUEUE_WORKERS = "tqadmin_queue_workers"  # workers listing the queue, by state (live, dead)

# -- per task type, from the workers' telemetry (labels: profile, task_type; reason on dead letters) -----
TASK_RUNS = "tqadmin_task_runs_total"  # runs that ended, done or failed
TASK_FAILURES = "tqadmin_task_failures_total"  # runs that failed (retried or dead-lettered after)
TASK_RETRIES = "tqadmin_task_retries_total"
TASK_DEAD_LETTERS = "tqadmin_task_dead_letters_total"  # by reason (x-tq-reason)
TASK_DEDUPLICATED = "tqadmin_task_deduplicated_total"  # deliveries of done jobs acked without a run
TASK_WAIT = "tqadmin_task_wait_seconds"  # histogram: published -> started
TASK_RUN = "tqadmin_task_run_seconds"  # histogram: run time

# -- workers and cron (labels: profile; framework and state on workers) ----------------------------------
WORKERS = "tqadmin_workers"  # workers by framework and state (live, dead)
WORKERS_WEDGED = "tqadmin_workers_wedged"  # live workers judged wedged, by framework
CRON_LATENESS = "tqadmin_cron_lateness_seconds"  # the latest schedule's lateness
CRON_SCHEDULES = "tqadmin_cron_schedules"
CRON_LEADER = "tqadmin_cron_leader"  # 1 while an instance holds the lease, 0 when none does
CRON_FENCE = "tqadmin_cron_fencing_token"
PAUSED = "tqadmin_paused"  # 1 per standing pause: a queue (task_type "(all)") or one task type of it
PAUSED_UNTIL = "tqadmin_paused_until_timestamp_seconds"  # when it runs out; absent for a pause until resumed
PAUSED_SINCE = "tqadmin_paused_since_timestamp_seconds"  # when it was set (a rule pages on a long one)
WHOLE_QUEUE = "(all)"  # the task_type label of a whole queue's pause

# -- the worker's own endpoint only (one worker: no profile label) ---------------------------------------
WORKER_RUNNING_JOBS = "tqadmin_worker_running_jobs"
WORKER_START_TIME = "tqadmin_worker_start_time_seconds"
WORKER_STORE_ROUND_TRIPS = "tqadmin_worker_store_round_trips_total"
WORKER_RESTARTS = "tqadmin_worker_restarts_total"

OTHER_QUEUES = "amq.tqadmin.folded"
"""The ``queue`` label of the series summing every queue past ``--max-queues`` (in name order): a name no
RabbitMQ or SQS queue can have (RabbitMQ refuses a client's ``amq.`` names, 403; SQS allows no dot outside a
``.fifo`` suffix), so there it is never mistaken for a queue's own series."""

FOLDED = "folded"
"""The label only the fold series has (``folded="true"``): on Redis and SQLite a queue may have any name,
even :data:`OTHER_QUEUES`, so what tells the fold apart on every broker is this label, and every per-queue
alert rule matches ``folded!="true"``."""

FRAMEWORK = "tqadmin"
"""The ``framework`` label of tqadmin's own workers and tasks."""

_EDGES_NEAR_S = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
)
LE_BUCKETS: tuple[int, ...] = tuple(bucket_of(near) for near in _EDGES_NEAR_S)
"""For each round figure, the log bucket holding it: an edge's ``_bucket`` count is the zero bucket plus
every bucket up to this index (compare indices, never ``bucket_of(edge)``: floating point may put the edge
itself one bucket up)."""
LE_EDGES: tuple[float, ...] = tuple(GAMMA**index for index in LE_BUCKETS)
"""Histogram ``le`` edges, seconds: the upper boundary of each bucket of :data:`LE_BUCKETS` (at most 2 %
above its round figure), then ``+Inf``."""
