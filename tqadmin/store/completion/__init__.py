"""Completion and heartbeats: the contract (``base``), its Redis and SQLite implementations, the common
``ctx.once`` effects."""
