"""The reference pipeline: jobs, publisher, worker, retries, dedup and cron. Imports no driver."""
