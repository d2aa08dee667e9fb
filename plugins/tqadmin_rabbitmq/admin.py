"""The admin face of RabbitMQ: figures from the management API, messages over AMQP."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, ClassVar

from tqadmin.errors import BadResponse, BrokerError, NotAuthorized, QueueNotFound
from tqadmin.plugin.base import BrokerAdmin, BrokerConfig
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import Alarm, DeathRecord, Message, QueueListing
from tqadmin.plugin.workers import WorkerReading
from tqadmin_rabbitmq import MANAGEMENT_URL
from tqadmin_rabbitmq.capabilities import CAPABILITIES
from tqadmin_rabbitmq.celery_workers import CeleryWorkers
from tqadmin_rabbitmq.deaths import deaths
from tqadmin_rabbitmq.listing import (
    NODE_COLUMNS,
    QUEUE_COLUMNS,
    DeadLetterTarget,
    Router,
    parse_queue_list,
    parse_queue_page,
    to_alarms,
    to_stats,
)
from tqadmin_rabbitmq.management import MAX_BODY_BYTES, ManagementClient, path_of
from tqadmin_rabbitmq.messages import AmqpMessages
from tqadmin_rabbitmq.urls import management_endpoint, vhost_of

PAGE_SIZE = 500  # the management API's largest page
BYTES_PER_QUEUE = 4096  # generous for one queue's columns, arguments and policy included
# A poller's share of the broker, in wall time of its listings. RabbitMQ spreads a listing over several
# schedulers, so it burns up to about twice the call's latency in CPU (bench/poll.py): 5% of wall time
# keeps a poller under 10% of a core.
BROKER_BUDGET = 0.05
# RabbitMQ refreshes queue figures every collect_statistics_interval (5 s by default): fetching them more
# often pays for the same numbers again.
STATS_INTERVAL_S = 5.0


class RabbitMQAdmin(AmqpMessages, BrokerAdmin):
    capabilities: ClassVar[Capabilities] = CAPABILITIES

    def __init__(
        self,
        config: BrokerConfig,
        clock: Callable[[], float] = time.time,
        budget: float = BROKER_BUDGET,
        min_interval_s: float = STATS_INTERVAL_S,
    ) -> None:
        self.config = config
        self.vhost = vhost_of(config.url)
        self.endpoint = management_endpoint(config.url, config.option(MANAGEMENT_URL.name))
        self._clock = clock
        self._budget = budget
        self._min_interval_s = min_interval_s
        self._api: ManagementClient | None = None
        self._items: Sequence[Mapping[str, Any]] = ()
        self._bindings: dict[str, list[tuple[str, str]]] = {}  # dead-letter exchange -> its queue bindings
        self._refetch_at = -1.0  # time.monotonic() after which the queue pages may be fetched again
        self._celery: CeleryWorkers | None = None

    @property
    def api(self) -> ManagementClient:
        """The management API client, opened on first use (creating it sends nothing)."""
        if self._api is None:
            self._api = ManagementClient(self.endpoint, self.config.timeout_s)
        return self._api

    def deaths(self, message: Message) -> tuple[DeathRecord, ...]:
        return deaths(message)

    def list_queues(self) -> QueueListing:
        """The vhost's queues in one or two column-filtered calls plus one call for node alarms: never a
        call per queue.

        Listing thousands of queues costs the broker real CPU, so a poller keeps to a budget: the queue
        figures are fetched again no sooner than RabbitMQ refreshes them (5 s), nor, after a listing that
        took T seconds, than T / budget after it started; calls in between reuse them (ages still advance,
        and alarms are always fetched fresh: that call is cheap). A one-shot ``tqadmin queues`` always
        fetches.
        """
        items = self._queue_items()
        alarms = self._alarms()
        names = {str(item["name"]) for item in items}
        stats = to_stats(items, self._clock(), self._router(names), self.api.where)
        broker = f"{self.endpoint.base_url} vhost {self.vhost}"
        return QueueListing(tuple(stats), tuple(alarms), broker=broker)

    def framework_workers(self) -> WorkerReading:
        """Celery's workers, by their control queues in the listing and, with task events on, from the
        events (:mod:`.celery_workers`)."""
        if self._celery is None:
            self._celery = CeleryWorkers(self.config)
        return self._celery.read(self._queue_items())

    def queue_exists(self, queue: str) -> bool:
        try:
            self.api.get_json(
                path_of("api", "queues", self.vhost, queue), {"columns": "name"}, missing=f"queue {queue!r}"
            )
        except QueueNotFound:
            return False
        return True

    def close(self) -> None:
        if self._celery is not None:
            self._celery.close()
            self._celery = None
        if self._api is not None:
            self._api.close()
            self._api = None

    def _queue_items(self) -> Sequence[Mapping[str, Any]]:
        started = time.monotonic()
        if started < self._refetch_at:
            return self._items
        self._items = self._fetch_queue_items()
        self._bindings = {}
        took = time.monotonic() - started
        self._refetch_at = started + max(self._min_interval_s, took / self._budget)
        return self._items

    def _fetch_queue_items(self) -> Sequence[Mapping[str, Any]]:
        """The first page (no sort parameter: in the default order RabbitMQ computes the stats of that page
        only); when there is more, everything at once in one column-filtered call.

        Paging on would cost the broker more than that one call: every page request lists and sorts all
        queues again (bench/poll.py with 5,000 queues: 10 pages took about twice the broker CPU of one
        column-filtered listing). The first page's count bounds how large that listing may be.
        """
        columns = ",".join(QUEUE_COLUMNS)
        first = parse_queue_page(
            self._get_queues({"page": "1", "page_size": str(PAGE_SIZE), "columns": columns}), self.api.where
        )
        if first.page_count <= 1:
            return first.items
        limit = max(MAX_BODY_BYTES, (first.total_count + PAGE_SIZE) * BYTES_PER_QUEUE)
        return parse_queue_list(self._get_queues({"columns": columns}, limit), self.api.where)

    def _get_queues(self, params: Mapping[str, str], max_bytes: int | None = None) -> Any:
        return self.api.get_json(
            path_of("api", "queues", self.vhost),
            params,
            missing=f"vhost {self.vhost!r}",
            missing_error=BrokerError,
            max_bytes=max_bytes,
        )

    def _alarms(self) -> list[Alarm]:
        try:
            nodes = self.api.get_json("api/nodes", {"columns": ",".join(NODE_COLUMNS)})
        except NotAuthorized:
            # Listing nodes needs the monitoring tag; a plain management user still gets its queues.
            return [Alarm("?", "alarms_unknown", "this user may not read node alarms (needs monitoring tag)")]
        return to_alarms(nodes, self.api.where)

    def _router(self, queues: Collection[str]) -> Router:
        """Resolve a dead-letter exchange to a queue: the default exchange routes by name; another exchange
        by its bindings, fetched once per exchange and queue fetch (only for queues that have such a DLX)."""
        bindings = self._bindings

        def route(target: DeadLetterTarget, queue: str) -> str | None:
            # Without a dead-letter routing key, RabbitMQ keeps the message's own key: usually the queue name.
            key = target.routing_key if target.routing_key is not None else queue
            if target.exchange == "":
                return key if key in queues else None
            if target.exchange not in bindings:
                bindings[target.exchange] = self._queue_bindings(target.exchange)
            bound = bindings[target.exchange]
            for pattern in (key, "#", ""):
                for routing_key, destination in bound:
                    if routing_key == pattern and destination in queues:
                        return destination
            return None

        return route

    def _queue_bindings(self, exchange: str) -> list[tuple[str, str]]:
        """``(routing_key, queue)`` for every queue bound to ``exchange``; none when it does not exist."""
        try:
            document = self.api.get_json(
                path_of("api", "exchanges", self.vhost, exchange, "bindings", "source"),
                {"columns": "destination,destination_type,routing_key"},
                missing=f"dead-letter exchange {exchange!r}",
            )
        except QueueNotFound:
            return []
        if not isinstance(document, list):
            raise BadResponse(f"{self.api.where} sent bindings of {exchange!r} that are not a JSON array")
        return [
            (str(b.get("routing_key", "")), str(b.get("destination")))
            for b in document
            if isinstance(b, Mapping) and b.get("destination_type") == "queue"
        ]
