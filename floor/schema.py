"""The archive's schema in PostgreSQL and its migrations (docs/floor.md, "Schema").

Each migration runs once, in order, in its own transaction, recorded in floor_schema; a database whose recorded
version is newer than this code knows is refused (an older floor service must not write into it).

Events live in `events`, partitioned by gaming day (one partition a day: retention drops whole days). A partitioned
table's unique keys must contain the partition key, so the keys that make archiving idempotent live in
`event_keys`, not partitioned: one row per event, primary key (table_id, seq) and unique event_id, with the
sha256 of the event's content. (table_id, seq) unique is stronger than (table, boot, seq): the seq counts across
boots, so a seq arriving again under another boot or id is the rollback the integrity alarm reports.
"""

from __future__ import annotations

from datetime import date, timedelta

import psycopg
from psycopg.abc import Query

from floor.rounds import MIGRATION as ROUND_DAYS
from floor.ts_index import MIGRATION as TS_INDEX

MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (
        1,
        "events, their keys, the retained messages, the tables' live model, gaps and alarms",
        """
        CREATE TABLE event_keys (
            table_id   text   NOT NULL,
            seq        bigint NOT NULL,
            event_id   text   NOT NULL UNIQUE,
            boot_id    text   NOT NULL,
            digest     bytea  NOT NULL,
            gaming_day date   NOT NULL,
            PRIMARY KEY (table_id, seq)
        );
        CREATE INDEX event_keys_day ON event_keys (gaming_day);

        CREATE TABLE events (
            gaming_day  date        NOT NULL,
            table_id    text        NOT NULL,
            seq         bigint      NOT NULL,
            event_id    text        NOT NULL,
            boot_id     text        NOT NULL,
            ts          timestamptz NOT NULL,
            ts_text     text        NOT NULL,
            round_id    text,
            type        text        NOT NULL,
            rule        text,
            payload     jsonb       NOT NULL,
            replayed    boolean     NOT NULL,
            received_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (gaming_day, event_id),
            UNIQUE (gaming_day, table_id, boot_id, seq)
        ) PARTITION BY RANGE (gaming_day);
        CREATE INDEX events_round ON events (round_id, seq);
        CREATE INDEX events_table_ts ON events (table_id, ts);
        CREATE INDEX events_type_ts ON events (type, ts);

        CREATE TABLE statuses (
            table_id text NOT NULL, boot_id text NOT NULL, state text NOT NULL, ts_text text NOT NULL,
            ts timestamptz NOT NULL, gaming_day date NOT NULL, received_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (table_id, boot_id, state, ts_text)
        );
        CREATE TABLE births (
            table_id text NOT NULL, boot_id text NOT NULL, ts timestamptz NOT NULL, gaming_day date NOT NULL,
            digest bytea NOT NULL, payload jsonb NOT NULL, received_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (table_id, digest)
        );
        CREATE TABLE device_reports (
            table_id text NOT NULL, device_id text NOT NULL, boot_id text NOT NULL, state text NOT NULL,
            since timestamptz NOT NULL, gaming_day date NOT NULL, digest bytea NOT NULL, payload jsonb NOT NULL,
            received_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (table_id, device_id, digest)
        );
        CREATE TABLE meter_reports (
            table_id text NOT NULL, level text NOT NULL, as_of_seq bigint NOT NULL, ts timestamptz NOT NULL,
            gaming_day date NOT NULL, display_cents bigint NOT NULL, reserve_cents bigint NOT NULL,
            digest bytea NOT NULL, payload jsonb NOT NULL, received_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (table_id, level, digest)
        );
        CREATE INDEX meter_reports_ts ON meter_reports (table_id, level, ts);

        CREATE TABLE floor_tables (
            table_id         text PRIMARY KEY,
            first_seen       timestamptz NOT NULL DEFAULT now(),
            updated_at       timestamptz NOT NULL DEFAULT now(),
            archived_through bigint NOT NULL DEFAULT 0,
            seq_ranges       jsonb NOT NULL DEFAULT '[]',
            live             jsonb NOT NULL DEFAULT '{}'
        );
        CREATE TABLE seq_gaps (
            table_id    text   NOT NULL,
            first_seq   bigint NOT NULL,
            last_seq    bigint NOT NULL,
            detected_at timestamptz NOT NULL DEFAULT now(),
            filled_at   timestamptz,
            PRIMARY KEY (table_id, first_seq, last_seq)
        );
        CREATE TABLE integrity_alarms (
            id                bigserial PRIMARY KEY,
            detected_at       timestamptz NOT NULL DEFAULT now(),
            kind              text   NOT NULL,
            table_id          text   NOT NULL,
            seq               bigint NOT NULL,
            archived_event_id text   NOT NULL,
            received_event_id text   NOT NULL,
            received_digest   bytea  NOT NULL,
            received          jsonb  NOT NULL,
            UNIQUE (kind, table_id, seq, received_event_id, received_digest)
        );
        CREATE TABLE rejected_messages (
            id bigserial PRIMARY KEY, received_at timestamptz NOT NULL DEFAULT now(), topic text NOT NULL,
            payload bytea NOT NULL, reason text NOT NULL
        );
        CREATE TABLE exports (
            gaming_day  date PRIMARY KEY,
            path        text NOT NULL,
            sha256      text NOT NULL,
            events      bigint NOT NULL,
            exported_at timestamptz NOT NULL DEFAULT now()
        );
        """,
    ),
    (
        2,
        "the console: enrolled keys and the record of every log-in and action",
        """
        CREATE TABLE console_keys (
            key_id      text        PRIMARY KEY,
            role        text        NOT NULL,
            public_key  text        NOT NULL UNIQUE,
            enrolled_at timestamptz NOT NULL DEFAULT now(),
            approved_at timestamptz,
            approved_by text
        );
        CREATE TABLE console_audit (
            id          bigserial   PRIMARY KEY,
            at          timestamptz NOT NULL DEFAULT now(),
            action      text        NOT NULL,
            key_id      text,
            role        text,
            table_id    text,
            verb        text,
            command_id  text,
            outcome     text        NOT NULL,
            reason      text,
            envelope    text,
            reply       jsonb,
            remote      text
        );
        CREATE INDEX console_audit_at ON console_audit (at);
        """,
    ),
    (
        3,
        "the linked progressives' events, as each link controller published them (gap-free seq per link)",
        """
        CREATE TABLE link_events (
            link_id     text        NOT NULL,
            seq         bigint      NOT NULL,
            ts_text     text        NOT NULL,
            type        text        NOT NULL,
            rule        text,
            table_id    text,
            round_id    text,
            payload     jsonb       NOT NULL,
            received_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (link_id, seq)
        );
        """,
    ),
    (
        4,
        "exports signed by a person's key: the signer's public key and when the signature was recorded",
        """
        ALTER TABLE exports ADD COLUMN signer_public_key text, ADD COLUMN signed_at timestamptz;
        """,
    ),
    (
        5,
        "refused messages bounded: the payload's size and sha256 kept with its first bytes; a flood in counted rows",
        """
        ALTER TABLE rejected_messages
            ADD COLUMN size bigint, ADD COLUMN sha256 bytea, ADD COLUMN count bigint NOT NULL DEFAULT 1,
            ADD COLUMN bytes bigint, ADD COLUMN last_at timestamptz;
        UPDATE rejected_messages SET size = length(payload), sha256 = sha256(payload), bytes = length(payload),
            last_at = received_at;
        ALTER TABLE rejected_messages ALTER COLUMN size SET NOT NULL, ALTER COLUMN sha256 SET NOT NULL,
            ALTER COLUMN bytes SET NOT NULL, ALTER COLUMN last_at SET NOT NULL, ALTER COLUMN last_at SET DEFAULT now();
        CREATE INDEX rejected_messages_last_at ON rejected_messages (last_at);
        """,
    ),
    (
        6,
        "a status's reason: why a table said degraded (or offline after a fault), as received, bounded",
        """
        ALTER TABLE statuses ADD COLUMN reason text;
        """,
    ),
    (
        7,
        "the per-round summary kept at ingest (round_days), so a report reads only the rounds that count in it",
        ROUND_DAYS,
    ),
    (
        8,
        "a BRIN index on the events' ts: the parent's at once, each older day's built beside the archiving",
        TS_INDEX,
    ),
)

