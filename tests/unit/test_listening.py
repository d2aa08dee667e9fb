"""The one listener loop: a subscription that ends (a dropped connection, a subscriber the server cut off)
is counted as a gap and read again after the shared backoff; a payload whose handling raises is counted
and the subscription goes on; closing stops it."""

from __future__ import annotations

import threading
import time

from tqadmin.backoff import Backoff
from tqadmin.errors import Unreachable
from tqadmin.plugin.listening import Deliver, Listener
from tqadmin.plugin.retrying import Retrying


def test_a_cut_off_subscription_is_a_gap_and_is_read_again_and_a_bad_payload_only_counted() -> None:
    reads, delivered = [], []

    def read(stop: threading.Event, deliver: Deliver) -> None:
        reads.append(1)
        if len(reads) <= 2:
            deliver(b"before")
            raise Unreachable("cut off by client-output-buffer-limit")
        deliver(b"boom")
        deliver(b"after")
        stop.wait()

    def handle(payload: bytes) -> None:
        if payload == b"boom":
            raise ValueError("hostile")
        delivered.append(payload)

    listener = Listener("test", read, handle, Retrying(Backoff(0.01, 0.02), sleep=time.sleep))
    listener.listening()
    deadline = time.monotonic() + 60  # a deadline, not a speed
    while b"after" not in delivered and time.monotonic() < deadline:
        time.sleep(0.01)
    listener.close()
    assert delivered == [b"before", b"before", b"after"]
    assert (listener.gaps, listener.undelivered, len(reads)) == (2, 1, 3)
    assert listener.last_error is not None and "client-output-buffer-limit" in listener.last_error
