"""The state store: its contract (idempotency, heartbeats, leader lease) and implementations."""
