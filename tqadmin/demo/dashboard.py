"""Run the demo behind the dashboard: the app owns the terminal, a thread supervises the workers.

The app gets the demo's own settings (the same broker and store), so what it shows is what any ``tqadmin``
would show on these brokers. When the duration ends, the workers give up, or SIGTERM arrives, the
supervising thread asks the app to exit; when the user quits the app, the demo stops.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable
from typing import Any

from tqadmin.demo.orchestrator import Demo
from tqadmin.demo.summary import Summary


def run_with_dashboard(demo: Demo, make_app: Callable[[], Any], duration_s: float | None) -> Summary:
    """Run until the app is quit (or the demo ends), then stop the demo and return its summary.

    The supervising thread lives until the demo has finished: workers it restarted are tied to it by the
    kernel's parent-death signal, so it must not end while they are still needed to drain the queues.
    """
    app = make_app()
    failure: list[BaseException] = []
    app_closed = threading.Event()
    finished = threading.Event()

    def supervise() -> None:
        try:
            demo.wait(duration_s)
        except BaseException as exc:  # reported after the app has given the terminal back
            failure.append(exc)
        if not app_closed.is_set():
            with contextlib.suppress(RuntimeError):  # the app ended in the meantime
                app.call_from_thread(app.exit)
        finished.wait()

    watcher = threading.Thread(target=supervise, name="demo-supervisor", daemon=True)
    try:
        demo.start()
        watcher.start()
        app.run()
    finally:
        app_closed.set()
        demo.stop_requested.set()
        try:
            summary = demo.finish()
        finally:
            finished.set()
            if watcher.is_alive():
                watcher.join()
    if failure:
        raise failure[0]
    code = getattr(app, "return_code", 0)
    if code:  # Textual has printed why; say that the demo ended because of it
        return dataclasses.replace(
            summary, notes=(*summary.notes, f"the dashboard ended with an error (exit code {code})")
        )
    return summary
