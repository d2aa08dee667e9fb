"""The management client skips the CA bundle for plain http only: https still verifies certificates."""

from __future__ import annotations

import http.server
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tqadmin_rabbitmq.management import ManagementClient
from tqadmin_rabbitmq.urls import ManagementEndpoint, management_endpoint

from tqadmin.errors import Unreachable


class _Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"[]"
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def self_signed_https(tmp_path: Path) -> Iterator[str]:
    """An https server on 127.0.0.1 whose certificate no CA signed."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    openssl = [
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
    ]
    subprocess.run(
        [*openssl, "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_an_https_endpoint_with_an_untrusted_certificate_is_refused_as_a_tls_failure(
    self_signed_https: str,
) -> None:
    client = ManagementClient(ManagementEndpoint(self_signed_https, "guest", "guest"), 5)
    try:
        with pytest.raises(Unreachable) as info:
            client.get_json("api/overview")
    finally:
        client.close()
    assert "TLS" in str(info.value) and "certificate" in str(info.value)


def test_a_plain_http_endpoint_answers_without_any_tls_set_up() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = ManagementClient(
        ManagementEndpoint(f"http://127.0.0.1:{server.server_address[1]}/", "u", "p"), 5
    )
    try:
        assert client.get_json("api/overview") == []
    finally:
        client.close()
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("broker", "api"),
    [
        ("amqps://ops:pw@rabbit.internal:5671/vh", "https://rabbit.internal:15671/"),
        ("amqp://ops:pw@rabbit.internal:5672/vh", "http://rabbit.internal:15672/"),
        ("amqps://[::1]/", "https://[::1]:15671/"),
    ],
)
def test_the_management_api_defaults_to_rabbitmqs_tls_port_for_amqps_and_its_plain_port_otherwise(
    broker: str, api: str
) -> None:
    assert management_endpoint(broker, None).base_url == api
