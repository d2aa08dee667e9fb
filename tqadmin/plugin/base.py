"""The broker plugin contract: one plugin, two faces (admin for the TUI/CLI, transport for the pipeline).

Plugins live in their own top-level packages and are found through the ``tqadmin.brokers`` entry-point group
(see :mod:`tqadmin.plugin.registry`), the same way Harlequin finds its database adapters. This module imports
no driver: a plugin imports pika, redis or boto3 inside its own package and translates their exceptions into
:mod:`tqadmin.errors` at its boundary.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, ClassVar, Self

from tqadmin.errors import NotSupported, QueueReadOnly, UsageError
from tqadmin.plugin.capabilities import Capabilities, Operation, TransportCapabilities
from tqadmin.plugin.models import ActionReport, DeathRecord, Message, PeekResult, QueueListing, dlq_name
from tqadmin.plugin.workers import WorkerReading
from tqadmin.show.masking import mask_text, mask_url

if TYPE_CHECKING:
    from tqadmin.plugin.transport import BrokerTransport


@dataclass(frozen=True, slots=True)
class PluginOption:
    """A connection option a plugin understands beyond its URL (Harlequin's adapter options).

    ``name`` is its key in a profile of the config file and in :attr:`BrokerConfig.options`; ``env`` and
    ``flag`` are the environment variable and the global command-line flag that set it (flags beat the
    environment, which beats the profile). A ``secret`` value is never shown.
    """

    name: str
    help: str
    env: str | None = None
    flag: str | None = None
    secret: bool = False


@dataclass(frozen=True, slots=True)
class DriverLogger:
    """A logger of the plugin's driver, and the least level tqadmin lets through it: ``level`` normally,
    ``verbose_level`` with ``-v``. For a driver that logs what tqadmin already says in its one error line
    (pika logs every failed connection attempt at ERROR, with a traceback)."""

    name: str
    level: int = logging.CRITICAL
    verbose_level: int = logging.WARNING

    def level_for(self, verbose: bool) -> int:
        return self.verbose_level if verbose else self.level


@dataclass(frozen=True, slots=True, repr=False)
class BrokerConfig:
    """Where and how a plugin connects. ``url`` and options may carry credentials: the repr masks them, so a
    traceback that prints its locals shows none. ``celery_events``: the profile lets the admin face listen
    to Celery's task events (a queue or a subscription of its own, never a control command). ``read_only``:
    the profile is read-only, so the admin face sends no write at all, not even one a look would make on
    its broker (an SQLite transfer session's leases): its sessions only read, and refuse to ack or
    publish."""

    url: str
    timeout_s: float = 10.0
    options: Mapping[str, str] = field(default_factory=dict)
    celery_events: bool = False
    read_only: bool = False

    def option(self, name: str) -> str | None:
        """The value of the plugin option ``name``, or ``None`` when not set."""
        return self.options.get(name) or None

    def __repr__(self) -> str:
        shown = {k: mask_url(v) if "://" in v else mask_text(v) for k, v in self.options.items()}
        return f"BrokerConfig(url={mask_url(self.url)!r}, timeout_s={self.timeout_s!r}, options={shown!r})"


@dataclass(frozen=True, slots=True)
class Delivery:
    """A message taken from a queue and not yet settled, on either face; ``token`` is the plugin's own
    handle (a channel and delivery tag, a receipt handle, a stream entry id and owner, a lease token)."""

    message: Message
    token: object


class Closing(ABC):
    """``with`` support for anything holding a connection: leaving the block closes it, error or not."""

    @abstractmethod
    def close(self) -> None:
        """Close what this object holds."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class TransferSession(Closing):
    """Primitives for moving messages safely, on which :mod:`tqadmin.admin` builds move, replay, export,
    purge-with-backup and delete once for every broker.

    The rule the contract exists for: a message is acknowledged (removed) only after its copy is confirmed
    by the broker. A delivery fetched and not yet acked or released stays invisible to this session (it is
    never fetched twice), and everything not acked when the session closes goes back to its queue.
    """

    #: Whether the session takes messages waiting out a retry delay beside the queue (so they are in its
    #: :meth:`count_at_start`); a reader adding the listing's ``delayed`` would count them twice.
    takes_delayed: bool = False

    @abstractmethod
    def count_at_start(self) -> int:
        """How many messages the queue held when the session opened: the most it will fetch, so that a
        producer feeding the queue while we drain it is not chased forever."""

    @abstractmethod
    def fetch(self, limit: int) -> Sequence[Delivery]:
        """Up to ``limit`` more deliveries, oldest first; an empty result means the queue is drained."""

    @abstractmethod
    def publish_confirmed(self, items: Sequence[tuple[str, Message]]) -> None:
        """Publish each ``(queue, message)`` persistently and return once the broker confirmed all of them.

        Raises :class:`~tqadmin.errors.Unroutable` or :class:`~tqadmin.errors.Nacked` when any copy was not
        taken; then none of the originals may be acked.
        """

    @abstractmethod
    def ack(self, deliveries: Sequence[Delivery]) -> None:
        """Remove these deliveries from the source queue for good."""

    @abstractmethod
    def release(self, deliveries: Sequence[Delivery]) -> None:
        """Put these deliveries back in their queue, in their original position where the broker can."""

    @abstractmethod
    def close(self) -> None:
        """Release whatever was fetched and not acked, then disconnect."""


def refuse_onto_itself(action: str, source: str, target: str | None) -> None:
    """Refuse (exit 2) a move or replay whose target is the queue it reads, before anything is read: at
    best it reshuffles the queue, at worst (copy the rows in, then delete the rows chosen) it empties it."""
    if target == source:
        raise UsageError(f"{action}: source and target are the same queue {source!r}; nothing was moved")


class BrokerAdmin(Closing):
    """The admin face: what the TUI polls and the CLI's admin commands call."""

    capabilities: ClassVar[Capabilities]

    @abstractmethod
    def list_queues(self) -> QueueListing:
        """Every queue with its figures and the broker's alarms, in one or a few broker calls."""

    def peek(self, queue: str, count: int) -> PeekResult:
        """Look at up to ``count`` messages without consuming them; the result says what the look cost."""
        raise NotSupported(self.capabilities.why_not(Operation.PEEK))

    def open_transfer(self, queue: str) -> TransferSession:
        """A session to take messages from ``queue`` safely (move, replay, export, purge with backup)."""
        raise NotSupported(self.capabilities.why_not(Operation.MOVE))

    def purge(self, queue: str) -> int:
        """Drop every message of ``queue`` on the broker side; returns how many were dropped."""
        raise NotSupported(self.capabilities.why_not(Operation.PURGE))

    def server_side_move(self, source: str, target: str, limit: int | None) -> ActionReport | None:
        """Move without a client in the data path (a RabbitMQ shovel); ``None`` when not available here.
        A move onto ``source`` itself is refused before the plugin's own method runs."""
        return None

    def server_side_replay(
        self, dlq: str, target: str | None, progress: Callable[[str], None]
    ) -> ActionReport | None:
        """Send the messages of dead-letter queue ``dlq`` back with the broker's own redrive, to ``target``
        or (``None``) where each came from, reporting on the way through ``progress``; ``None`` when that is
        not available here. Only called where ``capabilities.server_side_replay`` says so; a ``target``
        that is ``dlq`` itself is refused before the plugin's own method runs."""
        return None

    def peek_risk(self, queue: str) -> str | None:
        """Why looking at ``queue`` can change what becomes of its messages (a look that counts toward a
        limit after which the broker dead-letters them), or ``None`` when a look cannot; the CLI asks before
        such a peek."""
        return None

    def queue_exists(self, queue: str) -> bool:
        """Whether ``queue`` exists; the default looks it up in :meth:`list_queues`."""
        return any(q.name == queue for q in self.list_queues().queues)

    def read_only_reason(self, queue: str) -> str | None:
        """Why ``queue`` may be shown but never written (another framework owns it), and what to use
        instead; ``None`` for a queue tqadmin may write (every queue, by default)."""
        return None

    def require_writable(self, action: str, *queues: str | None) -> None:
        """Refuse ``action`` before it reads or writes anything when one of ``queues`` is read-only here,
        so the user gets the reason in one line instead of a run whose every copy fails."""
        for queue in filter(None, queues):
            reason = self.read_only_reason(queue)
            if reason is not None:
                raise QueueReadOnly(queue, reason, action)

    def deaths(self, message: Message) -> tuple[DeathRecord, ...]:
        """The times the broker itself dead-lettered ``message``, newest first, as this broker records
        them on the message (none by default)."""
        return ()

    def framework_workers(self) -> WorkerReading:
        """Other frameworks' workers as their registries on this broker hold them, read without writing
        (none by default). Only asked where ``capabilities.worker_registries`` names some; a registry that
        cannot be read is named in the reading, the others still listed."""
        return WorkerReading()

    def close(self) -> None:
        """Close connections held by this admin (none by default)."""


class BrokerPlugin(ABC):
    """What an entry point in ``tqadmin.brokers`` names: a factory for both faces of one broker.

    The module that defines a plugin class imports no driver (a layering test checks): the CLI reads every
    installed plugin's ``options`` to build its global flags, and that must stay cheap and never fail
    because some other broker's driver is missing.
    """

    name: ClassVar[str]
    schemes: ClassVar[tuple[str, ...]]
    capabilities: ClassVar[Capabilities]
    options: ClassVar[tuple[PluginOption, ...]] = ()
    name_separator: ClassVar[str] = "."
    """What joins the parts of a queue name that tqadmin makes up (the demo's ``demo.images``): a character
    the broker allows in queue names (SQS allows no dot)."""
    transport_capabilities: ClassVar[TransportCapabilities | None] = None
    """What the transport face declares (its class's ``capabilities``), readable without opening it or
    loading a driver: ``tqadmin publish`` builds its flags from the ``publish_options`` of every installed
    plugin. ``None`` for a plugin without a transport face."""
    driver_loggers: ClassVar[tuple[DriverLogger, ...]] = ()
    """The loggers of its driver that tqadmin tunes at start (:mod:`tqadmin.show.logs`)."""
    start_hint: ClassVar[str] = "start the broker or point --broker at a running one"
    """What to do when the broker cannot be reached, where starting one would help (the demo says it after
    the error): which server, and how to start one."""
    admin_start_hint: ClassVar[str | None] = None
    """The same for an admin face that is a service of its own (RabbitMQ's management API); ``None``: the
    admin face is the broker, and ``start_hint`` says it."""

    def dlq_name(self, queue: str) -> str:
        """The dead-letter queue tqadmin gives ``queue`` on this broker (docs/interface.md: ``Q.dlq`` where a
        dot is allowed); a queue configured otherwise (a redrive policy) is reported by the listing."""
        return dlq_name(queue)

    @abstractmethod
    def admin(self, config: BrokerConfig) -> BrokerAdmin:
        """A connected admin face; raises :class:`~tqadmin.errors.ConnectError` when unreachable."""

    def transport(self, config: BrokerConfig) -> BrokerTransport:
        """The pipeline face (publish, consume, retry, dead-letter)."""
        raise NotSupported(f"the {self.name} plugin has no transport face yet")
