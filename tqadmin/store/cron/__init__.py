"""The cron's shared state: the contract (``base``: lease, fencing, tick records), its Redis and SQLite
implementations."""
