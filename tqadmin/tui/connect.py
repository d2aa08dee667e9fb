"""Connecting the admin face as the CLI does, and turning any failure into one line for the screen."""

from __future__ import annotations

from tqadmin.config import Settings
from tqadmin.errors import TqadminError
from tqadmin.masking import mask_text
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.plugin.workers import WorkerReading


def connect_admin(settings: Settings) -> BrokerAdmin:
    """The configured broker's admin face."""
    return plugin_for_url(settings.broker_url).admin(settings.broker_config())


def describe_error(exc: BaseException) -> str:
    """One line for a banner or notification; an unexpected exception is named as a bug, secrets masked."""
    if isinstance(exc, TqadminError):
        return mask_text(str(exc))
    return mask_text(f"internal error (a bug): {type(exc).__name__}: {exc}")


def framework_workers(admin: BrokerAdmin) -> tuple[WorkerReading | None, str | None]:
    """Other frameworks' workers where the plugin reads their registries (``None`` where it reads none),
    or the one line saying why they could not be read: the queues polled with them are shown either way."""
    if not type(admin).capabilities.worker_registries:
        return None, None
    try:
        return admin.framework_workers(), None
    except Exception as exc:
        return None, describe_error(exc)
