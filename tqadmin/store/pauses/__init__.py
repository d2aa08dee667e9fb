"""Pauses: the contract (``base``), the audit of their expiry (``audit``), its Redis and SQLite
implementations."""
