"""Which path a move or a replay takes, and running it, for the CLI and the dashboard alike.

The broker's own move (a RabbitMQ shovel, one step inside SQLite or Redis) is taken when it can do the job
exactly: no filter, no rate, no dry run, no ``skip_done``. A replay on a broker whose redrive sends dead
letters back where they came from (``Capabilities.server_side_replay``: an SQS message move task) takes that
by default as well, without a look at the messages first; elsewhere a replay takes the server-side move only
when asked or when the broker's move can count the replay, and only with one target for every message.
Otherwise, or when the broker's path turns out unavailable (then said so), the client path of
:mod:`tqadmin.admin.transfer` runs. The words of ``--server-side`` refusals name the CLI's flags because
only the CLI can insist on a side.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tqadmin.admin.plans import AlreadyDone, TransferRequest, build_plan
from tqadmin.admin.scan import distinct_targets
from tqadmin.admin.transfer import TransferOutcome, TransferPlan, replay_route, transfer
from tqadmin.errors import PartialFailure, UsageError
from tqadmin.plugin.base import BrokerAdmin, TransferSession, refuse_onto_itself
from tqadmin.plugin.capabilities import Operation
from tqadmin.plugin.models import ActionReport

Progress = Callable[[str], None]
Watch = Callable[[TransferSession], TransferSession]
"""Wraps the client path's session (the dashboard counts progress and cancels through it)."""

SERVER_SIDE_NOTE = (
    "x-tq-replays not incremented (a server-side move copies messages as they are;"
    " use --client-side to count)"
)


def _unwatched(session: TransferSession) -> TransferSession:
    return session


def client_only(request: TransferRequest) -> str | None:
    """Why the server-side path cannot honour ``request``, or ``None`` when it can."""
    if request.filter:
        return "--filter needs the client path"
    if request.rate:
        return "--rate needs the client path"
    if request.dry_run:
        return "--dry-run needs the client path"
    if request.skip_done:
        return "--skip-done needs the client path"
    return None


def want_server_side(request: TransferRequest, extra_reason: str | None = None) -> bool:
    """Whether to try the broker's path; ``side="server"`` that cannot be honoured is a usage error."""
    reason = client_only(request) or extra_reason
    if request.side == "server" and reason:
        raise UsageError(f"--server-side is not possible here: {reason}")
    return request.side != "client" and reason is None


def run_transfer(
    admin: BrokerAdmin,
    request: TransferRequest,
    progress: Progress,
    *,
    already_done: AlreadyDone | None = None,
    watch: Watch = _unwatched,
) -> TransferOutcome:
    """Move or replay as ``request`` says, on the path chosen above; progress lines go to ``progress``."""
    plan = build_plan(request, admin.deaths, already_done)
    report: ActionReport | None = None
    if request.replay:
        report = _replay_on_the_broker(admin, request, progress)
    elif want_server_side(request):
        report = run_server_side(
            admin, progress, "move", request.source, str(request.target), limit=request.limit
        )
    if report is not None:
        return TransferOutcome(report)
    return run_client_side(admin, plan, progress, watch)


def _replay_on_the_broker(
    admin: BrokerAdmin, request: TransferRequest, progress: Progress
) -> ActionReport | None:
    capabilities = admin.capabilities
    report: ActionReport | None = None
    if capabilities.server_side_replay:
        if want_server_side(request, "--limit needs the client path" if request.limit else None):
            report = run_redrive(admin, progress, request.source, request.target)
    # Elsewhere opt-in only where the server-side path copies messages as they are: it cannot add 1 to
    # x-tq-replays, which docs/interface.md promises for a replay.
    elif (request.side == "server" or (request.side is None and capabilities.server_side_rewrites)) and (
        want_server_side(request)
    ):
        target = request.target or _single_origin(admin, request)
        if target is not None:
            report = run_server_side(admin, progress, "replay", request.source, target, limit=request.limit)
    if report is None or capabilities.server_side_rewrites:
        return report
    return replace(report, detail=f"{report.detail}; {SERVER_SIDE_NOTE}")


def _single_origin(admin: BrokerAdmin, request: TransferRequest) -> str | None:
    """The one original queue of every message in the DLQ, or ``None`` (then the client path runs)."""
    targets = distinct_targets(admin.open_transfer(request.source), replay_route(None, admin.deaths))
    if len(targets) == 1 and None not in targets:
        return targets.pop()
    if request.side == "server":
        raise UsageError("--server-side is not possible here: the messages have different original queues")
    return None


def run_server_side(
    admin: BrokerAdmin, progress: Progress, action: str, source: str, target: str, *, limit: int | None
) -> ActionReport | None:
    """The broker's own move (a RabbitMQ shovel); ``None`` when it is not available (then said so). The one
    caller of every plugin's ``server_side_move``, so the refusal of a queue onto itself is made here once."""
    refuse_onto_itself(action, source, target)
    capabilities = admin.capabilities
    if not capabilities.supports(Operation.SERVER_SIDE_MOVE):
        progress(
            f"{action}: server-side move not available ({capabilities.why_not(Operation.SERVER_SIDE_MOVE)});"
            " moving through the client"
        )
        return None
    return _on_the_broker(
        admin,
        progress,
        action,
        f"{source} -> {target}",
        lambda: admin.server_side_move(source, target, limit),
    )


def run_redrive(admin: BrokerAdmin, progress: Progress, dlq: str, target: str | None) -> ActionReport | None:
    """The broker's own redrive of a dead-letter queue (an SQS message move task), to ``target`` or where
    each message came from; ``None`` when it is not available (then said so)."""
    refuse_onto_itself("replay", dlq, target)
    where = f"{dlq} -> {target or 'the queues the messages came from'}"
    return _on_the_broker(
        admin, progress, "replay", where, lambda: admin.server_side_replay(dlq, target, progress)
    )


def _on_the_broker(
    admin: BrokerAdmin, progress: Progress, action: str, where: str, call: Callable[[], ActionReport | None]
) -> ActionReport | None:
    progress(f"{action}: server-side, {where}")
    try:
        report = call()
    except KeyboardInterrupt:
        raise PartialFailure(
            f"{action} interrupted: a server-side move already started keeps moving the messages inside the"
            " broker (nothing is lost); run the same command again to wait for it to finish"
        ) from None
    if report is None:
        needs = admin.capabilities.server_side_needs
        progress(
            f"{action}: server-side move not available{f' (it needs {needs})' if needs else ''};"
            " moving through the client"
        )
        return None
    return replace(report, action=action)


def run_client_side(
    admin: BrokerAdmin, plan: TransferPlan, progress: Progress, watch: Watch = _unwatched
) -> TransferOutcome:
    """The client path: each batch's copies confirmed before its originals are acked."""
    where = f"{plan.source} -> {plan.target}" if plan.target else f"{plan.source} -> original queues"
    progress(f"{plan.action}: client-side, {where}")
    outcome = transfer(watch(admin.open_transfer(plan.source)), plan, progress)
    detail = "client-side: confirmed copies, originals acked after" + (
        f"; {outcome.report.detail}" if outcome.report.detail else ""
    )
    return TransferOutcome(replace(outcome.report, detail=detail), outcome.error)
