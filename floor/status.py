"""`tablectl floor status` and `alarms`: the live model and the archive's integrity, as the service stored them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg

from floor.config import FloorConfig
from floor.days import parse_ts
from floor.live import TableLive
from floor.resend import resend_command
from floor.seqtrack import SeqRanges

Conn = psycopg.Connection[tuple[Any, ...]]


def live_tables(conn: Conn) -> list[TableLive]:
    rows = conn.execute("SELECT table_id, live FROM floor_tables ORDER BY table_id").fetchall()
    return [TableLive.from_json(live) if live else TableLive(str(t)) for t, live in rows]


def _since(ts: str | None, now: datetime) -> str:
    if ts is None:
        return "-"
    seconds = int((now - parse_ts(ts)).total_seconds())
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{max(seconds, 0)}s"


def status_text(tables: list[TableLive], conn: Conn) -> str:
    if not tables:
        return "no table has been heard from yet"
    row = conn.execute("SELECT now()").fetchone()
    now = row[0] if row else datetime.now(UTC)
    out = [f"{'table':<20} {'state':<8} {'game':<6} {'phase':<10} {'in phase':>9} {'round':<24} alerts"]
    for t in tables:
        alerts = []
        alerts += [f"tilt {k}" for k in t.tilts]
        alerts += [f"device {d}: {why}" for d, why in t.faults.items()]
        alerts += [f"jackpot pending {j['level']} {j['amount']}c seat {j['seat']}" for j in t.pending_jackpots.values()]
        alerts += [f"seq gap {a}-{b}" for a, b in t.gaps]
        alerts += [f"{t.alarms} integrity alarm(s)"] if t.alarms else []
        out.append(
            f"{t.table_id:<20} {t.state:<8} {t.chapter or '-':<6} {t.phase:<10} {_since(t.phase_since, now):>9} "
            f"{t.round_id or '-':<24} {'; '.join(alerts) or 'ok'}"
        )
    return "\n".join(out)


def alarms_text(conn: Conn) -> tuple[str, int]:
    """The integrity alarms and the gaps still open; the count of both (non-zero: something to look at)."""
    alarms = conn.execute(
        "SELECT detected_at, kind, table_id, seq, archived_event_id, received_event_id FROM integrity_alarms"
        " ORDER BY id"
    ).fetchall()
    gaps = conn.execute(
        "SELECT table_id, first_seq, last_seq, detected_at FROM seq_gaps WHERE filled_at IS NULL ORDER BY table_id"
    ).fetchall()
    out = [f"{len(alarms)} integrity alarm(s), {len(gaps)} open seq gap(s)"]
    for at, kind, table, seq, archived, received in alarms:
        out.append(
            f"  alarm {at:%Y-%m-%d %H:%M:%S} {kind} table {table} seq {seq}: archived {archived}, got {received}"
        )
    for table, first, last, at in gaps:
        out.append(f"  gap   {at:%Y-%m-%d %H:%M:%S} table {table} seq {first}-{last} missing")
    return "\n".join(out), len(alarms) + len(gaps)


def gaps_text(conn: Conn, config: FloorConfig) -> tuple[str, int]:
    """Every table's open seq gaps (from its archived ranges) and how to fill each: the `tablectl command send ...
    resend` lines to run, or that the floor asks itself ([resend] key_file). The count of gaps."""
    rows = conn.execute("SELECT table_id, seq_ranges FROM floor_tables ORDER BY table_id").fetchall()
    out: list[str] = []
    count = 0
    asks = config.resend.key_file is not None
    for table_id, ranges in rows:
        for first, last in SeqRanges.from_json(ranges).gaps():
            count += 1
            out.append(f"table {table_id} seq {first}-{last} missing ({last - first + 1} event(s))")
            if asks:
                continue
            out += [
                f"  {line}"
                for line in resend_command(str(table_id), (first, last), config.mqtt.broker, config.mqtt.prefix)
            ]
    head = f"{count} open seq gap(s)"
    if count and asks:
        head += f"; the floor asks the tables itself (key {config.resend.key_id}, after {config.resend.grace_s:g} s)"
    elif count:
        head += (
            "; to fill one, run its line with a key of role floor, technician or supervisor in the table's "
            "[[supervisors]] (or give the floor its own key: [resend] in the floor config, docs/floor.md)"
        )
    return "\n".join([head, *out]), count