LATEST = MIGRATIONS[-1][0]


class SchemaError(RuntimeError):
    """The database's schema cannot be used by this version of the floor service."""


def migrate(conn: psycopg.Connection[tuple[object, ...]], upto: int = LATEST) -> int:
    """Bring the schema up to LATEST (or `upto`: an archive as an older floor left it, for the tests and benches of a
    later migration); returns the version found before. Serialised by an advisory lock so two services starting at
    once do not both migrate."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(16016016)")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS floor_schema (version int PRIMARY KEY, summary text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        row = conn.execute("SELECT coalesce(max(version), 0) FROM floor_schema").fetchone()
        found = int(str(row[0])) if row else 0
        if found > LATEST:
            raise SchemaError(
                f"the archive's schema is version {found}, newer than this tablectl knows ({LATEST}): "
                "upgrade tablectl on this machine"
            )
        for version, summary, sql in MIGRATIONS:
            if found < version <= upto:
                conn.execute(_query(sql))
                conn.execute("INSERT INTO floor_schema (version, summary) VALUES (%s, %s)", (version, summary))
    return found


def _query(sql: str) -> Query:
    # The migrations are constants of this module, never built from input.
    return sql.encode()


def partition_name(day: date) -> str:
    return f"events_{day:%Y%m%d}"


def partition_ddl(day: date) -> bytes:
    name = partition_name(day)
    nxt = day + timedelta(days=1)
    return (
        f"CREATE TABLE IF NOT EXISTS {name} PARTITION OF events FOR VALUES FROM ('{day.isoformat()}') "
        f"TO ('{nxt.isoformat()}')"
    ).encode()


def partitions(conn: psycopg.Connection[tuple[object, ...]]) -> list[date]:
    """The gaming days that have a partition, oldest first."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'events' ORDER BY c.relname"
    ).fetchall()
    out = []
    for (name,) in rows:
        text = str(name).removeprefix("events_")
        out.append(date(int(text[:4]), int(text[4:6]), int(text[6:8])))
    return out
