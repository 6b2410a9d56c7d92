"""Writing the refused messages of a batch into rejected_messages, bounded (floor/refusals.py, docs/floor.md
"Refused messages are bounded"): a row each while under the rates, else one counted row per run, updated."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg

from floor.config import IngestSection
from floor.messages import Rejected
from floor.refusals import RefusalBudget, Run

AsyncConn = psycopg.AsyncConnection[tuple[Any, ...]]
REASON_KEPT = 1000  # a reason quotes the message (a key, a value): bounded like its payload


class RefusedWriter:
    def __init__(self, ingest: IngestSection, ticks: Callable[[], float] = time.monotonic) -> None:
        self.keep_bytes = ingest.refused_keep_bytes
        self.budget = RefusalBudget(ingest.refused_rows_per_topic, ingest.refused_rows_per_minute)
        self.ticks = ticks

    async def write(self, conn: AsyncConn, refused: list[Rejected]) -> list[tuple[Run, int]]:
        """A row each, or, for a topic over the rate, one counted row per run (floor/refusals.py). A run's row id is
        taken as its own only once the transaction commits (rolled back, the row is gone and is inserted again)."""
        runs: dict[int, tuple[Run, list[Rejected]]] = {}
        async with conn.cursor() as cur:
            for m in refused:
                run = self.budget.admit(m.topic, self.ticks())
                if run is None:
                    await cur.execute(
                        "INSERT INTO rejected_messages (topic, payload, reason, size, sha256, bytes)"
                        " VALUES (%s, %s, %s, %s, %s, %s)",
                        (m.topic, m.payload[: self.keep_bytes], m.reason[:REASON_KEPT], m.size, m.sha256, m.size),
                    )
                else:
                    runs.setdefault(id(run), (run, []))[1].append(m)
            rows: list[tuple[Run, int]] = []
            for run, ms in runs.values():
                last = ms[-1]  # the row shows the latest of the run; count and bytes are the run's
                values = (
                    last.topic,
                    last.payload[: self.keep_bytes],
                    last.reason[:REASON_KEPT],
                    last.size,
                    last.sha256,
                )
                if run.row is None:
                    await cur.execute(
                        "INSERT INTO rejected_messages (topic, payload, reason, size, sha256, count, bytes)"
                        " VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                        (*values, len(ms), sum(m.size for m in ms)),
                    )
                    got = await cur.fetchone()
                    if got is None:  # INSERT ... RETURNING returns its row
                        raise RuntimeError("rejected_messages: the INSERT returned no id")
                    rows.append((run, int(got[0])))
                else:
                    await cur.execute(
                        "UPDATE rejected_messages SET topic = %s, payload = %s, reason = %s, size = %s, sha256 = %s,"
                        " count = count + %s, bytes = bytes + %s, last_at = now() WHERE id = %s",
                        (*values, len(ms), sum(m.size for m in ms), run.row),
                    )
        return rows
