"""SIGTERM as a request to stop, for the long-running commands (``actor``, ``decide``).

Airflow's task kill, ``systemctl stop`` and Kubernetes send SIGTERM and wait before a
SIGKILL: the loops finish what they are doing (an action and its ack, a decider step),
hand their leases back and flush the history, instead of dying mid-way.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger("icefloe")


@contextmanager
def on_sigterm(stop: Callable[[], None]) -> Iterator[None]:
    """While inside: SIGTERM calls ``stop`` (and logs one line) instead of killing the
    process. Outside the main thread (signals can only be caught there) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        log.warning("SIGTERM: finishing the work under way, then exiting")
        stop()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
