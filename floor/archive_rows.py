"""The archive's statements and rows: how the tables' messages become rows of PostgreSQL (floor/archive.py's writer
runs them in one transaction per batch).

Events go through a temporary staging table filled by COPY, then into `event_keys` with ON CONFLICT DO NOTHING and,
for the keys that were new, into their gaming day's partition of `events`; what collides with an archived key raises
an integrity alarm. The retained messages (status, birth, device, meter) are one INSERT each under their natural
keys, ON CONFLICT DO NOTHING, so a message delivered twice is archived once.
"""

from __future__ import annotations

import json
from typing import Any

from psycopg.types.json import Jsonb

from controller.mqtt.contract import Birth, DeviceStatus, ProgressiveMeter, TableEvent, TableStatus
from floor.config import GamingDaySection
from floor.days import gaming_day, parse_ts
from floor.live import STATUS_REASON_KEPT
from floor.messages import Incoming

STAGING = """
CREATE TEMP TABLE IF NOT EXISTS staging_events (
    gaming_day date, table_id text, seq bigint, event_id text, boot_id text, ts timestamptz, ts_text text,
    round_id text, type text, rule text, payload jsonb, replayed boolean, digest bytea
) ON COMMIT DELETE ROWS
"""
COPY = (
    "COPY staging_events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type, rule, payload,"
    " replayed, digest) FROM STDIN"
)
INSERT_EVENTS = """
WITH new AS (
    INSERT INTO event_keys (table_id, seq, event_id, boot_id, digest, gaming_day)
    SELECT table_id, seq, event_id, boot_id, digest, gaming_day FROM staging_events
    ON CONFLICT DO NOTHING
    RETURNING event_id
)
INSERT INTO events (gaming_day, table_id, seq, event_id, boot_id, ts, ts_text, round_id, type, rule, payload, replayed)
SELECT s.gaming_day, s.table_id, s.seq, s.event_id, s.boot_id, s.ts, s.ts_text, s.round_id, s.type, s.rule,
       s.payload, s.replayed
FROM staging_events s JOIN new USING (event_id)
"""
# A seq archived under another event id: the table rolled back (or two tables share an id). The same id with
# other content: the event was changed after it was first published. Either is an integrity alarm, kept with the
# event as received (rebuilt from its columns: the staging table does not carry the JSON twice).
_RECEIVED = """jsonb_build_object('event_id', s.event_id, 'boot_id', s.boot_id, 'seq', s.seq, 'ts', s.ts_text,
    'table_id', s.table_id, 'round_id', s.round_id, 'type', s.type, 'rule', s.rule, 'payload', s.payload,
    'replayed', s.replayed)"""
ALARMS = f"""
INSERT INTO integrity_alarms (kind, table_id, seq, archived_event_id, received_event_id, received_digest, received)
SELECT CASE WHEN k.event_id <> s.event_id THEN 'seq_reused' ELSE 'content_differs' END,
       s.table_id, s.seq, k.event_id, s.event_id, s.digest, {_RECEIVED}
FROM staging_events s JOIN event_keys k ON k.table_id = s.table_id AND k.seq = s.seq
WHERE k.event_id <> s.event_id OR k.digest <> s.digest
UNION ALL
SELECT 'id_reused', s.table_id, s.seq, k.event_id, s.event_id, s.digest, {_RECEIVED}
FROM staging_events s JOIN event_keys k ON k.event_id = s.event_id
WHERE k.table_id <> s.table_id OR k.seq <> s.seq
ON CONFLICT DO NOTHING
RETURNING kind, table_id, seq, archived_event_id, received_event_id
"""


def event_row(m: Incoming, e: TableEvent, gd: GamingDaySection) -> tuple[Any, ...]:
    ts = parse_ts(e.ts)
    payload = json.dumps(e.payload, separators=(",", ":"))
    return (
        gaming_day(ts, gd),
        e.table_id,
        e.seq,
        e.event_id,
        e.boot_id,
        ts,
        e.ts,
        e.round_id,
        e.type,
        e.rule,
        payload,
        e.replayed,
        m.digest,
    )


def _reason(reason: str | None) -> str | None:
    return reason[:STATUS_REASON_KEPT] if reason else None  # as received (a forged table's: bounded all the same)


def _body(m: Incoming) -> tuple[bytes, Jsonb]:
    return m.digest, Jsonb(m.content)


def _meter_body(model: ProgressiveMeter, m: Incoming) -> tuple[int, int, bytes, Jsonb]:
    return model.display_cents, model.reserve_cents, m.digest, Jsonb(m.content)


def retained_row(m: Incoming, gd: GamingDaySection) -> tuple[str, tuple[Any, ...]]:
    model = m.model
    if isinstance(model, TableStatus):
        ts = parse_ts(model.ts)
        return (
            "INSERT INTO statuses (table_id, boot_id, state, ts_text, ts, gaming_day, reason)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (*(model.table_id, model.boot_id, model.state, model.ts, ts), gaming_day(ts, gd), _reason(model.reason)),
        )
    if isinstance(model, Birth):
        ts = parse_ts(model.ts)
        return (
            "INSERT INTO births (table_id, boot_id, ts, gaming_day, digest, payload) VALUES (%s, %s, %s, %s, %s, %s)"
            " ON CONFLICT DO NOTHING",
            (model.table_id, model.boot_id, ts, gaming_day(ts, gd), m.digest, Jsonb(m.content)),
        )
    if isinstance(model, DeviceStatus):
        ts = parse_ts(model.since)
        return (
            "INSERT INTO device_reports (table_id, device_id, boot_id, state, since, gaming_day, digest, payload)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (model.table_id, model.device_id, model.boot_id, model.state, ts, gaming_day(ts, gd), *_body(m)),
        )
    if isinstance(model, ProgressiveMeter):
        ts = parse_ts(model.ts)
        return (
            "INSERT INTO meter_reports (table_id, level, as_of_seq, ts, gaming_day, display_cents, reserve_cents,"
            " digest, payload) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (model.table_id, model.level, model.as_of_seq, ts, gaming_day(ts, gd), *_meter_body(model, m)),
        )
    return "", ()
