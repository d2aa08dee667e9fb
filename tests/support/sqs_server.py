"""moto's SQS in server mode on loopback, for the tests of the SQS plugin, and helpers to fill and read it.

Each pytest process (each xdist worker) starts its own server on a free port, so parallel runs share
nothing; a test's queues carry a unique name and are deleted after it.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import boto3

REGION = "us-east-1"
BROKER_URL = f"sqs://{REGION}"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": REGION,
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class MotoServer:
    """``python -m moto.server`` on 127.0.0.1, ready when this returns; :meth:`stop` ends it. ``log``
    keeps its request log (one line per call)."""

    def __init__(self, log: Path | None = None) -> None:
        for _ in range(5):  # another process may take the port between the probe and the bind
            self.port = free_port()
            output = log.open("wb") if log is not None else subprocess.DEVNULL
            self.process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=output,
                stderr=output,
            )
            if self._ready():
                self.endpoint = f"http://127.0.0.1:{self.port}"
                return
            self.stop()
        raise RuntimeError("moto's server did not start")

    def _ready(self) -> bool:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
            except OSError:
                time.sleep(0.05)
            else:
                return True
        return False

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def client(endpoint: str) -> Any:
    return boto3.client(
        "sqs",
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


class SqsQueues:
    """Queues a test creates on the moto server, with helpers to fill and read them; deleted after."""

    def __init__(self, endpoint: str, unique: str) -> None:
        self.endpoint = endpoint
        self.unique = unique
        self.client = client(endpoint)
        self.names: list[str] = []

    def name(self, suffix: str) -> str:
        """A queue name for this test that is not created (deleted at the end if something creates it)."""
        name = f"t-{self.unique}-{suffix}"
        self.names += [name, f"{name}-dlq", name.replace(".fifo", "-dlq.fifo")]
        return name

    def create(self, suffix: str, **attributes: str) -> str:
        name = self.name(suffix)
        if name.endswith(".fifo"):
            attributes.setdefault("FifoQueue", "true")
        self.client.create_queue(QueueName=name, Attributes=attributes)
        return name

    def create_with_dlq(self, suffix: str, max_receive_count: int = 5, **attributes: str) -> tuple[str, str]:
        """A queue whose redrive policy names a DLQ of its own (``<name>-own-dlq``)."""
        dlq = self.create(f"{suffix}-own-dlq")
        policy = {"deadLetterTargetArn": self.arn(dlq), "maxReceiveCount": max_receive_count}
        return self.create(suffix, RedrivePolicy=json.dumps(policy), **attributes), dlq

    def url(self, name: str) -> str:
        return str(self.client.get_queue_url(QueueName=name)["QueueUrl"])

    def arn(self, name: str) -> str:
        attributes = self.client.get_queue_attributes(QueueUrl=self.url(name), AttributeNames=["QueueArn"])
        return str(attributes["Attributes"]["QueueArn"])

    def send(self, name: str, body: str, **extra: Any) -> None:
        self.client.send_message(QueueUrl=self.url(name), MessageBody=body, **extra)

    def send_jobs(self, name: str, count: int, **fields: Any) -> list[str]:
        ids = [f"job-{i}" for i in range(count)]
        for job_id in ids:
            self.send(name, json.dumps({"task_type": fields.get("task_type", "t"), "id": job_id, **fields}))
        return ids

    def depth(self, name: str) -> int:
        """Messages in the queue: visible, in flight or delayed (moto's figures are exact)."""
        attributes = self.client.get_queue_attributes(
            QueueUrl=self.url(name),
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        return sum(int(v) for v in attributes.values())

    def visible(self, name: str) -> int:
        attributes = self.client.get_queue_attributes(
            QueueUrl=self.url(name), AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])

    def drain(self, name: str) -> list[dict[str, Any]]:
        """Every visible message, deleted: the raw SQS messages with their attributes."""
        taken: list[dict[str, Any]] = []
        url = self.url(name)
        while True:
            answer = self.client.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                MessageAttributeNames=["All"],
                MessageSystemAttributeNames=["All"],
                WaitTimeSeconds=0,
            )
            messages = answer.get("Messages", [])
            if not messages:
                return taken
            taken += messages
            self.client.delete_message_batch(
                QueueUrl=url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
            )

    def close(self) -> None:
        for name in set(self.names):
            with contextlib.suppress(self.client.exceptions.QueueDoesNotExist):
                self.client.delete_queue(QueueUrl=self.url(name))
