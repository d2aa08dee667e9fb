"""Every opener of the state store's URL picks its implementation through one map of schemes
(``tqadmin.store.factory.by_scheme``): a URL of another scheme is one error, worded alike, masked."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tqadmin.errors import ConfigError
from tqadmin.store.factory import open_cron_store, open_history, open_pauses, open_store, open_triggers

# Each opener and what its error calls the store (the pauses and triggers live in the state store itself).
OPENERS: list[tuple[Callable[[str], object], str]] = [
    (open_store, "state store"),
    (open_history, "history store"),
    (open_pauses, "state store"),
    (open_cron_store, "cron store"),
    (lambda url: open_triggers(url, "default"), "state store"),
]


@pytest.mark.parametrize(("opener", "what"), OPENERS, ids=["store", "history", "pauses", "cron", "triggers"])
def test_an_unknown_scheme_is_one_error_worded_alike_and_masked(
    opener: Callable[[str], object], what: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        opener("mongodb://admin:s3cret@db:27017/0")
    assert str(raised.value) == (
        f"{what} URL mongodb://admin:***@db:27017/0 is not supported (use redis://, rediss://, sqlite://)"
    )
