"""The common ``ctx.once`` effects, written once for both state stores: set a field, add to a counter.

``ctx.once(fn)`` hands ``fn`` the store's own transaction
(:data:`~tqadmin.store.completion.base.Transaction`): a Redis pipeline in ``MULTI``, or an SQLite connection
inside the completion's ``BEGIN IMMEDIATE``. An effect written against one of them fails on the other, and the
default store is the embedded SQLite one, so a task that only needs to record a value or count something uses
these instead and runs on either::

    ctx.once(set_field("thumbs", ctx.job_id, thumb))
    ctx.once(add("charges", ctx.job_id, 1))

Both stores keep the same shape, a hash of fields named ``name``:

- Redis: the hash at key ``name`` (``HSET``, ``HINCRBY``). On a Redis Cluster the key must share the job's
  slot (:mod:`tqadmin.store.keys`): name it with the job's tag, ``f"thumbs:{job_tag(ctx.job_id)}"``.
- SQLite: rows ``(name, field, value)`` of the table ``tq_effects`` in the store's file, created by the
  first effect that needs it.

A value is text or a number. :func:`add` on a field that holds no integer fails: on SQLite before anything is
written (the completion rolls back); on Redis ``HINCRBY`` fails at ``EXEC``, which applies the others.
"""

from __future__ import annotations

import re
import sqlite3

from tqadmin.store.completion.base import Effect, Transaction

Value = str | int | float
"""What a field holds: Redis stores it as text, SQLite as given."""

TABLE = "tq_effects"
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {TABLE}"
    " (name TEXT NOT NULL, field TEXT NOT NULL, value, PRIMARY KEY (name, field))"
)
_UPSERT = (
    f"INSERT INTO {TABLE} (name, field, value) VALUES (?, ?, ?)"  # noqa: S608 - constant table name
    " ON CONFLICT (name, field) DO UPDATE SET value = excluded.value"
)
_INTEGER = re.compile(r"-?[0-9]+")


def set_field(name: str, field: str, value: Value) -> Effect:
    """An effect setting ``field`` of ``name`` to ``value`` (replacing what it held)."""
    _check_value(value)

    def effect(tx: Transaction) -> None:
        if isinstance(tx, sqlite3.Connection):
            tx.execute(_SCHEMA)
            tx.execute(_UPSERT, (name, field, value))
        else:
            tx.hset(name, field, value)

    return effect


def add(name: str, field: str, amount: int = 1) -> Effect:
    """An effect adding ``amount`` to the integer in ``field`` of ``name`` (0 when there is none)."""
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise TypeError(f"add() takes an integer amount, not {type(amount).__name__}")

    def effect(tx: Transaction) -> None:
        if isinstance(tx, sqlite3.Connection):
            tx.execute(_SCHEMA)
            row = tx.execute(
                f"SELECT value FROM {TABLE} WHERE name = ? AND field = ?",  # noqa: S608 - constant table name
                (name, field),
            ).fetchone()
            tx.execute(_UPSERT, (name, field, (0 if row is None else _integer(row[0], name, field)) + amount))
        else:
            tx.hincrby(name, field, amount)

    return effect


def _check_value(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise TypeError(f"a field holds text or a number, not {type(value).__name__}")


def _integer(value: object, name: str, field: str) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    raise ValueError(f"field {field!r} of {name!r} holds {value!r}, not an integer: cannot add to it")
