"""Queue and task history: the contract and the size bound (``base``), what a point holds (``points``), task
increments (``increments``), its Redis and SQLite implementations."""
