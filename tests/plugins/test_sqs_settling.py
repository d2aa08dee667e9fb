"""The SQS settler batches deletes and visibility changes, and never sits on one (a recording client)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqs_kit import poll
from tqadmin_sqs.settling import LINGER_S, Settler

from tqadmin.plugin.background import Background, PluginFault


class Recording:
    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.visibilities: dict[str, int] = {}  # receipt -> the visibility timeout it was given
        self.refuse = refuse
        self.lock = threading.Lock()

    def _answer(self, name: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
        with self.lock:
            self.calls.append((name, [e["ReceiptHandle"] for e in entries]))
        return {
            "Successful": [{"Id": e["Id"]} for e in entries if e["ReceiptHandle"] not in self.refuse],
            "Failed": [
                {"Id": e["Id"], "Code": "ReceiptHandleIsInvalid"}
                for e in entries
                if e["ReceiptHandle"] in self.refuse
            ],
        }

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        return self._answer("delete", Entries)

    def change_message_visibility_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.visibilities.update((e["ReceiptHandle"], e["VisibilityTimeout"]) for e in Entries)
        return self._answer("visibility", Entries)


def test_a_lone_ack_goes_out_after_the_linger_not_when_nine_more_come() -> None:
    client = Recording()
    settler = Settler(client, "SQS", "url", "q")
    settler.delete("r1")
    poll(lambda: client.calls, 60, "the lone ack")  # sent alone after its linger: nothing else comes
    time.sleep(LINGER_S * 6)
    assert client.calls == [("delete", ["r1"])]
    settler.close()


def test_many_acks_go_in_batches_of_ten_and_close_sends_the_rest() -> None:
    client = Recording()
    settler = Settler(client, "SQS", "url", "q")
    for i in range(23):
        settler.delete(f"r{i}")
    settler.change_visibility(["v1", "v2"], 0)
    settler.close()
    deletes = [receipts for name, receipts in client.calls if name == "delete"]
    assert sorted(r for batch in deletes for r in batch) == sorted(f"r{i}" for i in range(23))
    assert max(len(b) for b in deletes) == 10 and len(deletes) <= 4
    assert ("visibility", ["v1", "v2"]) in client.calls


def test_a_waiting_delete_says_whether_sqs_took_it() -> None:
    client = Recording(refuse=frozenset({"stale"}))
    settler = Settler(client, "SQS", "url", "q")
    assert settler.delete("fresh", wait=True) is True
    assert settler.delete("stale", wait=True) is False
    settler.close()


class Broken(Recording):
    """A client whose every call raises what no driver raises: the settler thread's death."""

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        raise RuntimeError("a bug in the settler's path")

    change_message_visibility_batch = delete_message_batch


def finishes(call: Callable[[], object]) -> list[object]:
    """Run ``call`` in a thread; what it returned, once it has (a hang fails the test, however slow)."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "hung waiting for a dead settler"
    return result


def test_each_visibility_change_keeps_its_own_timeout_in_a_shared_batch() -> None:
    """A FIFO copy deferred for 300 s and a release (0 s) in one batch: each keeps its own visibility."""
    client = Recording()
    settler = Settler(client, "SQS", "url", "q")
    settler.change_visibility(["early-copy"], 300)
    settler.change_visibility(["released-1", "released-2"], 0)
    settler.close()
    assert sorted(client.visibilities.items()) == [("early-copy", 300), ("released-1", 0), ("released-2", 0)]


def test_a_settler_thread_that_died_is_reported_to_its_owner_and_never_hangs_a_waiting_delete() -> None:
    background = Background()
    settler = Settler(Broken(), "SQS", "url", "q", background)
    assert finishes(lambda: settler.delete("r1", wait=True)) == [False]
    assert isinstance(background.fault, PluginFault)
    assert "tq-sqs-settle died: RuntimeError: a bug in the settler's path" in str(background.fault)
    with pytest.raises(PluginFault):
        background.check()
    assert finishes(lambda: settler.delete("r2", wait=True)) == [False]  # after the death, too


def test_closing_a_settler_whose_thread_died_returns() -> None:
    settler = Settler(Broken(), "SQS", "url", "q")
    settler.delete("r1")
    finishes(lambda: settler.delete("r2", wait=True))
    finishes(settler.close)
