"""The plan of a move or a replay, from what a user asked in either face.

The CLI fills a :class:`TransferRequest` from its flags, the dashboard from its dialog; both get their
:class:`~tqadmin.admin.transfer.TransferPlan` here, so the filter, the route, the replay count and the words
for a dead letter without an origin are written once, and neither face builds a plan of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from tqadmin.admin.filters import parse_filter
from tqadmin.admin.scan import Deaths, no_deaths
from tqadmin.admin.transfer import TransferPlan, count_replay, replay_route, to_queue
from tqadmin.errors import UsageError
from tqadmin.plugin.base import refuse_onto_itself
from tqadmin.plugin.models import HEADER_ORIGINAL_QUEUE

Side = Literal["server", "client"]
AlreadyDone = Callable[[Sequence[str]], set[str]]

TRANSFERS = frozenset({"move", "replay"})
NO_ORIGIN = f"no {HEADER_ORIGINAL_QUEUE} header, no record of the queue it died in, and no target queue given"
NO_TARGET = "no target queue"


@dataclass(frozen=True, slots=True)
class TransferRequest:
    """A move (to ``target``) or a replay (to ``target``, or each message's original queue when ``None``).

    ``side`` is the path the user insists on (``"server"``: the broker's own move or nothing; ``"client"``:
    never the broker's); ``None`` lets :mod:`tqadmin.admin.paths` choose. ``skip_done`` leaves jobs the
    completion store marks done where they are. A request that cannot run anywhere (a move without a target
    or onto its source, a filter that does not parse) is refused here, before anything connects.
    """

    action: str
    source: str
    target: str | None = None
    filter: str | None = None
    limit: int | None = None
    rate: float | None = None
    dry_run: bool = False
    skip_done: bool = False
    side: Side | None = None

    def __post_init__(self) -> None:
        if self.action not in TRANSFERS:
            raise UsageError(f"{self.action} is not a move or a replay")
        if self.action == "move" and not self.target:
            raise UsageError("move needs a target queue")
        refuse_onto_itself(self.action, self.source, self.target)
        parse_filter(self.filter)  # a bad term is exit 2 now, not after connecting

    @property
    def replay(self) -> bool:
        return self.action == "replay"


def build_plan(
    request: TransferRequest, deaths: Deaths = no_deaths, already_done: AlreadyDone | None = None
) -> TransferPlan:
    """The client path's plan: a replay routes each message home (its header, else the broker's record of
    its death, through ``deaths``) unless a target is given, and counts the replay on the copy."""
    return TransferPlan(
        action=request.action,
        source=request.source,
        target=request.target,
        route=replay_route(request.target, deaths) if request.replay else to_queue(str(request.target)),
        matches=parse_filter(request.filter),
        rewrite=count_replay if request.replay else (lambda message: message),
        limit=request.limit,
        rate=request.rate,
        dry_run=request.dry_run,
        already_done=already_done,
        unrouted_reason=NO_ORIGIN if request.replay else NO_TARGET,
    )
