"""The x-tq-* headers of a dead-lettered job: complete, masked, and bounded."""

from __future__ import annotations

from tqadmin.pipeline.deadletter import MAX_ERROR_BYTES, dead_letter_headers, describe_error


def test_the_error_is_class_and_message_with_secrets_masked_and_cut_to_2_kib() -> None:
    text = describe_error(RuntimeError("login amqp://bob:hunter2@db/ failed " + "é" * 3000))
    assert text.startswith("RuntimeError: login amqp://bob:***@db/")
    assert "hunter2" not in text
    assert len(text.encode("utf-8")) <= MAX_ERROR_BYTES


def test_first_seen_is_carried_over_from_an_earlier_retry() -> None:
    headers = dead_letter_headers(
        reason="max_retries",
        error="E: x",
        attempts=4,
        queue="q",
        headers={"x-tq-first-seen": "2026-01-01T00:00:00.000Z"},
        now_s=1_800_000_000,
    )
    assert headers == {
        "x-tq-reason": "max_retries",
        "x-tq-error": "E: x",
        "x-tq-attempts": 4,
        "x-tq-original-queue": "q",
        "x-tq-first-seen": "2026-01-01T00:00:00.000Z",
        "x-tq-dead-lettered-at": "2027-01-15T08:00:00.000Z",
    }
