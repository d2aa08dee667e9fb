"""Trigger requests of the cron: the contract (``base``), its Redis and SQLite implementations."""
