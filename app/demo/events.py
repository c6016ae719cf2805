"""A stream of product events, as a streaming writer commits them: one micro-batch a commit.

Rows compress like real events: a timestamp rising within the batch's window, a user id
(a few heavy users, a long tail), an event type, device and country from short lists, a
page path from a catalogue of a few hundred, a duration, and an amount on purchases only.
A micro-batch holds the current day's events and, now and then, a slice of late ones of an
earlier day (a phone back online): one commit then adds a small file to the current day
and one to that earlier day, as a streaming writer does. Seeded (numpy): every copy of the
stream gives the same rows.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import numpy as np

from icefloe.app.demo.orderlines import FIRST_DAY as ORDERS_FIRST_DAY

if TYPE_CHECKING:
    import pyarrow as pa

FIRST_DAY = ORDERS_FIRST_DAY  # both streams start on the same day
EVENT_TYPES = ("page_view", "click", "search", "add_to_cart", "purchase", "login", "logout")
TYPE_WEIGHTS = (0.46, 0.24, 0.12, 0.08, 0.04, 0.03, 0.03)
DEVICES = ("ios", "android", "web", "tablet")
COUNTRIES = ("US", "DE", "GB", "FR", "IN", "BR", "JP", "CA", "ES", "IT", "NL", "SE", "PL", "MX")
SECTIONS = ("product", "category", "cart", "checkout", "search", "account", "help")
USERS = 50_000


class EventStream:
    """Each commit's events: ``take()`` gives the next micro-batch. ``commits_per_day``
    batches make a day; a batch carries late events of an earlier day with probability
    ``late_share``."""

    def __init__(
        self,
        commits_per_day: int,
        seed: int = 7,
        rows: tuple[int, int] = (2_000, 12_000),
        late_share: float = 0.3,
    ) -> None:
        self.rng = np.random.default_rng(seed)
        self.per_day = commits_per_day
        self.rows, self.late_share = rows, late_share
        self.taken = 0
        self.next_id = 1
        pages = [f"/{s}/{i}" for s in SECTIONS for i in range(60)]
        self.pages = np.array(pages, dtype=object)

    @property
    def day(self) -> dt.date:
        """The day the next batch's current events belong to."""
        return FIRST_DAY + dt.timedelta(days=self.taken // self.per_day)

    def take(self) -> pa.Table:
        """The next micro-batch: ``rows`` (log-uniform) current events, plus late ones."""
        import pyarrow as pa  # pyarrow: only when rows are made

        rng, day_index = self.rng, self.taken // self.per_day
        lo, hi = self.rows
        n = int(lo * (hi / lo) ** rng.random())
        # the batch's window of the current day: commit k of the day covers its k-th slice
        slot = 86_400 / self.per_day
        start = (self.taken % self.per_day) * slot
        seconds = np.sort(start + rng.random(n) * slot)
        days = np.full(n, day_index)
        if day_index and rng.random() < self.late_share:  # late events of an earlier day
            late = max(1, n // int(rng.integers(4, 12)))
            back = int(rng.integers(1, day_index + 1))
            seconds = np.concatenate([rng.random(late) * 86_400, seconds])
            days = np.concatenate([np.full(late, day_index - back), days])
        self.taken += 1
        count = len(days)
        epoch = dt.datetime.combine(FIRST_DAY, dt.time(), tzinfo=dt.UTC).timestamp()
        micros = ((epoch + days * 86_400 + seconds) * 1_000_000).astype(np.int64)
        ids = np.arange(self.next_id, self.next_id + count, dtype=np.int64)
        self.next_id += count
        kinds = rng.choice(len(EVENT_TYPES), size=count, p=TYPE_WEIGHTS)
        users = np.minimum(rng.zipf(1.3, size=count), USERS).astype(np.int64)
        amount = np.where(
            kinds == EVENT_TYPES.index("purchase"), np.round(rng.lognormal(3.5, 1.0, count), 2), 0
        )
        return pa.table(
            {
                "event_id": pa.array(ids),
                "event_ts": pa.array(micros, pa.timestamp("us", tz="UTC")),
                "user_id": pa.array(users),
                "event_type": pa.array(np.array(EVENT_TYPES, dtype=object)[kinds], pa.string()),
                "device": pa.array(
                    np.array(DEVICES, dtype=object)[rng.integers(0, len(DEVICES), count)],
                    pa.string(),
                ),
                "country": pa.array(
                    np.array(COUNTRIES, dtype=object)[
                        np.minimum(rng.geometric(0.25, count) - 1, len(COUNTRIES) - 1)
                    ],
                    pa.string(),
                ),
                "page": pa.array(self.pages[rng.integers(0, len(self.pages), count)], pa.string()),
                "duration_ms": pa.array(rng.gamma(2.0, 900.0, count).astype(np.int32)),
                "amount": pa.array(amount, pa.float64(), mask=amount == 0),
            }
        )
