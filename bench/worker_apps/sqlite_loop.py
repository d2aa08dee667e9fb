"""The floor under any SQLite queue: claim one row under a lease, then delete it fenced by its token, each
one transaction (WAL, synchronous=NORMAL), in a plain loop. Prints jobs/s over ``N`` rows.

    python sqlite_loop.py FILE N
"""

import sqlite3
import sys
import time

path, total = sys.argv[1], int(sys.argv[2])
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=NORMAL")
db.execute(
    "CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, body BLOB NOT NULL,"
    " available_ms INTEGER NOT NULL, token INTEGER)"
)
db.execute("CREATE INDEX jobs_due ON jobs (available_ms, id)")
db.execute("BEGIN")
db.executemany("INSERT INTO jobs (body, available_ms) VALUES (?, 0)", [(b'{"task_type":"noop"}',)] * total)
db.execute("COMMIT")

started = time.perf_counter()
for token in range(1, total + 1):
    now = int(time.time() * 1000)
    db.execute("BEGIN IMMEDIATE")
    (row_id, _body) = db.execute(
        "UPDATE jobs SET token = ?, available_ms = ? WHERE id ="
        " (SELECT id FROM jobs WHERE available_ms <= ? ORDER BY available_ms, id LIMIT 1) RETURNING id, body",
        (token, now + 30_000, now),
    ).fetchone()
    db.execute("COMMIT")
    db.execute("BEGIN IMMEDIATE")
    db.execute("DELETE FROM jobs WHERE id = ? AND token = ?", (row_id, token))
    db.execute("COMMIT")
print(total / (time.perf_counter() - started))
