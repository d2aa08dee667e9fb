"""Peeking from a screen: a short-lived admin in a worker thread (one connection per thread)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tqadmin.plugin.models import PeekResult

if TYPE_CHECKING:
    from tqadmin.tui.app import TqadminApp


def peek(app: TqadminApp, queue: str, count: int) -> PeekResult:
    admin = app.admin_factory(app.settings)
    try:
        return admin.peek(queue, count)
    finally:
        if admin is not app._admin:
            admin.close()
