"""What a plugin can do, declared as data so the UI can grey out the rest and say why.

Modelled on kombu's transport capability flags: the answer to "can this broker peek?" is a value a plugin
declares once, not an exception the user discovers by trying. The admin face declares :class:`Capabilities`,
the transport face :class:`TransportCapabilities` (how it applies a retry delay, whether deliveries are
leased).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tqadmin.errors import NotSupported


class Operation(StrEnum):
    """Optional admin operations; listing queues is the one thing every plugin must do."""

    PEEK = "peek"
    PURGE = "purge"
    MOVE = "move"
    REPLAY = "replay"
    EXPORT = "export"
    IMPORT = "import"
    DELETE = "delete"
    PUBLISH = "publish"
    SERVER_SIDE_MOVE = "server_side_move"


@dataclass(frozen=True, slots=True)
class Capabilities:
    """The admin operations a plugin supports, why it lacks the others, and what a peek costs on it.

    ``unavailable`` names the :class:`~tqadmin.plugin.models.QueueStats` figures the broker cannot give
    (``"consumers"``, ``"oldest_age_s"``, ``"publish_rate"``...) with the reason shown beside the blank.
    ``broker_headers`` are headers the broker itself writes and the plugin explains through
    :meth:`~tqadmin.plugin.base.BrokerAdmin.deaths` (RabbitMQ's ``x-death``), so a viewer need not list
    them raw. ``server_side_rewrites`` is whether :meth:`~tqadmin.plugin.base.BrokerAdmin.server_side_move`
    can add to ``x-tq-replays`` (a shovel or a redrive task cannot: replay then takes it only when asked);
    ``server_side_needs`` says what that path needs on the broker, for when it turns out unavailable.
    ``server_side_replay`` is whether the broker's own redrive can send a dead-letter queue's messages back
    where they came from (:meth:`~tqadmin.plugin.base.BrokerAdmin.server_side_replay`, an SQS message move
    task): replay then takes that path by default when nothing asks for the client (no filter, limit, rate
    or dry run), without looking at the messages first. ``peek_counts_delivery`` is whether a look adds one
    to each message's delivery count where the broker keeps one (RabbitMQ's get and requeue, an SQS
    receive), so a screen says "one more after this look" only where it is true. ``worker_registries``
    names the frameworks whose workers :meth:`~tqadmin.plugin.base.BrokerAdmin.framework_workers` reads
    here (``rq``, ``sidekiq``, ``dramatiq``): where it is empty nobody opens the broker to ask.
    """

    supported: frozenset[Operation]
    reasons: tuple[tuple[Operation, str], ...] = ()
    peek_cost: str = ""
    peek_counts_delivery: bool = False
    unavailable: tuple[tuple[str, str], ...] = ()
    broker_headers: frozenset[str] = frozenset()
    server_side_rewrites: bool = False
    server_side_needs: str = ""
    server_side_replay: bool = False
    worker_registries: tuple[str, ...] = ()

    def supports(self, operation: Operation) -> bool:
        return operation in self.supported

    def why_not(self, operation: Operation) -> str:
        """A sentence for the user explaining why ``operation`` is unavailable."""
        for op, reason in self.reasons:
            if op is operation:
                return reason
        return f"this broker plugin does not support {operation.value}"

    def require(self, operation: Operation) -> None:
        """Raise :class:`NotSupported` with the declared reason when ``operation`` is unavailable."""
        if not self.supports(operation):
            raise NotSupported(self.why_not(operation))

    def why_unavailable(self, figure: str) -> str | None:
        """Why the broker gives no value for ``figure`` (a ``QueueStats`` field), or ``None`` if it does."""
        return dict(self.unavailable).get(figure)


def option_flag(name: str) -> str:
    """The flag of ``tqadmin publish`` that sets the publish option ``name`` (``routing_key``:
    ``--routing-key``)."""
    return "--" + name.replace("_", "-")


@dataclass(frozen=True, slots=True)
class PublishOption:
    """An addressing option ``publish`` understands beyond a queue name, declared with the help of its flag
    (:func:`option_flag`): ``tqadmin publish`` offers the options of every installed plugin, as the global
    flags offer their connection options. One that ``addresses`` names where the messages go by itself, so
    ``--queue`` may be left out (RabbitMQ's routing key, on an exchange given as it is)."""

    name: str
    help: str
    addresses: bool = False

    @property
    def flag(self) -> str:
        return option_flag(self.name)


@dataclass(frozen=True, slots=True)
class TransportCapabilities:
    """How a plugin's transport applies what the worker asks of it.

    Any retry delay is accepted; the plugin applies it its own way (RabbitMQ: TTL queues; Redis: a sorted
    set; SQS: DelaySeconds; SQLite: a due time) within ``max(delay_slack_s, delay_slack_ratio * delay)`` of
    the delay asked for. ``max_delay_s`` is the longest delay applied in one step: a longer one is applied
    in hops (the message comes back early and the consumer defers it again without handing it out).
    ``leased`` deliveries come back to the queue by themselves unless the consumer extends them (SQS
    visibility, Redis idle time, SQLite lease); otherwise the broker holds them for the consumer's session.
    ``publish_options`` are the addressing options ``publish`` understands beyond a queue name (RabbitMQ's
    ``exchange`` and ``routing_key``); :func:`tqadmin.plugin.transport.publish_options` refuses any other.
    """

    max_delay_s: float
    delay_slack_s: float = 0.0
    delay_slack_ratio: float = 0.0
    leased: bool = False
    publish_options: tuple[PublishOption, ...] = ()

    @property
    def publish_option_names(self) -> frozenset[str]:
        return frozenset(option.name for option in self.publish_options)

    def delay_tolerance_s(self, delay_s: float) -> float:
        """How far from ``delay_s`` the applied delay may be on this broker."""
        return max(self.delay_slack_s, self.delay_slack_ratio * delay_s)
