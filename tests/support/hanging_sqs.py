"""An SQS endpoint (JSON protocol, as botocore speaks it) on loopback that lists its queues and then stops
answering: a listing half-way through when a process is told to stop (tests/exporter/test_exporter_stop.py,
tests/plugins/test_sqs_admin.py)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

QUEUES = 40


class HangingSqs(ThreadingHTTPServer):
    """An SQS endpoint (JSON protocol) that lists :data:`QUEUES` queues and answers the attributes of each
    once, for a first listing; every later GetQueueAttributes is held unanswered until :meth:`close`."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Answer)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.answered = 0
        self.held = 0
        self.released = threading.Event()
        self._lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def answer(self, target: str) -> dict[str, Any] | None:
        if target == "AmazonSQS.ListQueues":
            return {"QueueUrls": [f"{self.url}/000000000000/q-{i:03d}" for i in range(QUEUES)]}
        with self._lock:
            first = self.answered < QUEUES
            if first:
                self.answered += 1
            else:
                self.held += 1
        if not first:
            self.released.wait()
            return None
        return {
            "Attributes": {"ApproximateNumberOfMessages": "3", "ApproximateNumberOfMessagesNotVisible": "0"}
        }

    def close(self) -> None:
        self.released.set()
        self.shutdown()
        self.server_close()


class _Answer(BaseHTTPRequestHandler):
    server: HangingSqs

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        answer = self.server.answer(self.headers.get("X-Amz-Target", ""))
        if answer is None:
            return
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass
