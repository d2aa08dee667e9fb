"""Turn jobs into confirmed messages and a per-id report; the broker work is the transport's.

Jobs are validated and completed (an id and a timestamp when absent, ``retry_count`` 0) before anything is
sent, so a bad line in a file is a usage error that publishes nothing rather than a half-published file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqadmin.errors import TqadminError, UsageError
from tqadmin.pipeline.job import Job, MalformedJob, decode_job
from tqadmin.plugin.models import Message
from tqadmin.plugin.transport import BrokerTransport, Outcome, Outgoing

DEFAULT_WINDOW = 512


@dataclass(frozen=True, slots=True)
class PublishReport:
    """What ``--report`` writes: counts and each job's outcome, keyed by job id."""

    jobs: tuple[tuple[str, Outcome], ...]
    error: TqadminError | None = None

    def count(self, outcome: Outcome) -> int:
        return sum(1 for _, o in self.jobs if o is outcome)

    @property
    def all_confirmed(self) -> bool:
        return self.error is None and all(o is Outcome.CONFIRMED for _, o in self.jobs)

    def to_json(self) -> dict[str, Any]:
        return {
            "confirmed": self.count(Outcome.CONFIRMED),
            "failed": self.count(Outcome.FAILED),
            "unknown": self.count(Outcome.UNKNOWN),
            "jobs": {job_id: outcome.value for job_id, outcome in self.jobs},
        }


def parse_job(text: str, where: str) -> Job:
    """One job as the worker will read it (no NaN, not too deep), so a job it would refuse is never sent.

    The size is the worker's business (``--max-payload-bytes``), so it is not limited here.
    """
    body = text.encode("utf-8", "surrogatepass")
    try:
        return decode_job(body, max_bytes=len(body))
    except MalformedJob as exc:
        raise UsageError(f"{where}: {exc}") from None


def load_jobs(job_json: str | None, path: Path | None) -> list[Job]:
    """The jobs of ``--job`` or of a JSONL file (blank lines skipped), each validated."""
    if job_json is not None:
        return [parse_job(job_json, "--job")]
    assert path is not None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    return [parse_job(line, f"{path} line {n}") for n, line in enumerate(lines, 1) if line.strip()]


def messages_for(jobs: Iterable[Job], queue: str) -> list[Outgoing]:
    """Each job encoded once, with its id, addressed to ``queue``."""
    return [(queue, Message(job.encode(), id=job.id)) for job in jobs]


def publish_jobs(
    transport: BrokerTransport,
    jobs: Sequence[Job],
    *,
    queue: str,
    options: Mapping[str, str] | None = None,
    rate: float | None = None,
    window: int = DEFAULT_WINDOW,
) -> PublishReport:
    """Publish ``jobs`` to ``queue`` (declared first), or, with addressing ``options`` (RabbitMQ's exchange
    and routing key), as addressed and declaring nothing, so an unroutable job fails rather than creating a
    queue nobody reads."""
    if not options:
        transport.declare(queue)
    result = transport.publish(messages_for(jobs, queue), window=window, rate=rate, options=options)
    return PublishReport(tuple(zip((j.id for j in jobs), result.outcomes, strict=True)), result.error)
