"""What the actor says of an action's end: its error as one line, its ack's outcome, a
batch's outcomes as counts, and why the loop stopped."""

from __future__ import annotations

from collections.abc import Callable

from icefloe.base.errors import IcefloeError, describe


def stop_reason(
    elapsed: float, max_seconds: float | None, stop: Callable[[], bool] | None
) -> str | None:
    """Why the loop stops before its next action (None: it goes on)."""
    if stop is not None and stop():
        return "SIGTERM"
    if max_seconds is not None and elapsed >= max_seconds:
        return f"--max-seconds {max_seconds:g} reached"
    return None


def one_line(e: BaseException) -> str:
    """A failure as the one line an item's last error and the log show: its type, and what
    failed (a library's multi-line message or a Java stack trace cut to its first line)."""
    if isinstance(e, IcefloeError):  # already one line naming the cause: kept whole
        return f"{type(e).__name__}: {' '.join(str(e).split())}"[:500]
    text = describe(e)
    return text if text.startswith(type(e).__name__) else f"{type(e).__name__}: {text}"


def ack_outcome(acked: int | None) -> str:
    return "done" if acked else ("unacked" if acked is None else "lease lost")


def outcomes_text(by_item: dict[str, str]) -> str:
    """A batch's outcomes as counts: ``done×199 pending×1``."""
    counts: dict[str, int] = {}
    for outcome in by_item.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return " ".join(f"{k}×{n}" for k, n in sorted(counts.items()))
