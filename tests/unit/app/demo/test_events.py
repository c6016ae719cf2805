"""The demo's event stream: seeded, one day's micro-batch a commit, late events of earlier
days, rows that compress like real events."""

from __future__ import annotations

import datetime as dt
import io

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from icefloe.app.demo.events import FIRST_DAY, EventStream

pytestmark = pytest.mark.unit


def days_of(batch: pa.Table) -> set[dt.date]:
    return {ts.date() for ts in batch.column("event_ts").to_pylist()}


def test_the_same_seed_gives_the_same_batches_and_another_seed_others() -> None:
    first = [EventStream(4, seed=3).take() for _ in range(2)]
    assert first[0].equals(first[1])
    assert not EventStream(4, seed=3).take().equals(EventStream(4, seed=4).take())


def test_batches_walk_the_days_with_late_events_of_earlier_days_and_unique_ids() -> None:
    stream = EventStream(commits_per_day=3, seed=5, late_share=0.5)
    batches = [stream.take() for _ in range(12)]
    late = 0
    for i, batch in enumerate(batches):
        current = FIRST_DAY + dt.timedelta(days=i // 3)
        days = days_of(batch)
        assert current in days and all(d <= current for d in days)
        late += len(days) > 1
        assert 2_000 <= batch.num_rows
    assert late >= 2  # some micro-batches carry a slice of an earlier day
    assert days_of(batches[0]) == {FIRST_DAY}  # nothing is late on the first day
    ids = pa.concat_arrays([b.column("event_id").combine_chunks() for b in batches])
    assert len(pc.unique(ids)) == len(ids) == sum(b.num_rows for b in batches)
    assert stream.taken == 12


def test_rows_compress_like_events_and_amounts_only_on_purchases() -> None:
    batch = EventStream(4, seed=1).take()
    buf = io.BytesIO()
    pq.write_table(batch, buf, compression="zstd")
    assert len(buf.getvalue()) / batch.num_rows < 25  # bytes a row; 9 columns
    purchases = pc.equal(batch.column("event_type"), "purchase")
    assert pc.all(pc.is_valid(pc.filter(batch.column("amount"), purchases))).as_py()
    assert pc.all(pc.is_null(pc.filter(batch.column("amount"), pc.invert(purchases)))).as_py()
