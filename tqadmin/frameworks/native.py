"""tqadmin's own jobs (interface.md, "Jobs"): a JSON object with a string ``task_type``. Read first, so a job
of ours whose fields happen to look like another framework's is still ours. The worker counts retries in
the ``x-tq-retry-count`` header (the body stays as the producer wrote it); else the body's ``retry_count``."""

from __future__ import annotations

from tqadmin.frameworks.decoding import count, epoch_seconds, name
from tqadmin.frameworks.parts import MessageParts
from tqadmin.frameworks.preview import call_preview
from tqadmin.frameworks.summary import TQADMIN, JobSummary
from tqadmin.plugin.models import HEADER_RETRY_COUNT

ENVELOPE_FIELDS = frozenset({"task_type", "id", "timestamp", "retry_count"})


def read(parts: MessageParts) -> JobSummary | None:
    job = parts.object
    if job is None or not isinstance(job.get("task_type"), str):
        return None
    retries = count(parts.headers.get(HEADER_RETRY_COUNT))
    own_fields = {key: value for key, value in job.items() if key not in ENVELOPE_FIELDS}
    return JobSummary(
        TQADMIN,
        id=parts.known_id or name(job.get("id")),
        task=name(job["task_type"]),
        args=call_preview(None, own_fields) if own_fields else None,
        retries=count(job.get("retry_count")) if retries is None else retries,
        sent_at=epoch_seconds(job.get("timestamp")),
    )
