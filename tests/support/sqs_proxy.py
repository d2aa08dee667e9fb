"""A small SQS endpoint on loopback for what moto does not model: it forwards every call (AWS's JSON
protocol) to moto, except those a test takes over (``hooks``): partial batch failures, throttling, AWS's
5-minute FIFO deduplication window, and message move tasks (which moto answers with HTTP 500).
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import boto3


@dataclass(frozen=True)
class Answer:
    """What the endpoint answers instead of moto."""

    status: int
    document: dict[str, Any]


def error(code: str, message: str, status: int = 400) -> Answer:
    return Answer(status, {"__type": f"com.amazonaws.sqs#{code}", "message": message})


Hook = Callable[[dict[str, Any]], Answer | dict[str, Any] | None]
"""Given a call's payload: an answer, a payload to forward instead, or ``None`` to forward it as it is."""


class SqsProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.hooks: dict[str, Hook] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                operation = self.headers.get("X-Amz-Target", "").rsplit(".", 1)[-1]
                payload = json.loads(body or b"{}")
                proxy.calls.append((operation, payload))
                hook = proxy.hooks.get(operation)
                outcome = hook(payload) if hook else None
                if isinstance(outcome, Answer):
                    self._reply(outcome.status, json.dumps(outcome.document).encode())
                    return
                if isinstance(outcome, dict):
                    body = json.dumps(outcome).encode()
                status, answer = proxy.forward(dict(self.headers), body)
                self._reply(status, answer)

            def _reply(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.0")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def forward(self, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection(self.upstream.hostname or "", self.upstream.port, timeout=30)
        headers = {k: v for k, v in headers.items() if k.lower() not in ("host", "content-length")}
        connection.request("POST", "/", body, headers)
        response = connection.getresponse()
        answer = response.read()
        connection.close()
        return response.status, answer

    def count(self, operation: str) -> int:
        return sum(1 for name, _ in self.calls if name == operation)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class MoveTasks:
    """StartMessageMoveTask and ListMessageMoveTasks as AWS runs them: one task per source queue at a time,
    moving each message (send, then delete) at ``rate`` a second, to the destination queue."""

    upstream: str
    rate: float = 200.0
    tasks: list[dict[str, Any]] = field(default_factory=list)

    def install(self, proxy: SqsProxy) -> None:
        proxy.hooks["StartMessageMoveTask"] = self.start
        proxy.hooks["ListMessageMoveTasks"] = self.list

    def start(self, payload: dict[str, Any]) -> Answer:
        source = payload["SourceArn"]
        if any(t["SourceArn"] == source and t["Status"] == "RUNNING" for t in self.tasks):
            return error(
                "UnsupportedOperation", "There is already a task running. Only one active task is allowed"
            )
        client = boto3.client("sqs", endpoint_url=self.upstream, region_name="us-east-1")
        source_url = client.get_queue_url(QueueName=source.rsplit(":", 1)[-1])["QueueUrl"]
        count = client.get_queue_attributes(
            QueueUrl=source_url, AttributeNames=["ApproximateNumberOfMessages"]
        )
        task = {
            "TaskHandle": uuid.uuid4().hex,
            "SourceArn": source,
            "DestinationArn": payload.get("DestinationArn"),
            "Status": "RUNNING",
            "ApproximateNumberOfMessagesMoved": 0,
            "ApproximateNumberOfMessagesToMove": int(count["Attributes"]["ApproximateNumberOfMessages"]),
            "StartedTimestamp": int(time.time() * 1000),
        }
        self.tasks.insert(0, task)
        threading.Thread(target=self._run, args=(task, client, source_url), daemon=True).start()
        return Answer(200, {"TaskHandle": task["TaskHandle"]})

    def _run(self, task: dict[str, Any], client: Any, source_url: str) -> None:
        try:
            self._move(task, client, source_url)
        except Exception as exc:  # the test is over and its queues are gone
            task.update(Status="FAILED", FailureReason=str(exc))

    def _move(self, task: dict[str, Any], client: Any, source_url: str) -> None:
        target_url = client.get_queue_url(QueueName=str(task["DestinationArn"]).rsplit(":", 1)[-1])[
            "QueueUrl"
        ]
        while task["ApproximateNumberOfMessagesMoved"] < task["ApproximateNumberOfMessagesToMove"]:
            got = client.receive_message(
                QueueUrl=source_url, MaxNumberOfMessages=1, MessageAttributeNames=["All"]
            )
            for message in got.get("Messages", []):
                extra = (
                    {"MessageAttributes": message["MessageAttributes"]}
                    if message.get("MessageAttributes")
                    else {}
                )
                client.send_message(QueueUrl=target_url, MessageBody=message["Body"], **extra)
                client.delete_message(QueueUrl=source_url, ReceiptHandle=message["ReceiptHandle"])
                task["ApproximateNumberOfMessagesMoved"] += 1
            time.sleep(1 / self.rate)
        task["Status"] = "COMPLETED"

    def list(self, payload: dict[str, Any]) -> Answer:
        found = [dict(t) for t in self.tasks if t["SourceArn"] == payload["SourceArn"]]
        return Answer(200, {"Results": found[: int(payload.get("MaxResults", 1))]})


class FifoDeduplication:
    """Watches every FIFO send for AWS's rule that moto does not keep: a deduplication id seen in the last 5
    minutes is taken and dropped, even when the message that first carried it was deleted long ago. A copy
    that reused its original's id would be lost on AWS; ``reused`` lists any such id."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.reused: list[str] = []

    def install(self, proxy: SqsProxy) -> None:
        proxy.hooks["SendMessageBatch"] = lambda payload: self._note(payload.get("Entries", []))
        proxy.hooks["SendMessage"] = lambda payload: self._note([payload])

    def _note(self, entries: list[dict[str, Any]]) -> None:
        for entry in entries:
            dedup_id = entry.get("MessageDeduplicationId")
            if dedup_id is not None:
                if dedup_id in self.seen:
                    self.reused.append(dedup_id)
                self.seen.append(dedup_id)
