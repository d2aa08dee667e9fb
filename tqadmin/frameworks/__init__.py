"""Other frameworks' messages understood: Celery, Dramatiq, RQ and Sidekiq beside tqadmin's own jobs.

A pure layer between the plugin contract and the admin actions: it reads a
:class:`~tqadmin.plugin.models.Message` (headers, properties, body bytes) and says which framework wrote it,
the job's id, task name, an arguments preview, retries, and where the framework records them the last error
and when it was sent. It imports no driver and never unpickles; it never changes a message.
"""

from tqadmin.frameworks.recognise import summarise
from tqadmin.frameworks.summary import CELERY, DRAMATIQ, RQ, SIDEKIQ, TQADMIN, UNKNOWN, JobSummary, iso_utc

__all__ = ["CELERY", "DRAMATIQ", "RQ", "SIDEKIQ", "TQADMIN", "UNKNOWN", "JobSummary", "iso_utc", "summarise"]
