"""A streaming workload whose rows compress better merged: order lines, one commit a file.

Keys, prices, and low-cardinality strings (ship mode, instructions, flags, comments from
a small vocabulary) that one dictionary per column serves: a merge of many small files of
them writes fewer bytes than it reads (about 0.7x, zstd), which is what the output model
(:mod:`icefloe.optimizer.output_model`) must predict. Used by ``bench/ingest_bench.py`` and the
tests of output sizing.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

MODES = ["AIR", "MAIL", "SHIP", "TRUCK", "RAIL", "REG AIR", "FOB"]
INSTRUCTIONS = ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"]
WORDS = (
    "carefully final deposits sleep quickly regular accounts haggle furiously express "
    "packages among the ironic requests blithely pending foxes unusual theodolites"
).split()
FIRST_DAY = dt.date(2026, 11, 1)


class OrderLines:
    """The stream: each commit's rows, generated from a seed (the same for every copy)."""

    def __init__(
        self, commits_per_day: int, seed: int = 46, rows: tuple[int, int] = (150, 2500)
    ) -> None:
        self.rng = random.Random(seed)
        self.rows = rows  # each commit's rows: log-uniform between these
        self.per_day = commits_per_day  # a new day every this many commits
        self.taken = 0
        self.next_key = 1

    def take(self) -> pa.Table:
        """The next commit's rows: ``rows`` order lines (log-uniform) of one day."""
        import pyarrow as pa  # pyarrow: only when rows are made

        (lo, hi), rng = self.rows, self.rng
        n = int(lo * (hi / lo) ** rng.random())
        day = FIRST_DAY + dt.timedelta(days=self.taken // self.per_day)
        if self.taken >= self.per_day and rng.random() < 0.2:  # late rows of an earlier day
            day -= dt.timedelta(days=rng.randrange(1, 1 + self.taken // self.per_day))
        self.taken += 1
        keys = range(self.next_key, self.next_key + n)
        self.next_key += n
        return pa.table(
            {
                "l_orderkey": pa.array([k // 4 for k in keys], pa.int64()),
                "l_linenumber": pa.array([k % 4 + 1 for k in keys], pa.int32()),
                "l_partkey": pa.array([rng.randrange(200_000) for _ in keys], pa.int64()),
                "l_suppkey": pa.array([rng.randrange(10_000) for _ in keys], pa.int64()),
                "l_quantity": pa.array([float(rng.randrange(1, 51)) for _ in keys]),
                "l_extendedprice": pa.array([round(rng.uniform(900, 10_000), 2) for _ in keys]),
                "l_discount": pa.array([rng.randrange(11) / 100 for _ in keys]),
                "l_returnflag": pa.array([rng.choice("ANR") for _ in keys]),
                "l_shipdate": pa.array([day] * n, pa.date32()),
                "l_shipinstruct": pa.array([rng.choice(INSTRUCTIONS) for _ in keys]),
                "l_shipmode": pa.array([rng.choice(MODES) for _ in keys]),
                "l_comment": pa.array(
                    [" ".join(rng.choices(WORDS, k=rng.randrange(3, 7))) for _ in keys]
                ),
            }
        )
