"""Derive what we connect to from an ``amqp://`` URL: the vhost, and the management API's URL and login.

docs/interface.md: the management API defaults to ``http://<host>:15672/`` (``https://<host>:15671/``, the
management plugin's TLS listener, for ``amqps://``) and, when its own URL carries no credentials, uses the
broker URL's.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

from tqadmin.errors import ConfigError
from tqadmin.show.masking import MASK, mask_url

DEFAULT_MANAGEMENT_PORT = 15672
DEFAULT_MANAGEMENT_TLS_PORT = 15671


@dataclass(frozen=True, slots=True)
class ManagementEndpoint:
    base_url: str  # without credentials, ending in '/': safe to show
    username: str
    password: str

    @property
    def shown_user(self) -> str:
        """The user name as messages may show it: a user part without a password is a token, masked."""
        return self.username if self.password else MASK

    def __repr__(self) -> str:
        return f"ManagementEndpoint(base_url={self.base_url!r}, username={self.shown_user!r}, password='***')"


def vhost_of(amqp_url: str) -> str:
    """The vhost an AMQP URL names; an empty path is the default vhost ``/``."""
    path = urlsplit(amqp_url).path
    return unquote(path[1:]) if len(path) > 1 else "/"


def management_endpoint(amqp_url: str, management_url: str | None) -> ManagementEndpoint:
    broker = urlsplit(amqp_url)
    username = unquote(broker.username) if broker.username else "guest"
    password = unquote(broker.password) if broker.password else "guest"
    if management_url:
        api = urlsplit(management_url)
        if api.scheme not in ("http", "https"):
            raise ConfigError(
                f"management URL {mask_url(management_url)!r} must start with http:// or https://"
            )
        if api.username:
            username = unquote(api.username)
            password = unquote(api.password or "")
        host = api.hostname or "127.0.0.1"
        port = _port(management_url)
        scheme = api.scheme
        path = api.path if api.path.endswith("/") else api.path + "/"
    else:
        host = broker.hostname or "127.0.0.1"
        tls = broker.scheme == "amqps"
        port = f":{DEFAULT_MANAGEMENT_TLS_PORT if tls else DEFAULT_MANAGEMENT_PORT}"
        scheme = "https" if tls else "http"
        path = "/"
    if ":" in host:
        host = f"[{host}]"
    return ManagementEndpoint(urlunsplit((scheme, f"{host}{port}", path, "", "")), username, password)


def _port(url: str) -> str:
    """The explicit ``:port`` of a management URL, or ``""``; a bad one is a config error, not a crash."""
    try:
        port = urlsplit(url).port
    except ValueError:
        raise ConfigError(f"management URL {mask_url(url)!r} has a bad port") from None
    return "" if port is None else f":{port}"
