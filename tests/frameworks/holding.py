"""A job that stays busy for as long as the test looks at it, for RQ (``holding.hold``) and Celery alike.

A job that naps a fixed time is busy only for that window, and a test that polls a loaded machine can look
too late; one that runs until the test creates its ``release`` file is seen busy in order, not in time.
"""

import time
from pathlib import Path

LONGEST_S = 60.0  # a test that never lets it go does not leave a worker busy for ever


def hold(release: str) -> None:
    deadline = time.monotonic() + LONGEST_S
    while not Path(release).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
