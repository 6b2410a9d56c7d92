"""The retention policy (docs/floor.md, "Retention"): a gaming day older than [retention] days is dropped whole (its
partition of `events`, its keys and its retained messages), and with require_export only once its signed export
exists, so what leaves the database has been handed to accounting first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg

from floor.config import FloorConfig
from floor.days import gaming_day
from floor.schema import partition_name, partitions

Conn = psycopg.Connection[tuple[Any, ...]]
DAY_TABLES = ("event_keys", "statuses", "births", "device_reports", "meter_reports")


@dataclass
class RetentionPlan:
    cutoff: date  # days before this one are past retention
    drop: list[date] = field(default_factory=list)
    kept_unexported: list[date] = field(default_factory=list)

    def describe(self) -> str:
        lines = [f"retention: gaming days before {self.cutoff} are past it"]
        lines += [f"  drop {d}" for d in self.drop] or ["  nothing to drop"]
        lines += [f"  keep {d}: no signed export yet (tablectl report export --day {d})" for d in self.kept_unexported]
        return "\n".join(lines)


def plan_retention(conn: Conn, config: FloorConfig, now: datetime | None = None) -> RetentionPlan:
    today = gaming_day(now or datetime.now(UTC), config.gaming_day)
    plan = RetentionPlan(today - timedelta(days=config.retention.days))
    exported = {row[0] for row in conn.execute("SELECT gaming_day FROM exports").fetchall()}
    for day in partitions(conn):
        if day >= plan.cutoff:
            continue
        if config.retention.require_export and day not in exported:
            plan.kept_unexported.append(day)
        else:
            plan.drop.append(day)
    return plan


def apply_retention(conn: Conn, plan: RetentionPlan) -> list[str]:
    done = []
    for day in plan.drop:
        with conn.transaction():
            conn.execute(f"DROP TABLE IF EXISTS {partition_name(day)}".encode())
            for table in DAY_TABLES:
                conn.execute(f"DELETE FROM {table} WHERE gaming_day = %s".encode(), (day,))
        done.append(f"dropped gaming day {day}")
    return done
