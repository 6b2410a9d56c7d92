"""The database's clock, as the floor service reads it: one clock for every age the floor measures against a time it
stamped (docs/floor.md, "A gap that stays").

`tablectl floor gaps` and `tablectl floor status` may run on any host and measure with the database's `now()`; the
service stamps when a seq gap opened and measures its age on its own host. With the host's wall clock, a skew between
the two hosts showed as a wrong age (a gap an hour old at birth on a floor host an hour behind). So the service takes
the database's time too: read with `clock_timestamp()` when the connection is new and then at most every RESYNC_S,
carried in between by the monotonic clock, which the host's wall-clock steps do not move. No query per batch.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

RESYNC_S = 60.0  # how long the carried reading is trusted before the next batch reads the database's clock again


class DbClock:
    def __init__(self) -> None:
        self._db: datetime | None = None
        self._at = 0.0  # time.monotonic() when _db was read
        self._stale = True

    @property
    def due(self) -> bool:
        return self._stale or time.monotonic() - self._at >= RESYNC_S

    def reset(self) -> None:
        """A new connection (perhaps to another server after a failover): read its clock at the next batch."""
        self._stale = True

    async def sync(self, conn: psycopg.AsyncConnection[tuple[Any, ...]]) -> None:
        """Read the database's clock on `conn` (an autocommit connection: no transaction is left open)."""
        row = await (await conn.execute("SELECT clock_timestamp()")).fetchone()
        if row is not None:
            self._db, self._at, self._stale = row[0].astimezone(UTC), time.monotonic(), False

    def now(self) -> datetime:
        """The database's time now; the host's own until the first reading (nothing stamped is measured before)."""
        if self._db is None:
            return datetime.now(UTC)
        return self._db + timedelta(seconds=time.monotonic() - self._at)

    def stamp(self) -> str:
        """now() as a contract timestamp (UTC, microseconds, Z)."""
        return self.now().isoformat(timespec="microseconds").replace("+00:00", "Z")
