"""``icefloe optimize`` with one fault injected, in a process of its own.

``python -m tests.faults.faulty_optimize FAULT CONFIG TABLE`` runs the very command
(``icefloe --config CONFIG optimize TABLE``) with :data:`FAULTS`' one patch:

* ``kill-mid-write``: once the Arrow engine's new files are recorded under the run's lease,
  the first one is half written and the whole process group SIGKILLed;
* ``cleanup-fails``: verification fails after every file is written, and the rewrite's own
  clean-up cannot delete anything (the storage went away for deletes, as S3 does in an
  outage): the files are left to the ad-hoc run's clean-up, which reads the table first.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterable, Sequence
from typing import Any

FAULTS = ("kill-mid-write", "cleanup-fails")


def kill_mid_write() -> None:
    from icefloe.service.actor import adhoc

    record = adhoc.AdhocGuard.before_write

    def killing(self: adhoc.AdhocGuard, paths: Sequence[str], prefixes: Sequence[str]) -> None:
        record(self, paths, prefixes)
        if paths:
            with open(paths[0].removeprefix("file:"), "wb") as half:
                half.write(b"PAR1" + os.urandom(2048))  # a Parquet file cut short
            print("kill -9 mid-write", flush=True)
            os.killpg(os.getpgid(0), signal.SIGKILL)

    adhoc.AdhocGuard.before_write = killing  # type: ignore[method-assign]


def cleanup_fails() -> None:
    from icefloe.base.errors import OperationFailed
    from icefloe.jobs.rewrite.exact import ExactRewrite

    def unverified(self: Any, results: Any, also_check: Any) -> None:
        raise OperationFailed("verification failed (injected); nothing committed")

    def storage_gone(self: Any, results: Iterable[Any]) -> None:
        print("clean-up failed: storage unavailable", flush=True)

    ExactRewrite._verify = unverified  # type: ignore[method-assign]
    ExactRewrite.discard = storage_gone  # type: ignore[method-assign]


def main(fault: str, config: str, table: str) -> None:
    if fault not in FAULTS:
        raise SystemExit(f"unknown fault {fault!r}; one of {', '.join(FAULTS)}")
    kill_mid_write() if fault == "kill-mid-write" else cleanup_fails()
    from icefloe.app.cli import main as icefloe

    icefloe(["--config", config, "optimize", table])


if __name__ == "__main__":
    main(*sys.argv[1:4])
