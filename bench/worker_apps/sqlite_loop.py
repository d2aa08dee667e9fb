"""The ceiling under any SQLite queue, designed as tqadmin's consumer is: each turn is one transaction that
deletes the rows of the last batch (fenced by their token) and claims the next ``BATCH`` under a lease
(WAL, synchronous=NORMAL, as tqadmin's file); then each claimed job is run (counted) in the loop's thread.
It fills ``FILE`` with ``N`` rows first and ends when a claim finds none.

    python sqlite_loop.py FILE N BATCH
"""

import sqlite3
import sys
import time

from counting import ran

path, total, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=NORMAL")
db.execute("BEGIN")  # the table appears filled: the bench never sees it empty before the first claim
db.execute(
    "CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, body BLOB NOT NULL,"
    " available_ms INTEGER NOT NULL, token INTEGER)"
)
db.execute("CREATE INDEX jobs_due ON jobs (available_ms, id)")
db.executemany("INSERT INTO jobs (body, available_ms) VALUES (?, 0)", [(b'{"task_type":"noop"}',)] * total)
db.execute("COMMIT")

done: list[tuple[int, int]] = []
token = 0
while True:
    token += 1
    now = int(time.time() * 1000)
    db.execute("BEGIN IMMEDIATE")
    db.executemany("DELETE FROM jobs WHERE id = ? AND token = ?", done)
    claimed = db.execute(
        "SELECT id, body FROM jobs WHERE available_ms <= ? ORDER BY available_ms, id LIMIT ?", (now, batch)
    ).fetchall()
    ids = ",".join(str(row_id) for row_id, _ in claimed)
    if claimed:
        db.execute(f"UPDATE jobs SET token = ?, available_ms = ? WHERE id IN ({ids})", (token, now + 30_000))
    db.execute("COMMIT")
    if not claimed:
        break
    for row_id, _body in claimed:
        ran(row_id)
    done = [(row_id, token) for row_id, _ in claimed]
