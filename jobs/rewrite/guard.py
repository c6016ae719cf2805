"""The write guard: what a rewrite tells its caller before it writes and before it commits.

An actor passes one bound to its lease (``icefloe.service.actor.loop``): ``before_write`` records
the files about to be written (with the lease, in Redis) so that a killed attempt's files can
be found and deleted (:mod:`icefloe.jobs.maintenance.orphans`); ``before_commit`` raises when the
lease is gone (another actor may now be running the same action, and the files may be deleted as
an abandoned attempt's). Ad-hoc runs (``icefloe optimize``) use :data:`NO_GUARD`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class WriteGuard(Protocol):
    def before_write(self, paths: Sequence[str], prefixes: Sequence[str]) -> None:
        """Record ``paths`` (exact new files) and ``prefixes`` (folders only this attempt
        writes under) before any byte is written; raise to stop the write."""
        ...

    def before_commit(self) -> None:
        """Raise when the attempt may no longer commit."""
        ...


class _NoGuard:
    def before_write(self, paths: Sequence[str], prefixes: Sequence[str]) -> None:
        return None

    def before_commit(self) -> None:
        return None


NO_GUARD: WriteGuard = _NoGuard()
