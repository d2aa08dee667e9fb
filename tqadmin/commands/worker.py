"""`tqadmin worker`: the reference worker, supervised so that a task killing its process is survivable."""

from __future__ import annotations

import argparse
import functools
import signal
import sys
from contextlib import AbstractContextManager, closing, nullcontext
from typing import TYPE_CHECKING

from tqadmin.commands.arguments import positive
from tqadmin.commands.context import CommandContext
from tqadmin.errors import ExitCode, TqadminError, UsageError
from tqadmin.pipeline import retry
from tqadmin.pipeline.breaker import BreakRule
from tqadmin.pipeline.claim_register import ClaimRegister, recover_claims
from tqadmin.pipeline.job import DEFAULT_MAX_BYTES
from tqadmin.pipeline.pausing import DEFAULT_RECHECK_S
from tqadmin.pipeline.pulse import Pulse
from tqadmin.pipeline.supervisor import Restart, restarts, supervise, watchdog_restarts
from tqadmin.pipeline.tasks import load_tasks
from tqadmin.pipeline.watchdog import Watchdog
from tqadmin.pipeline.worker import Worker, WorkerSettings
from tqadmin.plugin.kit.background import PluginFault
from tqadmin.show import logs
from tqadmin.show.masking import mask_text
from tqadmin.store.factory import open_pauses
from tqadmin.store.pauses.audit import PauseAudit
from tqadmin.store.pauses.base import parse_duration
from tqadmin.telemetry.endpoint import MetricsServer
from tqadmin.telemetry.prometheus import worker_families

if TYPE_CHECKING:
    from tqadmin.store.completion.base import StateStore


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queue", required=True, help="work queue to consume")
    parser.add_argument("--tasks", required=True, metavar="MODULE", help="module (or .py file) with @task")
    parser.add_argument(
        "--concurrency", type=positive(int), default=4, metavar="N", help="job threads (default 4)"
    )
    parser.add_argument("--prefetch", type=int, default=0, metavar="N", help="default 8 x concurrency")
    parser.add_argument("--max-retries", type=int, default=retry.DEFAULT_MAX_RETRIES, metavar="N")
    parser.add_argument("--backoff-base", type=float, default=retry.DEFAULT_BACKOFF_BASE_S, metavar="S")
    parser.add_argument("--backoff-cap", type=float, default=retry.DEFAULT_BACKOFF_CAP_S, metavar="S")
    parser.add_argument("--job-timeout", type=float, default=300.0, metavar="S", help="0: no limit")
    parser.add_argument(
        "--lease", type=positive(float), default=30.0, metavar="S", help="claim lease (renewed)"
    )
    parser.add_argument("--crash-limit", type=int, default=retry.DEFAULT_CRASH_LIMIT, metavar="N")
    parser.add_argument("--max-payload-bytes", type=positive(int), default=DEFAULT_MAX_BYTES, metavar="N")
    parser.add_argument(
        "--heartbeat", type=positive(float), default=2.0, metavar="S", help="heartbeat interval"
    )
    parser.add_argument(
        "--pause-recheck",
        type=positive(float),
        default=DEFAULT_RECHECK_S,
        metavar="S",
        help="a paused job is put back for at most S seconds before it is looked at again (default 10)",
    )
    parser.add_argument(
        "--break-after",
        type=positive(int),
        default=None,
        metavar="N",
        help="the breaker: N failed runs in a row of a task type pause it for --break-for (off by default)",
    )
    parser.add_argument(
        "--break-for",
        default=None,
        metavar="DURATION",
        help="how long the breaker pauses a task type: 30s, 10m, 2h, 1d (with --break-after)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="N",
        help="serve Prometheus metrics at http://HOST:N/metrics (off by default)",
    )
    parser.add_argument(
        "--metrics-host", default="127.0.0.1", metavar="HOST", help="address for --metrics-port (127.0.0.1)"
    )
    parser.add_argument(
        "--watchdog",
        type=positive(float),
        default=None,
        metavar="S",
        help="restart the worker process when its intake loop has not turned for S seconds (off by default)",
    )
    parser.add_argument(
        "--no-dedup",
        action="store_true",
        help="skip the completion store (no claims, no ctx.once): at-least-once, faster",
    )


