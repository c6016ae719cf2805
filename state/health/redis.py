"""A table's metadata health on Redis: one hash in the table's slot, the stored health
(:func:`icefloe.state.health.to_fields`) beside ``run:<action>`` and ``hold:<action>``
fields."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.base.keys import Keys
from icefloe.base.redis_client import text, translated
from icefloe.optimizer.maintenance_rules import MetadataHealth
from icefloe.state.health import HealthStore, summary, to_fields

log = logging.getLogger("icefloe.health")
RECORDS_A_CALL = 1000  # fields of one HMGET
VERDICTS = "verdicts"  # a record's verdicts: kept apart, read only by who lists them


class RedisHealth(HealthStore):
    """Health and last-run times in the table's slot: ``<prefix>:{t:<table>}:health``."""

    def __init__(self, client: Any, keys: Keys):
        self.r = client
        self.k = keys

    @translated("health save")
    def save(self, table: str, health: MetadataHealth) -> None:
        self.r.hset(self.k.health(table), mapping=to_fields(health))

    @translated("health load")
    def load(self, table: str) -> dict[str, Any] | None:
        raw = {text(k): text(v) for k, v in self.r.hgetall(self.k.health(table)).items()}
        if "manifests" not in raw:
            return None
        try:
            return summary(raw)
        except (KeyError, ValueError) as e:  # damaged: as if none, the decider reads it again
            log.warning("%s: stored health unreadable (%s); read again from the table", table, e)
            return None

    @translated("health last_runs")
    def last_runs(self, table: str) -> dict[str, int]:
        raw = self.r.hgetall(self.k.health(table))
        return {text(k)[4:]: int(v) for k, v in raw.items() if text(k).startswith("run:")}

    @translated("health mark_run")
    def mark_run(self, table: str, action: str, now_ms: int, only_if_unset: bool = False) -> None:
        if only_if_unset:
            self.r.hsetnx(self.k.health(table), f"run:{action}", now_ms)
        else:
            self.r.hset(self.k.health(table), f"run:{action}", now_ms)

    @translated("health holds")
    def holds(self, table: str) -> dict[str, str]:
        raw = self.r.hgetall(self.k.health(table))
        return {text(k)[5:]: text(v) for k, v in raw.items() if text(k).startswith("hold:")}

    @translated("health mark_hold")
    def mark_hold(self, table: str, action: str, reason: str | None) -> None:
        if reason is None:
            self.r.hdel(self.k.health(table), f"hold:{action}")
        else:
            self.r.hset(self.k.health(table), f"hold:{action}", reason)

    @translated("health save_record")
    def save_record(
        self, table: str, record: Mapping[str, Any], rank: Mapping[str, Any] | None = None
    ) -> None:
        rest = {k: v for k, v in record.items() if k != VERDICTS}
        with self.r.pipeline(transaction=True) as pipe:  # all or nothing
            pipe.hset(self.k.table_records, table, json.dumps(rest, sort_keys=True))
            if rank is None:
                pipe.hdel(self.k.table_ranks, table)
            else:
                pipe.hset(self.k.table_ranks, table, json.dumps(rank, sort_keys=True))
            if VERDICTS in record:
                verdicts = json.dumps(record[VERDICTS], sort_keys=True)
                pipe.hset(self.k.table_verdicts, table, verdicts)
            else:  # an error record
                pipe.hdel(self.k.table_verdicts, table)
            pipe.execute()

    @translated("health records")
    def records(
        self, tables: Sequence[str] | None = None, verdicts: bool = True
    ) -> dict[str, dict[str, Any]]:
        out = self._read(self.k.table_records, tables)
        if verdicts and out:
            found = self._read(self.k.table_verdicts, sorted(out))
            for table, record in out.items():
                if table in found:
                    record[VERDICTS] = found[table]
        return out

    @translated("health ranks")
    def ranks(self, tables: Sequence[str]) -> dict[str, dict[str, Any]]:
        return self._read(self.k.table_ranks, tables)

    def _read(self, key: str, tables: Sequence[str] | None) -> dict[str, dict[str, Any]]:
        """The JSON objects kept in hash ``key`` for ``tables`` (None: every field),
        ``RECORDS_A_CALL`` fields a call; damaged ones left out."""
        if tables is None:
            raw = {text(k): v for k, v in self.r.hgetall(key).items()}
        else:
            raw = {}
            for at in range(0, len(tables), RECORDS_A_CALL):
                chunk = list(tables[at : at + RECORDS_A_CALL])
                got = self.r.hmget(key, chunk)
                raw |= {t: v for t, v in zip(chunk, got, strict=True) if v is not None}
        out = {}
        for table, value in raw.items():
            try:
                record = json.loads(value)
            except ValueError:
                log.warning("%s: kept record unreadable; the decider writes it again", table)
                continue
            if isinstance(record, dict):
                out[table] = record
        return out

    @translated("health drop_records")
    def drop_records(self, tables: Sequence[str]) -> None:
        if tables:
            self.r.hdel(self.k.table_records, *tables)
            self.r.hdel(self.k.table_verdicts, *tables)
            self.r.hdel(self.k.table_ranks, *tables)

    @translated("health save_managed")
    def save_managed(self, tables: Sequence[str]) -> None:
        self.r.set(self.k.managed_list, json.dumps(sorted(tables)))

    @translated("health managed")
    def managed(self) -> list[str] | None:
        raw = self.r.get(self.k.managed_list)
        try:
            names = None if raw is None else json.loads(raw)
        except ValueError:
            return None
        return [str(n) for n in names] if isinstance(names, list) else None
