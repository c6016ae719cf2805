"""Readers' scan records and their decayed statistics (:mod:`icefloe.optimizer.reads`),
against a brute-force reference: every scan weighed at the end."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.optimizer.reads import ReadStats, ScanRecord, table_of

pytestmark = [pytest.mark.unit]

HOUR = 3600.0
HALF = 24 * HOUR
T0 = 1_790_000_000.0


def scan(at: float, files: int = 10, own: bool = False, cols: tuple[str, ...] = ()) -> ScanRecord:
    return ScanRecord(
        "db.t",
        1,
        at,
        files=files,
        skipped_files=2 * files,
        bytes=files * 100,
        planning_ms=5.0,
        filter_columns=cols,
        own=own,
    )


def reference(scans: list[ScanRecord], now: float) -> tuple[float, float]:
    """(decayed count, decayed files) by weighing every scan at ``now``."""
    w = [2 ** (-(now - s.at) / HALF) for s in scans if not s.own]
    files = [wi * s.files for wi, s in zip(w, [s for s in scans if not s.own], strict=True)]
    return sum(w), sum(files)


@settings(max_examples=200, deadline=None, database=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 30 * 24 * HOUR), st.integers(0, 10_000), st.booleans()),
        min_size=1,
        max_size=40,
    ),
    st.integers(1, 5),
)
def test_folding_in_any_batches_equals_weighing_every_scan(
    raw: list[tuple[float, int, bool]], batches: int
) -> None:
    scans = sorted((scan(T0 + at, files, own) for at, files, own in raw), key=lambda s: s.at)
    now = scans[-1].at + 5 * HOUR
    stats = ReadStats()
    size = math.ceil(len(scans) / batches)
    for i in range(0, len(scans), size):
        stats = stats.add(scans[i : i + size], HALF)
    got = stats.decayed(now, HALF)
    weight, files = reference(scans, now)
    assert got.weight == pytest.approx(weight, rel=1e-9, abs=1e-12)
    assert got.files == pytest.approx(files, rel=1e-9, abs=1e-9)
    assert got.scans == sum(not s.own for s in scans)


def test_a_steady_rate_reads_back_as_scans_per_hour() -> None:
    stats = ReadStats().add([scan(T0 + i * 60) for i in range(60 * 24 * 10)], HALF)  # 60/hour
    assert stats.scans_per_hour(stats.at, HALF) == pytest.approx(60, rel=0.02)
    assert stats.per_scan(stats.files) == pytest.approx(10)
    assert stats.skipped_share == pytest.approx(2 / 3)
    # a day of silence halves it
    assert stats.scans_per_hour(stats.at + HALF, HALF) == pytest.approx(30, rel=0.02)


def test_a_late_report_weighs_what_it_would_have() -> None:
    in_order = ReadStats().add([scan(T0), scan(T0 + HALF)], HALF)
    late = ReadStats().add([scan(T0 + HALF)], HALF).add([scan(T0)], HALF)
    assert late.weight == pytest.approx(in_order.weight) == pytest.approx(1.5)
    assert late.last_read == in_order.last_read == T0 + HALF


def test_columns_are_counted_once_per_scan_and_the_heaviest_kept() -> None:
    stats = ReadStats().add(
        [scan(T0, cols=("day:eq", "day:lt", "id:in")), scan(T0, cols=("id:eq",))], HALF
    )
    assert stats.filter_columns == {"day": 1.0, "id": 2.0}
    assert stats.top_filter_columns() == ["id", "day"]
    wide = ReadStats().add([scan(T0, cols=tuple(f"c{i}:eq" for i in range(200)))], HALF)
    assert len(wide.filter_columns) == 64


def test_icefloes_own_scans_are_no_reads() -> None:
    assert ReadStats().add([scan(T0, own=True)], HALF) == ReadStats()


def test_a_stream_entry_reads_back_and_a_bad_one_says_why() -> None:
    fields = {
        "table": "lake.db.t",
        "snapshot": "77",
        "at": "1790000000000",
        "files": "12",
        "skipped_files": "30",
        "bytes": "4096",
        "planning_ms": "7",
        "filter_columns": "region:in,amount:lt",
        "projected": "id,region",
        "pins": '[["region",["(hash-0a1b2c3d)","(hash-00000001)"]]]',
        "engine": "spark",
    }
    r = ScanRecord.of(fields)
    assert (r.table, r.snapshot, r.at, r.files, r.skipped_files) == ("lake.db.t", 77, T0, 12, 30)
    assert r.filtered_on == ("region", "amount") and r.projected == ("id", "region")
    assert r.pins == (("region", ("(hash-0a1b2c3d)", "(hash-00000001)")),) and not r.own
    for bad, why in [
        ({"at": "1"}, "no table"),
        ({**fields, "at": "x"}, "invalid literal"),
        ({**fields, "files": "-1"}, "negative files"),
        ({**fields, "pins": "{"}, "bad pins"),
        ({k: v for k, v in fields.items() if k != "at"}, "no at"),
    ]:
        with pytest.raises(ValueError, match=why):
            ScanRecord.of(bad)


def test_a_reports_table_name_resolves_to_the_managed_table() -> None:
    managed = {"db.t", "ns.sub.t"}
    assert table_of("lake.db.t", managed) == "db.t"
    assert table_of("db.t", managed) == "db.t"
    assert table_of("other_catalog.ns.sub.t", managed) == "ns.sub.t"
    assert table_of("lake.db.unknown", managed) is None
    assert table_of("t", managed) is None
