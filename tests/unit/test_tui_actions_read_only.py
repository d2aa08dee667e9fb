"""The TUI refuses a write to a queue the broker marks read-only (another framework's), before sending."""

from __future__ import annotations

from tqadmin.config import Settings
from tqadmin.plugin.capabilities import Capabilities, Operation
from tqadmin.tui.actions import ActionRequest, refusal

EVERYTHING = Capabilities(supported=frozenset(Operation))
CELERY = "a Celery (kombu) queue: tqadmin only shows and peeks it"


def test_a_write_to_a_read_only_queue_is_refused_with_the_brokers_reason() -> None:
    for action in ("move", "replay", "purge"):
        reason = refusal(ActionRequest(action, "celery:default", "x"), Settings(), EVERYTHING, CELERY)
        assert reason == f"{action} is disabled for celery:default: it is {CELERY}"


def test_an_export_of_a_read_only_queue_is_a_read_and_goes_ahead() -> None:
    assert (
        refusal(ActionRequest("export", "celery:default", "f.jsonl"), Settings(), EVERYTHING, CELERY) is None
    )
    assert refusal(ActionRequest("move", "mine", "other"), Settings(), EVERYTHING, None) is None
