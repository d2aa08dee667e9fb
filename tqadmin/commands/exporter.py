"""``tqadmin exporter``: Prometheus/OpenMetrics at ``/metrics`` for every profile named (docs/exporter.md).

Every profile is resolved and the port bound before anything is polled or served: a profile that does not
exist or a port in use is exit 2, naming it. After that nothing ends it but SIGTERM or SIGINT (exit 0): a
broker that is down or refuses the credentials is served stale with ``tqadmin_up`` 0 while the other profiles
go on.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import NoReturn

from tqadmin.alerting.rules import rules_yaml
from tqadmin.commands.arguments import positive
from tqadmin.commands.context import CommandContext
from tqadmin.config import Overrides, Settings, resolve
from tqadmin.errors import UsageError
from tqadmin.exporter.polling import ProfilePoller, profile_label
from tqadmin.exporter.service import (
    DEFAULT_INTERVAL_S,
    DEFAULT_LISTEN,
    DEFAULT_MAX_QUEUES,
    STOP_WAIT_S,
    Exporter,
)
from tqadmin.telemetry import metric_names as names

SIGNAL_LOOK_S = 0.2  # how often the main thread looks for a signal noted


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"where to serve /metrics (default {DEFAULT_LISTEN}; 0.0.0.0:9808 for every interface, "
        "[::1]:9808 or [::]:9808 on IPv6)",
    )
    parser.add_argument(
        "--profiles",
        default=None,
        metavar="NAME,NAME",
        help="the config file's profiles to export, each labelled profile=NAME (default: the configured one)",
    )
    parser.add_argument(
        "--interval",
        dest="interval_s",
        type=positive(float),
        default=DEFAULT_INTERVAL_S,
        metavar="S",
        help=f"seconds between polls of each broker, whatever the scrapers (default {DEFAULT_INTERVAL_S:g})",
    )
    parser.add_argument(
        "--max-queues",
        type=positive(int),
        default=DEFAULT_MAX_QUEUES,
        metavar="N",
        help=f'queues exported in all, in name order; the rest are summed as queue="{names.OTHER_QUEUES}",'
        f' {names.FOLDED}="true" (default {DEFAULT_MAX_QUEUES})',
    )
    parser.add_argument(
        "--alert-rules",
        action="store_true",
        help="print Prometheus alerting rules (YAML) for the profiles' thresholds, and exit",
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    profiles = profile_settings(args.profiles, ctx.settings, args)
    if args.alert_rules:
        print(rules_yaml([(profile_label(s), s.thresholds) for s in profiles]), end="")
        return 0
    host, port = listen_address(args.listen)
    pollers = [ProfilePoller(settings, args.interval_s) for settings in profiles]
    with _until_signalled() as wait, Exporter(pollers, host, port, args.max_queues) as exporter:
        for settings in profiles:
            ctx.progress(f"tqadmin exporter: {settings.describe()}")
        ctx.progress(f"tqadmin exporter: serving {exporter.url} every {args.interval_s:g} s (Ctrl-C stops)")
        wait()
    if exporter.left_running:
        ctx.progress(
            f"tqadmin exporter: stopped; the poll of {', '.join(exporter.left_running)} was still under way "
            f"{STOP_WAIT_S:g} s after the signal and is not waited for"
        )
        _end_now(0)
    return 0


def listen_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9808`` for IPv6; port 0 takes a free one) as a bindable pair; anything else is
    a usage error."""
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--listen {text!r}: expected HOST:PORT, such as {DEFAULT_LISTEN}")
    return host, int(port)


def profile_settings(names: str | None, configured: Settings, args: argparse.Namespace) -> list[Settings]:
    """Each profile named, resolved as ``--profile NAME`` would be, with the run's ``--config`` and
    ``--timeout`` (unknown names are exit 2, naming them); with none named, the one this run resolved to,
    global flags included."""
    if names is None:
        return [configured]
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    if not wanted:
        raise UsageError("--profiles names no profile: give NAME,NAME")
    if len(set(wanted)) != len(wanted):
        raise UsageError(f"--profiles {names!r} names a profile twice")
    shared = shared_overrides(os.environ) if len(wanted) > 1 else []
    if shared:
        raise UsageError(
            f"{', '.join(shared)} would point every profile of --profiles at the same place (the environment "
            "beats a profile's own settings): unset it, or export one profile"
        )
    return [
        resolve(
            Overrides(
                profile=name,
                config_path=args.config_path,
                timeout_s=args.timeout_s,
                verbose=configured.verbose,
            )
        )
        for name in wanted
    ]


def shared_overrides(environ: Mapping[str, str]) -> list[str]:
    """The environment variables set that override every profile's broker or store alike (a plugin's own,
    such as ``AWS_ENDPOINT_URL``, reach only that plugin's profiles, and are theirs to share)."""
    return [name for name in ("TQADMIN_BROKER_URL", "TQADMIN_STORE_URL") if environ.get(name)]


@contextmanager
def _until_signalled() -> Iterator[Callable[[], None]]:
    """A wait that returns once SIGTERM or SIGINT arrives (either ends the exporter with exit 0); both stay
    caught until the block has ended, so a second one cannot cut the stop short. The handler only notes the
    signal: it runs on the main thread between two bytecodes, and one that took a lock (``Event.set``)
    could find it held by the very code it interrupted and hang the stop for good."""
    signalled: list[int] = []
    previous = {
        sig: signal.signal(sig, lambda signum, _frame: signalled.append(signum))
        for sig in (signal.SIGTERM, signal.SIGINT)
    }

    def wait() -> None:
        while not signalled:
            time.sleep(SIGNAL_LOOK_S)

    try:
        yield wait
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _end_now(code: int) -> NoReturn:
    """End the process without waiting for the threads a poll left running. Python's own exit would join
    any non-daemon ones a plugin started (the SQS listing's pool did, and went on through every queue left:
    26 s over 10,000 queues); nothing of them is worth waiting for, since every history write is done or
    not started by now (:meth:`Exporter.__exit__`)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
