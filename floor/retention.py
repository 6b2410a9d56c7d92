"""The retention policy (docs/floor.md, "Retention"): a gaming day older than [retention] days is dropped whole (its
partition of `events`, its keys and its retained messages), and with require_export only once its export exists and
its signature verifies against a key of [export] trusted_keys, so what leaves the database has been handed to
accounting first, signed by a person the floor trusts (the floor holds no key that could sign it itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from floor.config import FloorConfig
from floor.days import gaming_day
from floor.export import ExportError, verify
from floor.schema import partition_name, partitions

Conn = psycopg.Connection[tuple[Any, ...]]
# round_days: the day's rows of the per-round summary go with its events (what other days' rows say stays true).
DAY_TABLES = (
    "event_keys",
    "statuses",
    "births",
    "device_reports",
    "meter_reports",
    "round_days",
    "round_days_pending",
)


@dataclass
class RetentionPlan:
    cutoff: date  # days before this one are past retention
    drop: list[date] = field(default_factory=list)
    kept_unexported: list[date] = field(default_factory=list)
    why: dict[date, str] = field(default_factory=dict)  # why each kept day's export does not count yet
    # rejected_messages rows last heard of before this instant ([retention] refused_days) and how many there are
    refused_before: datetime | None = None
    refused_rows: int = 0

    def describe(self) -> str:
        lines = [f"retention: gaming days before {self.cutoff} are past it"]
        lines += [f"  drop {d}" for d in self.drop] or ["  nothing to drop"]
        lines += [f"  keep {d}: {self.why.get(d, 'no signed export yet')}" for d in self.kept_unexported]
        if self.refused_before is not None:
            lines.append(
                f"  delete {self.refused_rows} refused-message row(s) last heard of before"
                f" {self.refused_before:%Y-%m-%d %H:%M} UTC ([retention] refused_days)"
            )
        return "\n".join(lines)


def _unsigned(day: date, path: str, sha256: str, signer: str | None, trusted: list[str]) -> str | None:
    """Why the day's recorded export does not count, or None when it does: the file as recorded, signed by the key
    recorded for it, and that key trusted today (a key removed from trusted_keys stops its exports counting)."""
    again = f"tablectl report export --day {day} --replace, then sign it"
    if signer is None:
        return (
            f"its export {path} is not signed yet (tablectl report sign {Path(path).name} --key YOUR.pem, then record)"
        )
    if signer not in trusted:
        return f"its export is signed by {signer}, which is not in [export] trusted_keys"
    try:
        good = verify(Path(path), [signer])
    except ExportError as err:
        return f"its export does not verify: {err}"
    if good.sha256 != sha256:
        return f"its export {path} is not the file recorded for the day ({again})"
    return None


def _incomplete(conn: Conn, day: date, exported: int) -> str | None:
    """Why a signed export does not cover its day, or None when it does: events of the day archived after it (a table
    replaying after an outage, a resend, an export made before the day ended) are in no signed record, and dropping
    the day would lose them. Counted only for a day about to be dropped: one partition's count, a few a day."""
    row = conn.execute("SELECT count(*) FROM events WHERE gaming_day = %s", (day,)).fetchone()
    archived = 0 if row is None else int(row[0])
    if archived <= exported:
        return None
    return (
        f"its export holds {exported} event(s), the archive {archived} of gaming day {day}: events arrived after it"
        f" (tablectl report export --day {day} --replace, then sign it)"
    )


def plan_retention(conn: Conn, config: FloorConfig, now: datetime | None = None) -> RetentionPlan:
    today = gaming_day(now or datetime.now(UTC), config.gaming_day)
    plan = RetentionPlan(today - timedelta(days=config.retention.days))
    # Refused messages were never archived, so no export holds them: their own bound, on the database's clock.
    row = conn.execute(
        "SELECT now() - make_interval(days => %s), (SELECT count(*) FROM rejected_messages"
        " WHERE last_at < now() - make_interval(days => %s))",
        (config.retention.refused_days, config.retention.refused_days),
    ).fetchone()
    if row is not None and row[1]:
        plan.refused_before, plan.refused_rows = row[0].astimezone(UTC), int(row[1])
    exports: dict[date, tuple[str, str, str | None]] = {}
    exported: dict[date, int] = {}
    for day, path, sha256, signer, events in conn.execute(
        "SELECT gaming_day, path, sha256, signer_public_key, events FROM exports"
    ).fetchall():
        exports[day], exported[day] = (path, sha256, signer), events
    for day in partitions(conn):
        if day >= plan.cutoff:
            continue
        if config.retention.require_export:
            recorded = exports.get(day)
            why = (
                _unsigned(day, *recorded, config.export.trusted_keys)
                if recorded
                else f"no export yet (tablectl report export --day {day})"
            ) or _incomplete(conn, day, exported[day])
            if why is not None:
                plan.kept_unexported.append(day)
                plan.why[day] = why
                continue
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
    if plan.refused_before is not None:
        cur = conn.execute("DELETE FROM rejected_messages WHERE last_at < %s", (plan.refused_before,))
        done.append(
            f"deleted {cur.rowcount} refused-message row(s) last heard of before {plan.refused_before:%Y-%m-%d}"
        )
    return done
