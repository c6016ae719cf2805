"""A fake clock for the actor: ``clock()`` is the time, ``clock.sleep(s)`` moves it on."""

from __future__ import annotations

T0 = 1_790_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
