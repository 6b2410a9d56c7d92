"""How often one client may try the console's doors, and how many live streams it holds (the clocks are passed in;
docs/console.md, "Limits").

Enrolling adds a row to console_keys and every refused log-in a row to console_audit: anyone who reaches the console
can do both. `Attempts` counts them per client address over a sliding minute; past the limit the client is told to
wait (429, Retry-After) and what it keeps sending is not judged. `Refusals` is what those refusals leave in the
record: one audit row per client's run of refusals, its count and first and last seen kept up to date, instead of a
row a request.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from floor.console.plumbing import http_error

# A rate is a count over a duration, and durations are the monotonic clock's (seconds, time.monotonic in the service):
# the wall clocks step (the host's under NTP; the floor's, the database's, when it is read again or after a failover to
# a server whose clock differs), and a step forward would free a flooding client at once, one backward hold an honest
# one out for as long. The refusals' evidence (first and last seen) is on the floor's clock, as every audit row's `at`.
Ticks = Callable[[], float]
WINDOW_S = 60.0
MAX_CLIENTS = 10_000  # addresses tracked at once; past it they share one count (a flood from many is still bounded)
OTHERS = "(other addresses)"
WRITE_EVERY = timedelta(seconds=1)  # a run's audit row is brought up to date at most this often while it goes on


class Attempts:
    def __init__(self, per_minute: int) -> None:
        self.limit = per_minute
        self._seen: dict[str, deque[float]] = {}

    def retry_after(self, client: str, now: float) -> int | None:
        """Seconds until `client` may try again (at least 1), or None: it may now. `now` in ticks (monotonic s)."""
        seen = self._seen.get(self._key(client, now))
        if seen is None:
            return None
        while seen and seen[0] <= now - WINDOW_S:
            seen.popleft()
        if len(seen) < self.limit:
            return None
        return max(1, math.ceil(seen[0] + WINDOW_S - now))

    def count(self, client: str, now: float) -> None:
        seen = self._seen.setdefault(self._key(client, now), deque(maxlen=self.limit))
        seen.append(now)

    def _key(self, client: str, now: float) -> str:
        if client in self._seen or len(self._seen) < MAX_CLIENTS:
            return client
        for c in [c for c, seen in self._seen.items() if not seen or seen[-1] <= now - WINDOW_S]:
            del self._seen[c]
        return client if len(self._seen) < MAX_CLIENTS else OTHERS


@dataclass
class Run:
    """One client's run of refusals while over the limit: the evidence an examiner needs, in one audit row."""

    client: str
    first: datetime
    last: datetime
    count: int = 1
    row: int | None = None  # console_audit.id once written
    written: datetime | None = None  # when the row was last brought up to date
    written_count: int = 0

    def due(self, now: datetime) -> bool:
        return self.count != self.written_count and (self.written is None or now - self.written >= WRITE_EVERY)

    def evidence(self, limit: int) -> dict[str, object]:
        return {
            "count": self.count,
            "first_seen": self.first.isoformat(),
            "last_seen": self.last.isoformat(),
            "limit_per_minute": limit,
            "client": self.client,
        }


class Refusals:
    """The open runs, by client. A run ends once its client may try again; it is then written a last time. A run
    whose last write failed is kept in `owed` (gone from `runs`, so a new run of the client's starts afresh): the
    stop writes it, or its warning line names it. Before, it was dropped from memory and its refusals the audit
    lacked were said nowhere."""

    def __init__(self) -> None:
        self.runs: dict[str, Run] = {}
        self.owed: list[Run] = []

    def unwritten(self) -> list[Run]:
        """Every run whose audit row lacks refusals: the open ones and the ended ones still owed."""
        return [r for r in (*self.owed, *self.runs.values()) if r.count != r.written_count]

    def still_owed(self, run: Run) -> int:
        """`run` ended and its last write failed: kept for the stop (at most MAX_CLIENTS, the oldest given up past
        that, each said in its own log line when it failed). The number given up."""
        self.owed.append(run)
        dropped = max(0, len(self.owed) - MAX_CLIENTS)
        del self.owed[:dropped]
        return dropped

    def refused(self, client: str, now: datetime) -> Run:
        run = self.runs.get(client)
        if run is None:
            if len(self.runs) >= MAX_CLIENTS:
                client = OTHERS
                run = self.runs.get(client)
            if run is None:
                run = self.runs[client] = Run(client, now, now, 0)
        run.count += 1
        run.last = now
        return run

    def ended(self, client: str) -> Run | None:
        return self.runs.pop(client, None)


class Streams:
    """Live event streams held open, by session token: each is a socket, a task and a queue of up to 2000 updates,
    and one session (or a script with its cookie) could open them without end ([console] streams_per_session,
    max_streams)."""

    def __init__(self, per_session: int, most: int) -> None:
        self.per_session, self.most = per_session, most
        self.open: dict[str, int] = {}

    def refusal(self, token: str) -> str | None:
        """Why this session may not open another stream now, in words that say the fix; None: it may."""
        if self.open.get(token, 0) >= self.per_session:
            return (
                f"this session already has {self.per_session} live streams open, as many as one may ([console]"
                " streams_per_session; each console tab holds one): close the console in a tab you do not use, then"
                " reload this one"
            )
        if sum(self.open.values()) >= self.most:
            return (
                f"the console already serves {self.most} live streams, as many as it holds open ([console]"
                " max_streams): reload in a minute, or ask an administrator to raise the limit"
            )
        return None

    @contextmanager
    def held(self, token: str, retry_after: int) -> Iterator[None]:
        """A stream of this session's, counted while it is open; 429 with Retry-After if it may not open now."""
        problem = self.refusal(token)
        if problem is not None:
            raise http_error(429, problem, headers={"Retry-After": str(retry_after)})
        self.open[token] = self.open.get(token, 0) + 1
        try:
            yield
        finally:
            left = self.open.pop(token, 1) - 1
            if left:
                self.open[token] = left
