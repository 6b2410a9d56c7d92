"""Seq gaps that stay open, and the command a person runs to fill one (docs/floor.md, "A gap that stays").

A table replaying after an outage fills its own gaps within seconds. One that stays past `[gaps] grace_s` (a broker
without persistence that acknowledged and died, the floor started after the table published, a message a bridge
dropped) is stale: the table still has those events, and a signed `resend {from_seq, to_seq}` makes it publish them
again. The floor holds no private key (DESIGN.md, "The floor": tables stay sovereign), so it never asks by itself: it
shows the stale gap (log, `tablectl floor gaps`, status, the console, whose resend button is signed in the browser)
with the exact `tablectl command send` line, and a person with a key of their own signs it.

Pure: the caller gives the live models and the clock (tests/floor/test_gaps.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from floor.days import parse_ts
from floor.live import TableLive
from floor.seqtrack import Range

# At most this many seqs one resend may ask for: the table's limit (controller.supervisor.verbs.MAX_RESEND, which the
# floor may not import; tests/commands/test_resend_gate.py holds the two equal).
MAX_SEQS = 10_000


# At most this many commands are offered for one gap. A single event with a seq near 2**63 (a table's bug, or a
# publisher the ACL let in) opens a gap of that width: spelt out whole it was some 10**15 lines, which the service
# built in memory when the gap went stale. A gap wider than this is more likely a wrong seq than lost events.
MAX_COMMANDS = 100


def chunks(gap: Range) -> list[Range]:
    """A gap as commands of at most MAX_SEQS seqs, lowest first; the first MAX_COMMANDS of them."""
    first, last = gap
    last_asked = min(last, first + MAX_SEQS * MAX_COMMANDS - 1)
    return [(a, min(a + MAX_SEQS - 1, last_asked)) for a in range(first, last_asked + 1, MAX_SEQS)]


def resend_command(table_id: str, gap: Range, broker: str, prefix: str) -> list[str]:
    """The `tablectl command send` lines a person runs for a gap, with a key of their own in the table's
    [[supervisors]] (any role: resend changes nothing at the table)."""
    return [
        f"tablectl command send --key KEY.pem --key-id KEY_ID --broker {broker} --prefix {prefix} --table {table_id} "
        f"resend from_seq={first} to_seq={last}"
        for first, last in chunks(gap)
    ] + _beyond(gap)


def _beyond(gap: Range) -> list[str]:
    first, last = gap
    more = last - first + 1 - MAX_SEQS * MAX_COMMANDS
    if more <= 0:
        return []
    return [
        f"# and {more} more seq(s) up to {last}: a gap this wide is more likely a wrong seq than lost events; "
        "compare the table's journal (tablectl journal) before resending"
    ]


def carry_since(old: Sequence[Sequence[int]], old_since: Sequence[str], new: Sequence[Range], now: str) -> list[str]:
    """When each of the `new` gaps opened. Seqs arriving only shrink or split a gap, and a gap opens only above every
    archived seq, so a new gap lying in old ones is as old as the oldest of them; one lying in none opened `now`."""
    out: list[str] = []
    for first, last in new:
        inside = [
            old_since[i] if i < len(old_since) and old_since[i] else now
            for i, (a, b) in enumerate(old)
            if not (last < a or b < first)
        ]
        out.append(min(inside, key=parse_ts) if inside else now)
    return out


@dataclass(frozen=True, slots=True)
class OpenGap:
    table_id: str
    first_seq: int
    last_seq: int
    since: str  # when the floor first saw it missing (a contract timestamp)
    age_s: float
    stale: bool  # open longer than the grace period: a table's own replay no longer explains it

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.table_id, self.first_seq, self.last_seq)

    @property
    def text(self) -> str:
        return f"{self.first_seq}-{self.last_seq}" if self.first_seq != self.last_seq else str(self.first_seq)


def age_text(seconds: float) -> str:
    s = max(int(seconds), 0)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def open_gaps(tables: Iterable[TableLive], now: datetime, grace_s: float) -> list[OpenGap]:
    """Every table's open gaps, by table id then seq, each with its age and whether it is stale. A gap whose opening
    was not recorded (archived before the floor kept it) is stale: it is older than this floor's run."""
    out: list[OpenGap] = []
    for t in sorted(tables, key=lambda t: t.table_id):
        for i, (first, last) in enumerate(t.gaps):
            since = t.gap_since[i] if i < len(t.gap_since) and t.gap_since[i] else ""
            age = (now - parse_ts(since)).total_seconds() if since else 0.0
            out.append(OpenGap(t.table_id, first, last, since, max(age, 0.0), not since or age >= grace_s))
    return out


@dataclass
class StaleWatch:
    """Which stale gaps were already said: the log warns once a gap. What stays of one partly filled since (a resend
    under way arrives over several batches) lies within it, and is not said again."""

    said: set[tuple[str, int, int]] = field(default_factory=set)

    def newly_stale(self, gaps: Iterable[OpenGap]) -> list[OpenGap]:
        stale = [g for g in gaps if g.stale]
        new = [
            g
            for g in stale
            if not any(t == g.table_id and not (g.last_seq < a or b < g.first_seq) for t, a, b in self.said)
        ]
        self.said = {g.key for g in stale}
        return new
