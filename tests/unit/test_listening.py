"""The one listener loop: a subscription that ends (a dropped connection, a subscriber the server cut off)
is counted as a gap and read again after the shared backoff; a payload whose handling raises is counted
and the subscription goes on; closing stops it. A source that does not exist yet is looked for again with the
longer absent backoff, and is no gap. A listener is kept beyond its holders for a while, so the next one
takes it back with what it heard."""

from __future__ import annotations

import threading
import time

from tqadmin.connect.backoff import ABSENT_BASE_S, ABSENT_CAP_S, Backoff
from tqadmin.errors import Unreachable
from tqadmin.plugin.kit.listening import Deliver, KeptListeners, Listener, NothingToHear
from tqadmin.plugin.kit.retrying import Retrying


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


def test_a_source_not_there_yet_is_looked_for_with_the_absent_backoff_up_to_minutes_and_is_no_gap() -> None:
    waits: list[float] = []
    reads, delivered = [], []
    heard = threading.Event()

    def read(stop: threading.Event, deliver: Deliver) -> None:
        reads.append(1)
        if len(reads) <= 8:
            raise NothingToHear("Celery's event exchange 'celeryev' does not exist yet")
        deliver(b"at last")
        heard.set()
        stop.wait()

    listener = Listener("test", read, delivered.append)
    listener._absent.sleep = waits.append  # the waits asked for, none waited
    listener.listening()
    assert heard.wait(60)  # a deadline, not a speed
    listener.close()
    bounds = [min(ABSENT_CAP_S, ABSENT_BASE_S * 2**n) for n in range(8)]
    assert len(waits) == 8 and all(b / 2 <= w <= b for w, b in zip(waits, bounds, strict=True))
    assert max(waits) >= ABSENT_CAP_S / 2  # minutes, not seconds
    assert (delivered, listener.gaps, listener._absent.failures) == ([b"at last"], 0, 0)
    assert listener.last_error is not None and "celeryev" in listener.last_error


class _Held:
    def __init__(self) -> None:
        self.closed = threading.Event()

    def close(self) -> None:
        self.closed.set()


def test_a_kept_listener_outlives_its_holders_for_a_while_and_is_taken_back_with_what_it_heard() -> None:
    kept = KeptListeners(keep_s=0.2)
    first = kept.take("k", _Held)
    assert kept.take("k", _Held) is first  # a second holder shares it
    kept.release("k")
    kept.release("k")
    assert "k" in kept and kept.take("k", _Held) is first  # taken back before its time: the same one
    kept.release("k")
    assert first.closed.wait(60) and "k" not in kept  # nobody took it again: closed
    second = kept.take("k", _Held)
    assert second is not first and not second.closed.is_set()
    kept.close_all()
    assert second.closed.is_set() and "k" not in kept


def test_a_listener_taken_back_is_not_closed_by_the_release_before() -> None:
    kept = KeptListeners(keep_s=0.05)
    held = kept.take("k", _Held)
    kept.release("k")
    kept.take("k", _Held)
    assert not held.closed.wait(0.5)  # ten times its keep: still held
    kept.close_all()
