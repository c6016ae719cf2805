"""Kept records (``icefloe.service.observe.kept``): the score a record keeps is the score a reader
would work out at any time it is read (reused while it holds, worked out again after, or
under another policy), policies resolved once a distinct policy, and ``tables --json``'s
rows a line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icefloe.app.cli.status import json_text
from icefloe.app.cli.tables import json_rows
from icefloe.base.tablestats import table_score
from icefloe.optimizer import stats_from_sizes
from icefloe.optimizer.health_score import removable_mse
from icefloe.optimizer.maintenance_rules import MetadataHealth
from icefloe.service.observe import kept
from icefloe.service.observe.kept import Policies, build_record, inputs_of, kept_row, row_score
from icefloe.state.health import from_summary, summary
from tests.support.config import make_config

pytestmark = [pytest.mark.unit]
T = 1 << 20
HOUR = 3600.0


def _record(cfg: Any, name: str, now: float, snapshots: int = 9) -> dict[str, Any]:
    """A record as the decider writes it and a reader gets it (through JSON): small files
    to merge, and ``snapshots`` snapshots, the oldest 20 days old."""
    inputs = inputs_of(cfg, name, T)
    parts = {"a": stats_from_sizes([T // 10] * 8, T), "b": stats_from_sizes([T], T)}
    times = [int((now - 20 * 24 * HOUR) * 1000) + i for i in range(snapshots)]
    health = MetadataHealth.of(7, [8 << 20], 8 << 20, times, 4096, retain_last=1)
    record = build_record(inputs, parts, health, {}, None, {}, now)
    return dict(json.loads(json.dumps(record)))


def _fresh(cfg: Any, name: str, record: dict[str, Any], now: float) -> dict[str, Any]:
    """The score worked out from the record's inputs at ``now`` (what readers did)."""
    health = from_summary(summary(record["health"]))
    policy = inputs_of(cfg, name, record["target"]).policy
    return table_score(policy, record["data_mse"], health, now).to_dict()


@pytest.mark.parametrize("snapshots", [1, 9])
def test_a_kept_score_is_the_score_at_any_time_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, snapshots: int
) -> None:
    cfg = make_config(tmp_path)
    now = 1_700_000_000.0
    record = _record(cfg, "db.t", now, snapshots)
    max_age = cfg.defaults.maintenance.snapshot_max_age_hours * HOUR
    times = [now + d for d in (-HOUR, 0.0, 1.0, HOUR, 10 * 24 * HOUR)]
    times += [now + k * max_age / 4 for k in range(-8, 16)]
    policies, worked = Policies(cfg), []
    real = kept.table_score
    monkeypatch.setattr(kept, "table_score", lambda *a: worked.append(a) or real(*a))
    for at in times:
        assert row_score(policies, "db.t", record, at) == _fresh(cfg, "db.t", record, at), at
    if snapshots == 1:  # within retain_last: the score never ages, never worked out again
        assert worked == []
    else:  # 20 days old: its score ages only from some age on, then stays
        assert 0 < len(worked) < len(times)
    assert row_score(policies, "db.t", record, now) == record["score"]
    row = kept_row(policies, "db.t", record, now + 5)
    assert row["health"] == _fresh(cfg, "db.t", record, now + 5) and row["age_s"] == 5.0


@pytest.mark.parametrize("snapshots", [1, 9])
def test_a_record_s_rank_holds_exactly_when_its_score_does_with_its_number(
    tmp_path: Path, snapshots: int
) -> None:
    cfg = make_config(tmp_path)
    other = make_config(tmp_path, defaults={"maintenance": {"snapshot_max_age_hours": 1000}})
    now = 1_700_000_000.0
    record = _record(cfg, "db.t", now, snapshots)
    rank = json.loads(json.dumps(kept.rank_of(record)))  # as a reader gets it
    assert len(json.dumps(rank)) < len(json.dumps(record)) / 5
    max_age = cfg.defaults.maintenance.snapshot_max_age_hours * HOUR
    for reader in (cfg, other):
        policies = Policies(reader)
        for at in [now + k * max_age / 4 for k in range(-8, 16)]:
            held = kept.held_score(policies, "db.t", record, at)
            number = kept.held_rank(policies, "db.t", rank, at)
            assert number == (None if held is None else held["score"]), at
            assert number is None or number == row_score(policies, "db.t", record, at)["score"]
    error = {"v": 1, "at": 5.0, "error": "gone"}
    assert kept.rank_of(error) == {"at": 5.0, "error": True}
    older = {k: v for k, v in record.items() if k not in ("score", "score_ms", "policy")}
    assert kept.rank_of(older) is None  # an older decider's record: ranked from itself


def test_a_reader_with_another_policy_works_the_score_out_again(tmp_path: Path) -> None:
    decider = make_config(tmp_path)
    reader = make_config(tmp_path, defaults={"maintenance": {"snapshot_max_age_hours": 1000}})
    record = _record(decider, "db.t", 100.0)
    mine = row_score(Policies(reader), "db.t", record, 100.0)
    assert mine == _fresh(reader, "db.t", record, 100.0) != record["score"]


def test_an_older_record_without_a_score_is_scored_by_its_reader(tmp_path: Path) -> None:
    cfg = make_config(tmp_path)
    record = _record(cfg, "db.t", 100.0)
    for key in ("score", "score_ms", "policy"):
        del record[key]
    assert row_score(Policies(cfg), "db.t", record, 200.0) == _fresh(cfg, "db.t", record, 200.0)


def test_policies_are_resolved_once_a_distinct_policy(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, tables={"db.big": {"target_file_size_bytes": 4 * T}})
    policies = Policies(cfg)
    for name, target in (("db.a", T), ("db.b", T), ("db.a", None), ("db.big", T)):
        inputs, key = policies.of(name, target)
        assert inputs == inputs_of(cfg, name, target)
        assert key == kept.policy_key(inputs.policy)
    assert policies.of("db.a", T)[0] is policies.of("db.b", T)[0]  # shared
    assert policies.of("db.big", T)[0].target == 4 * T  # its override, not the default's


def test_removable_mse_is_what_the_record_keeps(tmp_path: Path) -> None:
    cfg = make_config(tmp_path)
    parts = {"a": stats_from_sizes([T // 10] * 8, T)}
    health = MetadataHealth.of(7, [8 << 20], 8 << 20, [1], 4096, retain_last=1)
    record = build_record(inputs_of(cfg, "db.t", T), parts, health, {}, None, {}, 1.0)
    assert record["data_mse"] == removable_mse(parts.values(), T)


def test_json_rows_are_one_array_a_row_a_line() -> None:
    rows = [{"table": "db.a", "health": {"score": 9.5}}, {"table": "db.b", "seen": False}]
    text = json_rows(rows)
    assert json.loads(text) == rows and len(text.splitlines()) == 4
    assert json_rows([]) == "[]" and json.loads(json_rows([])) == []


def test_status_json_is_the_same_json_a_table_a_line() -> None:
    data = {
        "redis": "redis://x",
        "tables": {"db.b": {"health": {"score": 1.0}}, "db.a": {"error": "gone"}},
        "queue": {"depth": {"pending": 0}},
    }
    text = json_text(data)
    assert json.loads(text) == data
    assert text.splitlines()[-5:-2] == [
        '  "tables": {',
        '    "db.a": {"error": "gone"},',
        '    "db.b": {"health": {"score": 1.0}}',
    ]
    assert json.loads(json_text({**data, "tables": {}})) == {**data, "tables": {}}
