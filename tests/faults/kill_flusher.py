"""The leader's history flush, SIGKILLed between its commit and its trim.

``python -m tests.faults.kill_flusher CONFIG`` runs :func:`icefloe.jobs.history.flush.flush`
with production's wiring (the Redis ledger, the configured catalog), the stream's trim
replaced by a ``kill -9`` of the process: the rows and the newest id are committed to the
history table, the stream still holds every record.
"""

from __future__ import annotations

import os
import signal
import sys

from icefloe.base.catalog import load_catalog
from icefloe.base.config import load_config
from icefloe.jobs.history.flush import flush
from icefloe.state.open import open_state


def die(upto_id: str) -> None:
    print(f"kill -9 after the commit, before trimming up to {upto_id}", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def main(config_path: str) -> None:
    cfg = load_config(config_path)
    ledger = open_state(cfg).ledger
    ledger.trim_history = die  # type: ignore[method-assign]
    flush(cfg, load_catalog(cfg), ledger, "killed-decider")
    print("not killed", flush=True)  # the test fails on this


if __name__ == "__main__":
    main(sys.argv[1])
