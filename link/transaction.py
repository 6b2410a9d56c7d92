"""What one transaction on the link's books does (link.store): it holds the levels it locked, runs them through the
pure meter model and adds the events, each with the next seq from the link's state row, then writes back the meters,
the events and the new seq before the store commits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from controller.core.events import DomainEvent
from controller.progressive.model import LevelMeters, Meters
from link.records import State, level_to_json

Conn = psycopg.Connection[tuple[Any, ...]]


class Transaction:
    """What one transaction does: the meters it holds locked, the events it adds (seq from the state row)."""

    def __init__(self, conn: Conn, state: State, levels: Mapping[str, LevelMeters]) -> None:
        self.conn = conn
        self.state = state
        self.meters = Meters(levels=dict(levels), seq=state.seq)
        self.touched: set[str] = set()
        self.rows: list[tuple[int, str, str | None, str | None, str | None, Jsonb]] = []

    def take(self, events: Sequence[DomainEvent], after: Meters, table_id: str | None) -> None:
        for event in events:
            seq = int(event.payload["seq"])
            level = event.payload.get("level")
            if isinstance(level, str):
                self.touched.add(level)
            self.rows.append((seq, event.type, event.rule, table_id, event.round_id, Jsonb(dict(event.payload))))
        # The link keeps no open rounds: a contribution is final once committed (docs/linked-progressives.md).
        self.meters = replace(after, open_rounds={})

    def note(self, type_: str, rule: str | None, payload: Mapping[str, Any], table_id: str | None = None) -> int:
        """A link event that changes no meter (opened, closed, a jackpot pending...): the next seq."""
        seq = self.meters.seq + 1
        self.rows.append((seq, type_, rule, table_id, payload.get("round_id"), Jsonb({"seq": seq, **payload})))
        self.meters = replace(self.meters, seq=seq)
        return seq

    def finish(self) -> None:
        for level in sorted(self.touched):
            self.conn.execute(
                "INSERT INTO link_level (level, meters) VALUES (%s, %s) "
                "ON CONFLICT (level) DO UPDATE SET meters = EXCLUDED.meters",
                (level, Jsonb(level_to_json(self.meters.levels[level]))),
            )
        if self.rows:
            with self.conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO link_event (seq, type, rule, table_id, round_id, payload) "
                    "VALUES (%s, %s, %s, %s, %s, %s)",
                    self.rows,
                )
            self.conn.execute("UPDATE link_state SET seq = %s", (self.meters.seq,))