def settings_from(args: argparse.Namespace) -> WorkerSettings:
    if args.prefetch < 0 or args.job_timeout < 0:
        raise UsageError("--prefetch and --job-timeout must not be negative (0: the default, no limit)")
    if args.metrics_port is not None and not 0 < args.metrics_port < 65536:
        raise UsageError("--metrics-port must be a TCP port, 1 to 65535")
    try:
        policy = retry.RetryPolicy(args.backoff_base, args.backoff_cap, args.max_retries, args.crash_limit)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return WorkerSettings(
        breaker=_break_rule(args),
        queue=args.queue,
        concurrency=args.concurrency,
        prefetch=args.prefetch,
        policy=policy,
        job_timeout_s=args.job_timeout or None,
        lease_s=args.lease,
        max_payload_bytes=args.max_payload_bytes,
        dedup=not args.no_dedup,
        heartbeat_s=args.heartbeat,
        pause_recheck_s=args.pause_recheck,
    )


def _break_rule(args: argparse.Namespace) -> BreakRule | None:
    """The worker's breaker (``--break-after N --break-for DURATION``), both or neither; ``--break-for``
    alone is the pause of the tasks whose decorator sets ``break_after`` only."""
    if args.break_for is None:
        if args.break_after is not None:
            raise UsageError("--break-after needs --break-for: how long the breaker pauses a task type")
        return None
    try:
        for_s = parse_duration(args.break_for)
    except UsageError:
        raise UsageError(f"--break-for {args.break_for!r} is not a duration: 30s, 10m, 2h or 1d") from None
    if for_s is None:
        raise UsageError("--break-for forever: a breaker's pause ends by itself; say how long, as 10m")
    return BreakRule(args.break_after or 0, for_s)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    ctx.settings.refuse_if_read_only("worker")  # it acks, retries and dead-letters: a write, refused first
    settings = settings_from(args)
    registry = load_tasks(args.tasks)  # before forking: a bad module is exit 2 at once
    # Made before the fork, so the supervisor reads what a dead child left there (docs: the claim register).
    register = (
        ClaimRegister.for_window(settings.effective_prefetch, settings.concurrency)
        if settings.dedup
        else None
    )
    watchdog = None if args.watchdog is None else Watchdog(Pulse(), args.watchdog)  # before the fork too

    def opening() -> StateStore:
        from tqadmin.store.factory import open_store

        return open_store(ctx.settings.store_url, timeout_s=ctx.settings.timeout_s)

    def child() -> int:
        try:
            store = opening()
            store.check()
            pauses = open_pauses(ctx.settings.store_url, timeout_s=ctx.settings.timeout_s)
            with ctx.plugin().transport(ctx.broker_config()) as transport, closing(pauses):
                worker = Worker(
                    settings,
                    transport,
                    store,
                    registry,
                    restarts=restarts(),
                    register=register,
                    pulse=None if watchdog is None else watchdog.pulse,
                    watchdog_restarts=watchdog_restarts(),
                    pauses=pauses,
                    auditor=PauseAudit(ctx.settings.audit_log, ctx.settings.profile),
                )
                for signum in (signal.SIGTERM, signal.SIGINT):
                    signal.signal(signum, lambda _s, _f: worker.request_stop())
                with _metrics(args, worker):
                    worker.run()
            store.close()
        except TqadminError as exc:
            print(f"tqadmin: {mask_text(str(exc))}", file=sys.stderr, flush=True)
            return int(exc.exit_code)
        except PluginFault as exc:  # the plugin did not expect it: loud, and a fresh process takes over
            logs.print_traceback(exc)
            print(logs.internal_error_line(exc), file=sys.stderr, flush=True)
            return Restart(ExitCode.INTERNAL)
        except Exception as exc:  # a bug: said here, masked, rather than by multiprocessing, raw
            if ctx.settings.verbose:
                logs.print_traceback(exc)
            print(logs.internal_error_line(exc), file=sys.stderr, flush=True)
            return int(ExitCode.INTERNAL)
        return 0

    return supervise(
        child,
        on_death=None if register is None else functools.partial(recover_claims, register, opening),
        watchdog=watchdog,
    )


def _metrics(args: argparse.Namespace, worker: Worker) -> AbstractContextManager[object]:
    """The Prometheus endpoint when ``--metrics-port`` asks for one (served by the worker process, so a
    restarted process serves again on the same port)."""
    if args.metrics_port is None:
        return nullcontext()
    return MetricsServer(args.metrics_host, args.metrics_port, lambda: worker_families(worker.snapshot()))
