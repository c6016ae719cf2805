"""The demo's workload: what a streaming-ingest warehouse holds, and what its readers ask.

Two day-partitioned tables fed by many small commits, a share of them late (rows of an
earlier day: old partitions keep receiving small files after their day is over):

* ``events`` (:mod:`icefloe.app.demo.events`): product events, micro-batches of 2,000 to
  12,000 rows, three in ten carrying late events; its declared write order is ``user_id``
  (readers look users up), so icefloe keeps its partitions sorted (``actions: [merge,
  sort]``) and Iceberg's side runs ``rewrite_data_files`` with ``strategy => 'sort'``;
* ``orders`` (:mod:`icefloe.app.demo.orderlines`): order lines (keys, prices, short
  strings), one day's lines a commit, one in five of an earlier day; no write order, so
  icefloe merges and Iceberg runs its default binpack.

Rows compress like real ones (zstd, dictionaries): Iceberg's Spark writer, which rolls a
file on an estimate counting its open row group uncompressed, closes files well under the
target on them, and merges its own outputs again in later rounds.

The readers' queries are planned on both sides with PyIceberg (partition pruning and the
files' column bounds): a recent-day range on each table, a user's events (the sorted
column) and one order's lines.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from icefloe.app.demo.events import EventStream
from icefloe.app.demo.orderlines import OrderLines
from icefloe.base.config import Config, ManagedConfig

if TYPE_CHECKING:
    import pyarrow as pa

TARGET = 512 << 10  # bytes: small, so a two-minute demo holds partitions of several targets
LOOKUP_USER = 42  # a user with a few hundred events a day (user ids are Zipf-distributed)


class Stream(Protocol):
    """A table's commits in order: ``take()`` gives the next one's rows; ``per_day``
    commits make a day, ``taken`` were taken."""

    taken: int
    per_day: int

    def take(self) -> pa.Table: ...


@dataclass(frozen=True)
class Query:
    """A reader's question: a label and its filter (PyIceberg's row-filter syntax), made
    from what the stream ingested (``Facts``) once the rounds are done."""

    label: str
    where: Callable[[Facts], str]


@dataclass(frozen=True)
class Facts:
    """What the queries refer to: the newest day ingested and one order key."""

    last_day: dt.date
    order_key: int


@dataclass(frozen=True)
class DemoTable:
    """One table of the workload: its stream, partition column, write order, the
    compaction Iceberg's side runs, commits per round and the readers' queries."""

    name: str  # namespace-less: events, orders
    stream: Callable[[int], Stream]  # seed -> the stream (the same rows for every copy)
    day_column: str
    commits_per_round: int
    queries: tuple[Query, ...]
    sort_column: str | None = None
    target: int = TARGET

    @property
    def iceberg_strategy(self) -> str:
        """What a user of Iceberg runs on the table: sort where it declares an order."""
        return "sort" if self.sort_column else "binpack"


def _since(column: str) -> Callable[[Facts], str]:
    def where(facts: Facts) -> str:
        if column == "event_ts":
            start = dt.datetime.combine(facts.last_day, dt.time(), tzinfo=dt.UTC)
            return f"{column} >= '{start.isoformat()}'"
        return f"{column} >= '{facts.last_day.isoformat()}'"

    return where


def _user(facts: Facts) -> str:
    return f"user_id = {LOOKUP_USER}"


def _order(facts: Facts) -> str:
    return f"l_orderkey = {facts.order_key}"


def demo_workload(rounds: int) -> list[DemoTable]:
    """The two tables, their days spread so the rounds see about three days each."""
    return [
        DemoTable(
            "events",
            stream=lambda seed: EventStream(
                commits_per_day=max(2, 3 * 8 * rounds // 10), seed=seed
            ),
            day_column="event_ts",
            commits_per_round=8,
            sort_column="user_id",
            queries=(
                Query("events of the last day", _since("event_ts")),
                Query("one user's events", _user),
            ),
        ),
        DemoTable(
            "orders",
            stream=lambda seed: OrderLines(
                commits_per_day=max(2, 3 * 8 * rounds // 10), seed=seed, rows=(1_000, 8_000)
            ),
            day_column="l_shipdate",
            commits_per_round=8,
            queries=(
                Query("order lines shipped on the last day", _since("l_shipdate")),
                Query("one order's lines", _order),
            ),
        ),
    ]


def demo_config(cfg: Config, namespace: str, tables: list[DemoTable]) -> Config:
    """The demo manages its own namespace (on top of whatever the config manages), and a
    table with a write order is kept sorted (``actions: [merge, sort]``)."""
    namespaces = tuple(dict.fromkeys((*cfg.managed.namespaces, namespace)))
    policies = dict(cfg.tables)
    for table in tables:
        name = f"{namespace}.{table.name}"
        if table.sort_column and name not in policies:
            # the table's own target property applies (None here), the defaults' tolerance
            # scales with it
            policies[name] = dataclasses.replace(
                cfg.defaults, target_file_size_bytes=None, actions=("merge", "sort")
            )
    return dataclasses.replace(
        cfg,
        managed=ManagedConfig(namespaces=namespaces, tables=cfg.managed.tables),
        tables=policies,
    )
