"""``tqadmin cron``: run the distributed cron until SIGTERM, then hand the lease over at once."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from types import FrameType

from tqadmin.commands.context import CommandContext
from tqadmin.connect.backoff import START_WAIT_S
from tqadmin.errors import UsageError
from tqadmin.pipeline.cron.control import CronControl
from tqadmin.pipeline.cron.jobs import Publish
from tqadmin.pipeline.cron.schedule import Schedule, load_schedules
from tqadmin.pipeline.cron.scheduler import DEFAULT_LOCK_TTL_S, Scheduler
from tqadmin.plugin.kit.retrying import Retrying, once_reachable
from tqadmin.show.masking import MaskingFormatter
from tqadmin.store.factory import open_cron_store, open_pauses, open_triggers
from tqadmin.store.pauses.audit import PauseAudit


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--schedule", required=True, type=Path, metavar="FILE.toml", help="the schedule file")
    parser.add_argument(
        "--instance-id",
        default=None,
        metavar="ID",
        help="this instance's name in the store (default: HOST-PID)",
    )
    parser.add_argument(
        "--lock-ttl",
        dest="lock_ttl_s",
        type=float,
        default=DEFAULT_LOCK_TTL_S,
        metavar="S",
        help=f"leader lease in seconds, renewed every third of it (default {DEFAULT_LOCK_TTL_S:g})",
    )
    add_namespace_option(parser)


def add_namespace_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--namespace",
        default="default",
        metavar="NAME",
        help="cron group in the store: instances of one namespace share one lease (default 'default')",
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    ctx.settings.require_writable("cron")
    if not 0.5 <= args.lock_ttl_s <= 3600:
        raise UsageError("--lock-ttl must be between 0.5 and 3600 seconds")
    schedules = load_schedules(args.schedule)
    instance = args.instance_id or f"{socket.gethostname()}-{os.getpid()}"
    logger = _logger(instance, ctx.settings.verbose)
    _warn_short_graces(schedules, args.lock_ttl_s, logger)
    store = open_cron_store(ctx.settings.store_url, args.namespace, ctx.settings.timeout_s)
    try:
        # Fail at start, not at the first tick: a misconfigured instance that led would sit on the lease,
        # retrying, while correctly configured ones waited.
        store.leader()
        with _publisher(ctx, {s.queue for s in schedules}) as publish, _control(ctx, args, logger) as control:
            scheduler = Scheduler(
                schedules,
                store,
                publish,
                instance=instance,
                lock_ttl_s=args.lock_ttl_s,
                logger=logger,
                control=control,
            )
            stop = threading.Event()
            with _stop_on_signals(stop):
                logger.info("running %d schedule(s) from %s", len(schedules), args.schedule)
                scheduler.run(stop)
    finally:
        store.close()
    return 0


@contextmanager
def _publisher(ctx: CommandContext, queues: set[str]) -> Iterator[Publish]:
    """The broker's transport, once the queues are declared (the cron's process tests put a Redis list here:
    tests/support/cron_sink.py)."""
    from tqadmin.pipeline.cron.publishing import TransportPublish

    with ctx.plugin().transport(ctx.broker_config()) as transport:
        publish = TransportPublish(transport)
        # Connects: a refused login ends here; a broker still booting is waited for, START_WAIT_S at most.
        once_reachable(lambda: publish.declare(sorted(queues)), Retrying(), START_WAIT_S, "no broker yet")
        yield publish


@contextmanager
def _control(ctx: CommandContext, args: argparse.Namespace, logger: logging.Logger) -> Iterator[CronControl]:
    """The schedules' pauses and the trigger requests, from the profile's state store."""
    timeout_s = ctx.settings.timeout_s
    with (
        closing(open_pauses(ctx.settings.store_url, timeout_s=timeout_s)) as pauses,
        closing(open_triggers(ctx.settings.store_url, args.namespace, timeout_s=timeout_s)) as triggers,
    ):
        yield CronControl(pauses, triggers, PauseAudit(ctx.settings.audit_log, ctx.settings.profile), logger)


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT end the loop cleanly so the lease is released, not left to expire."""

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signals = (signal.SIGTERM, signal.SIGINT)
    previous = [signal.signal(sig, handler) for sig in signals]
    try:
        yield
    finally:
        for sig, old in zip(signals, previous, strict=True):
            signal.signal(sig, old)


def _logger(instance: str, verbose: bool) -> logging.Logger:
    logger = logging.getLogger("tqadmin.cron")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(MaskingFormatter(f"%(asctime)s cron[{instance}] %(levelname)s %(message)s"))
    logger.handlers[:] = [handler]
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    logger.propagate = False
    return logger


def _warn_short_graces(schedules: tuple[Schedule, ...], lock_ttl_s: float, logger: logging.Logger) -> None:
    failover = lock_ttl_s * 4 / 3
    for schedule in schedules:
        if schedule.misfire_grace < failover:
            logger.warning(
                "%s: misfire_grace %gs is shorter than a failover (up to %.0fs with --lock-ttl %g): "
                "ticks due while a dead leader's lease runs out will be skipped",
                schedule.name,
                schedule.misfire_grace,
                failover,
                lock_ttl_s,
            )
