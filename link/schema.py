"""The link's tables in PostgreSQL, and their migrations (each version applied once, in one transaction).

- link_state: one row; the link's status (closed, open, tilted), the seq of its last event, its parameters. Every
  change takes this row's lock first, so the link's events get a gap-free seq in commit order.
- link_level: one row per meter level, its counters (controller.progressive.model.COUNTERS) as JSON; a hit
  takes the level's row lock, so two tables hitting at once are ordered by commit and the second sees the
  reseeded meter (NY 9 NYCRR 5321.18, stand-in for 605a.8: the order of wins is recorded).
- link_contribution: one row per (table, round, seat, wager), inserted at most once (ON CONFLICT DO NOTHING),
  in the same transaction as the meter change: a resent contribution changes nothing.
- link_hit: one row per (table, round, seat, level) claim; `hit_seq` is the seq of its meter.hit: the order.
- link_event: every change, in seq order, as published.
- link_command: every signed command received (who, when, what, and whether it was refused), once per id.
"""

from __future__ import annotations

from typing import Any

import psycopg

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE link_state (
        id boolean PRIMARY KEY DEFAULT true CHECK (id),
        link_id text NOT NULL,
        status text NOT NULL CHECK (status IN ('closed', 'open', 'tilted')),
        tilt text,
        seq bigint NOT NULL,  -- the last event's seq: the next event takes seq + 1
        published_seq bigint NOT NULL DEFAULT 0,
        params jsonb NOT NULL,
        params_version integer NOT NULL DEFAULT 1
    );
    CREATE TABLE link_level (
        level text PRIMARY KEY,
        meters jsonb NOT NULL
    );
    CREATE TABLE link_contribution (
        table_id text NOT NULL,
        round_id text NOT NULL,
        seat integer NOT NULL,
        wager text NOT NULL,
        cents bigint NOT NULL CHECK (cents > 0),
        seq bigint NOT NULL,  -- the first event seq of the transaction that counted it
        received_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (table_id, round_id, seat, wager)
    );
    CREATE TABLE link_hit (
        table_id text NOT NULL,
        round_id text NOT NULL,
        seat integer NOT NULL,
        level text NOT NULL,
        hit_seq bigint NOT NULL UNIQUE,
        amount_cents bigint NOT NULL,
        meter_before_cents bigint NOT NULL,
        rule text NOT NULL,
        claimed_at timestamptz NOT NULL DEFAULT now(),
        validated_at timestamptz,
        validated_by text,
        command_id text,
        PRIMARY KEY (table_id, round_id, seat, level)
    );
    CREATE TABLE link_event (
        seq bigint PRIMARY KEY,
        ts timestamptz NOT NULL DEFAULT now(),
        type text NOT NULL,
        rule text,
        table_id text,
        round_id text,
        payload jsonb NOT NULL
    );
    CREATE TABLE link_command (
        command_id text PRIMARY KEY,
        nonce text NOT NULL UNIQUE,
        key_id text NOT NULL,
        role text,
        verb text NOT NULL,
        args jsonb NOT NULL,
        issued_at timestamptz NOT NULL,
        received_at timestamptz NOT NULL DEFAULT now(),
        outcome text NOT NULL,
        reason text
    );
    """,
)
LATEST = len(MIGRATIONS)


class SchemaError(RuntimeError):
    pass


def migrate(conn: psycopg.Connection[Any]) -> int:
    """Apply what is missing; returns the version found. Refuses a database newer than this tablectl."""
    with conn.transaction():
        conn.execute("CREATE TABLE IF NOT EXISTS link_schema (version integer PRIMARY KEY, applied_at timestamptz)")
        conn.execute("LOCK TABLE link_schema IN EXCLUSIVE MODE")  # two controllers starting at once: one migrates
        row = conn.execute("SELECT coalesce(max(version), 0) FROM link_schema").fetchone()
        found = int(row[0]) if row else 0
        if found > LATEST:
            raise SchemaError(f"the link database is at schema version {found}, newer than this tablectl's {LATEST}")
        for version in range(found + 1, LATEST + 1):
            conn.execute(MIGRATIONS[version - 1].encode())
            conn.execute("INSERT INTO link_schema VALUES (%s, now())", (version,))
    return found
