"""`tablectl floor status`, `alarms` and `gaps`: the live model and the archive's integrity, as stored."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg

from controller.cli.shown import shown
from controller.core.money import fmt
from floor.config import FloorConfig
from floor.days import parse_ts
from floor.gaps import age_text, open_gaps, resend_command
from floor.live import ALERT_STATES, TableLive

Conn = psycopg.Connection[tuple[Any, ...]]


def live_tables(conn: Conn) -> list[TableLive]:
    rows = conn.execute("SELECT table_id, live FROM floor_tables ORDER BY table_id").fetchall()
    return [TableLive.from_json(live) if live else TableLive(str(t)) for t, live in rows]


def _since(ts: str | None, now: datetime) -> str:
    if ts is None:
        return "-"
    seconds = int((now - parse_ts(ts)).total_seconds())
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{max(seconds, 0)}s"


def _now(conn: Conn) -> datetime:
    row = conn.execute("SELECT now()").fetchone()
    return row[0] if row else datetime.now(UTC)


REFUSED_SHOWN = 5


def refused_text(conn: Conn) -> list[str]:
    """The messages the floor refused (floor/messages.py) and kept in rejected_messages: how many, and the latest
    few with their topic and why, so a table or client publishing junk is seen, not only logged. A row of a flood
    counts many (floor/refusals.py)."""
    row = conn.execute("SELECT coalesce(sum(count), 0), count(*) FROM rejected_messages").fetchone()
    total, rows = (int(row[0]), int(row[1])) if row else (0, 0)
    if not total:
        return []
    latest = conn.execute(
        "SELECT last_at, topic, reason, count, bytes FROM rejected_messages ORDER BY last_at DESC, id DESC LIMIT %s",
        (REFUSED_SHOWN,),
    ).fetchall()
    out = [f"{total} message(s) refused (not archived; {rows} row(s) in rejected_messages), latest:"]
    for at, topic, reason, count, size in latest:
        many = f" [{count} refused, {size} bytes, coalesced: over the rate]" if count > 1 else ""
        out.append(f"  {at:%Y-%m-%d %H:%M:%S} {shown(topic)}: {shown(reason[:200])}{many}")
    return out


def refused_latest(conn: Conn) -> tuple[int, str, str, datetime] | None:
    """How many messages were refused in all, and the latest's topic, reason and time (the console's floor page)."""
    row = conn.execute(
        "SELECT (SELECT sum(count) FROM rejected_messages), topic, reason, last_at FROM rejected_messages"
        " ORDER BY last_at DESC, id DESC LIMIT 1"
    ).fetchone()
    return (int(row[0]), str(row[1]), str(row[2]), row[3]) if row else None


def _dollars(amount: object) -> str:
    """Cents as the operator reads every other amount; anything else a table's message said, shown as it came."""
    return fmt(amount) if isinstance(amount, int) and not isinstance(amount, bool) else shown(amount)


def status_text(tables: list[TableLive], conn: Conn, grace_s: float) -> str:
    refused = refused_text(conn)
    if not tables:
        return "\n".join(["no table has been heard from yet", *refused])
    now = _now(conn)
    stale = {(g.table_id, g.first_seq): g for g in open_gaps(tables, now, grace_s) if g.stale}
    out = [f"{'table':<20} {'state':<8} {'game':<6} {'phase':<10} {'in phase':>9} {'round':<24} alerts"]
    for t in tables:  # every field as a table's messages said it: shown escaped (controller/cli/shown.py)
        # Degraded, offline or lost first, with why (the console's alert of the same kind); a reason in another state
        # (none the contract sends: online clears it) is shown all the same.
        state = f"{shown(t.state)}: {shown(t.reason)}" if t.reason else shown(t.state)
        alerts = [state] if t.reason or t.state in ALERT_STATES else []
        alerts += [f"tilt {shown(k)}" for k in t.tilts]
        alerts += [f"device {shown(d)}: {shown(why)}" for d, why in t.faults.items()]
        alerts += [
            f"jackpot pending {shown(j['level'])} {_dollars(j['amount'])} seat {shown(j['seat'])}"
            for j in t.pending_jackpots.values()
        ]
        alerts += [
            f"seq gap {a}-{b}" + (" STALE: tablectl floor gaps" if (t.table_id, a) in stale else "") for a, b in t.gaps
        ]
        alerts += [f"{t.alarms} integrity alarm(s)"] if t.alarms else []
        out.append(
            f"{shown(t.table_id):<20} {shown(t.state):<8} {shown(t.chapter or '-'):<6} {shown(t.phase):<10} "
            f"{_since(t.phase_since, now):>9} {shown(t.round_id or '-'):<24} {'; '.join(alerts) or 'ok'}"
        )
    return "\n".join([*out, *refused])


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
            f"  alarm {at:%Y-%m-%d %H:%M:%S} {kind} table {shown(table)} seq {seq}: archived {shown(archived)},"
            f" got {shown(received)}"
        )
    for table, first, last, at in gaps:
        out.append(f"  gap   {at:%Y-%m-%d %H:%M:%S} table {shown(table)} seq {first}-{last} missing")
    return "\n".join(out), len(alarms) + len(gaps)


def gaps_text(conn: Conn, config: FloorConfig) -> tuple[str, int]:
    """Every open seq gap, its age, and the `tablectl command send ... resend` lines that fill it; the count of stale
    gaps (open past [gaps] grace_s: non-zero is something for a person to do, floor/gaps.py)."""
    gaps = open_gaps(live_tables(conn), _now(conn), config.gaps.grace_s)
    stale = [g for g in gaps if g.stale]
    out = [f"{len(gaps)} open seq gap(s), {len(stale)} stale (open over {config.gaps.grace_s:g} s)"]
    for g in gaps:
        age = age_text(g.age_s) if g.since else "age unknown"
        state = "STALE" if g.stale else "open"
        out.append(
            f"table {shown(g.table_id)} seq {g.text} missing ({g.last_seq - g.first_seq + 1} event(s)), {state}, {age}"
        )
        out += [
            f"  {shown(line)}"
            for line in resend_command(g.table_id, (g.first_seq, g.last_seq), config.mqtt.broker, config.mqtt.prefix)
        ]
    if stale:
        out.append(
            "to fill one, run its lines with your own key (any role in the table's [[supervisors]]: resend changes "
            "nothing at the table), or press resend on the table in the console; the floor asks nothing by itself"
        )
    return "\n".join(out), len(stale)
