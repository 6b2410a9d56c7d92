"""How many rows the floor's refused messages may add to `rejected_messages` (pure; docs/floor.md, "Bad input").

Every refusal is counted, none is kept whole: a row holds the first [ingest] refused_keep_bytes of the payload, its
full size and sha256. A topic refused more than [ingest] refused_rows_per_topic times in a sliding minute has its
further refusals coalesced into one counted row (first and last time, count, bytes, the last one's sha256, size,
reason and first bytes) for as long as it stays over that rate; and past [ingest] refused_rows_per_minute new rows
in a minute over all topics, what comes goes to its topic's open run or to one shared run (OTHERS). So a flood of
any rate and any number of topics adds at most refused_rows_per_minute + 1 rows a minute, each bounded, while a
message refused now and then keeps a row of its own. The minute is on the monotonic clock (passed in): a step of a
wall clock neither frees a flood nor coalesces an honest trickle.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

WINDOW_S = 60.0
MAX_TOPICS = 10_000  # topics tracked at once; past it the others share one count (a flood of topics stays bounded)
OTHERS = "(other topics)"


@dataclass
class Run:
    """A topic's refusals coalesced while it is over the rate: one row, `row` its id once committed."""

    key: str
    row: int | None = None
    last: float = 0.0


@dataclass
class RefusalBudget:
    per_topic: int = 60
    per_minute: int = 120
    _seen: dict[str, deque[float]] = field(default_factory=dict)  # every refusal's time, by topic
    _rows: deque[float] = field(default_factory=deque)  # when each row (a message's or a run's) was added
    runs: dict[str, Run] = field(default_factory=dict)

    def admit(self, topic: str, now: float) -> Run | None:
        """None: this refusal gets a row of its own. Else the run it is counted in (its `row` None: a new row)."""
        key = self._key(topic, now)
        seen = self._seen.setdefault(key, deque(maxlen=self.per_topic))
        while seen and seen[0] <= now - WINDOW_S:
            seen.popleft()
        while self._rows and self._rows[0] <= now - WINDOW_S:
            self._rows.popleft()
        over = len(seen) >= self.per_topic
        seen.append(now)
        room = len(self._rows) < self.per_minute
        if not over and room:
            self.runs.pop(key, None)  # back under the rate: its run is complete, a next flood opens another
            self._rows.append(now)
            return None
        run = self.runs.get(key) if over else None
        if run is None and room:
            run = self.runs[key] = Run(key)
            self._rows.append(now)
        if run is None:
            run = self.runs.setdefault(OTHERS, Run(OTHERS))
        run.last = now
        return run

    def _key(self, topic: str, now: float) -> str:
        if topic in self._seen or len(self._seen) < MAX_TOPICS:
            return topic
        for t in [t for t, seen in self._seen.items() if not seen or seen[-1] <= now - WINDOW_S]:
            del self._seen[t]
            self.runs.pop(t, None)
        return topic if len(self._seen) < MAX_TOPICS else OTHERS


@dataclass
class Tally:
    """The refusals of one run not said one by one since its last summary line (floor/refusal_log.py)."""

    key: str
    since: float
    count: int = 0
    bytes: int = 0
    topics: set[str] = field(default_factory=set)
    topic: str = ""  # the latest's, with its reason and time
    reason: str = ""
    last: float = 0.0

    def add(self, topic: str, size: int, reason: str, now: float) -> None:
        self.count += 1
        self.bytes += size
        if len(self.topics) < MAX_TOPICS:
            self.topics.add(topic)
        self.topic, self.reason, self.last = topic, reason, now


@dataclass
class RefusalLines:
    """Which refusals a log says a line each: the rows' budget applied to lines. The rest are counted by run and said
    in one summary line per run per window (`due`), at most per_minute of them and one for the rest, so a flood of
    any rate over any number of topics says at most 2 * per_minute + 1 lines a minute and every refusal is counted."""

    budget: RefusalBudget
    tallies: dict[str, Tally] = field(default_factory=dict)

    def admit(self, topic: str, size: int, reason: str, now: float) -> bool:
        """True: say this refusal in a line of its own. False: it is counted in its run's next summary."""
        run = self.budget.admit(topic, now)
        if run is None:
            return True
        tally = self.tallies.get(run.key)
        if tally is None:
            tally = self.tallies[run.key] = Tally(run.key, now)
        tally.add(topic, size, reason, now)
        return False

    def due(self, now: float, everything: bool = False) -> list[Tally]:
        """The summaries whose window is over (all of them: `everything`, at a stop), taken out of the tallies."""
        done = [t for t in self.tallies.values() if everything or t.since <= now - WINDOW_S]
        for t in done:
            del self.tallies[t.key]
        done.sort(key=lambda t: -t.count)
        if len(done) <= self.budget.per_minute:
            return done
        rest = Tally(OTHERS, min(t.since for t in done[self.budget.per_minute :]))
        for t in sorted(done[self.budget.per_minute :], key=lambda t: t.last):
            rest.count += t.count
            rest.bytes += t.bytes
            rest.topics |= t.topics
            rest.topic, rest.reason, rest.last = t.topic, t.reason, t.last
        return [*done[: self.budget.per_minute], rest]
