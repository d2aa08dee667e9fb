"""Connecting the admin face as the CLI does, and turning any failure into one line for a face to show."""

from __future__ import annotations

from tqadmin.config import Settings
from tqadmin.errors import TqadminError
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.show.masking import mask_text


def connect_admin(settings: Settings) -> BrokerAdmin:
    """The configured broker's admin face."""
    return plugin_for_url(settings.broker_url).admin(settings.broker_config())


def describe_error(exc: BaseException) -> str:
    """One line for a banner, a notification or a log; an unexpected exception is named as a bug, secrets
    masked."""
    if isinstance(exc, TqadminError):
        return mask_text(str(exc))
    return mask_text(f"internal error (a bug): {type(exc).__name__}: {exc}")
