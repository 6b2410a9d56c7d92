"""The log lines of refused messages, bounded as their rows are (floor/refusals.py; docs/floor.md "Refused messages
are bounded"): the first refusals of a topic in a minute are said a line each, as any warning; past the rate, one
summary line per topic per minute says how many more were refused and the latest reason. A flood of junk then
neither floods journald nor, by journald's own rate limit, drops the service's other lines; every refusal is still
counted, in a line of its own or in a summary. The floor's listener and the link's request desk share it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import structlog

from floor.config import IngestSection
from floor.refusals import OTHERS, RefusalBudget, RefusalLines, Tally

SUMMARY = "refused messages coalesced"
SAY_EVERY_S = 1.0  # how often a summary whose minute is over is looked for (a flood that stopped is said within it)


class RefusalLog:
    def __init__(
        self,
        log: structlog.typing.FilteringBoundLogger,
        per_topic: int,
        per_minute: int,
        remedy: str,
        ticks: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = log
        self.lines = RefusalLines(RefusalBudget(per_topic, per_minute))
        self.ticks = ticks
        self.remedy = remedy  # said on each line and summary: what a person does about it

    def refused(self, event: str, topic: str, size: int, reason: str, **fields: object) -> None:
        """A refusal: said as `event` with its fields, or counted for its topic's summary line."""
        if self.lines.admit(topic, size, reason, self.ticks()):
            self.log.warning(event, topic=topic, reason=reason, bytes=size, **fields, remedy=self.remedy)

    def say_due(self, everything: bool = False) -> int:
        """Say the summaries whose minute is over (all, at a stop); how many refusals they counted."""
        now = self.ticks()
        tallies = self.lines.due(now, everything)
        for t in tallies:
            self.log.warning(SUMMARY, **summary(t, now), remedy=self.remedy)
        return sum(t.count for t in tallies)

    @classmethod
    def floor(cls, log: structlog.typing.FilteringBoundLogger, ingest: IngestSection) -> RefusalLog:
        """The floor's listener's: at the rates of its rows, [ingest] refused_rows_per_topic and _per_minute."""
        remedy = "fix the publisher; the message is kept in rejected_messages"
        return cls(log, ingest.refused_rows_per_topic, ingest.refused_rows_per_minute, remedy)

    @classmethod
    def defaults(cls, log: structlog.typing.FilteringBoundLogger, remedy: str) -> RefusalLog:
        """At the floor's default rates (the link's refusals: it has no setting of its own for them)."""
        d = IngestSection()
        return cls(log, d.refused_rows_per_topic, d.refused_rows_per_minute, remedy)

    async def run(self) -> None:
        """Until cancelled: a flood's summaries said when their minute is over, even if nothing more comes."""
        while True:
            await asyncio.sleep(SAY_EVERY_S)
            self.say_due()


def summary(t: Tally, now: float) -> dict[str, object]:
    seconds = max(round(now - t.since), 1)
    on = t.topic if t.key != OTHERS else f"{len(t.topics)} topic(s), the latest {t.topic}"
    return {
        "said": f"{t.count} more refused on {on} in the last {seconds} s, latest reason: {t.reason}",
        "count": t.count,
        "bytes": t.bytes,
        "topic": t.topic,
        "topics": len(t.topics),
        "seconds": seconds,
        "reason": t.reason,
    }
