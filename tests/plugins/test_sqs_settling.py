"""The SQS settler batches deletes and visibility changes, and never sits on one (a recording client)."""

from __future__ import annotations

import threading
import time
from typing import Any

from tqadmin_sqs.settling import LINGER_S, Settler


class Recording:
    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.calls: list[tuple[str, list[str]]] = []
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
        return self._answer("visibility", Entries)


def test_a_lone_ack_goes_out_after_the_linger_not_when_nine_more_come() -> None:
    client = Recording()
    settler = Settler(client, "SQS", "url", "q")
    settler.delete("r1")
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
