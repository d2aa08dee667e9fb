"""``tqadmin trigger SCHEDULE``: one tick of a schedule now, fired by the cron's leader (fenced, its own job
id ``cron:<name>:trigger:<n>``, audited). A write: refused in read-only mode (exit 6) before anything is
written. A schedule no running cron instance of ``--namespace`` registered is exit 4, naming those it runs;
a tick not fired within ``--wait`` is exit 5 (the request stands: the next leader fires it)."""

from __future__ import annotations

import argparse
from contextlib import closing

from tqadmin.admin import gate
from tqadmin.admin.triggering import trigger
from tqadmin.commands.context import CommandContext
from tqadmin.commands.cron import add_namespace_option
from tqadmin.errors import BrokerError, NoDatabase, PartialFailure, UsageError
from tqadmin.files.access import Access
from tqadmin.pipeline.cron.status import DEFAULT_FORGET_AFTER_S, registered_schedules
from tqadmin.store.cron.base import CronStore
from tqadmin.store.factory import open_cron_store, open_triggers

DEFAULT_WAIT_S = 30.0


class ScheduleNotFound(BrokerError):
    """No running cron instance of the namespace runs a schedule of that name (exit 4, as a missing queue)."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("schedule", metavar="SCHEDULE", help="the schedule to fire one tick of, now")
    parser.add_argument(
        "--wait",
        type=float,
        default=DEFAULT_WAIT_S,
        metavar="S",
        help=f"how long to wait for the leader to fire it (default {DEFAULT_WAIT_S:g})",
    )
    add_namespace_option(parser)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    if not 0 <= args.wait <= 3600:
        raise UsageError("--wait must be between 0 and 3600 seconds")
    gate.check_profile(ctx.settings, "trigger")
    url, timeout_s = ctx.settings.store_url, ctx.settings.timeout_s
    try:
        with closing(open_cron_store(url, args.namespace, timeout_s, access=Access.READ)) as reading:
            _require_known(reading, args.schedule, args.namespace)
    except NoDatabase:
        raise ScheduleNotFound(_unknown(args.schedule, args.namespace, [])) from None
    with (
        closing(open_cron_store(url, args.namespace, timeout_s)) as cron,
        closing(open_triggers(url, args.namespace, timeout_s=timeout_s)) as requests,
    ):
        triggered, warnings = trigger(
            ctx.settings, cron, requests, args.schedule, wait_s=args.wait, via="cli"
        )
    for warning in warnings:
        ctx.progress(f"tqadmin: warning: {warning}")
    if triggered.fired:
        said = (
            f"fired {triggered.request.job_id} (leader {triggered.instance}, fencing token"
            f" {triggered.fencing_token})"
        )
        ctx.emit(triggered.to_json(), lambda: said)
        return 0
    ctx.emit(triggered.to_json(), lambda: f"asked for {triggered.request.job_id}")
    raise PartialFailure(
        f"asked the cron's leader for {triggered.request.job_id}, not fired within {args.wait:g} s (no"
        " leader? see tqadmin schedules); the request stands and the next leader fires it: do not ask"
        " again unless you want two"
    )


def _require_known(cron: CronStore, name: str, namespace: str) -> None:
    now = cron.now()
    live = [r for r in cron.registrations() if now - r.last_seen <= DEFAULT_FORGET_AFTER_S]
    known = sorted(s.name for s in registered_schedules(live))
    if name not in known:
        raise ScheduleNotFound(_unknown(name, namespace, known))


def _unknown(name: str, namespace: str, known: list[str]) -> str:
    if not known:
        return (
            f"schedule {name!r}: no cron instance of namespace {namespace!r} has registered its schedules"
            " (a trigger is fired by the cron's leader: start tqadmin cron, or check --namespace)"
        )
    return (
        f"schedule {name!r} is not one the cron of namespace {namespace!r} runs ({', '.join(known)});"
        " check the name or --namespace"
    )
