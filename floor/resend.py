"""Asking a table to publish again the events a seq gap misses (docs/floor.md, "Asking a table to send again").

A gap that a table's own replay does not fill (a broker without persistence that acknowledged and died, the floor
started after the table published, a message a bridge dropped) stays open for good. When the floor has a key of its
own (`[resend]`, role `floor` in the tables' [[supervisors]], which allows `resend` and nothing else), it signs
`resend {from_seq, to_seq}` for each gap older than `grace_s`, relays it like the console relays a supervisor's
command (floor/console/relay.py), and logs the request and the reply; the events come back on `event`, flagged
replayed, and are archived as any other (the gap is marked filled when they arrive). Requests back off (doubling up to
`backoff_max_s`) and at most `max_outstanding` are in flight. Seqs a table answers it does not have (rolled back,
archived out of reach) are not asked for again in this run; the log and `tablectl floor gaps` keep saying the gap.

`ResendPlan` is pure (tests/floor/test_resend.py drives it with a clock); `resend_command` is what an operator runs
when the floor has no key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from floor.seqtrack import Range

# At most this many seqs one resend may ask for: the table's limit (controller.supervisor.verbs.MAX_RESEND, which the
# floor may not import; tests/floor/test_resend.py holds the two equal).
MAX_SEQS = 10_000

Key = tuple[str, int, int]  # table, first seq, last seq of one request


def chunks(gap: Range) -> list[Range]:
    """A gap as requests of at most MAX_SEQS seqs, lowest first."""
    first, last = gap
    return [(a, min(a + MAX_SEQS - 1, last)) for a in range(first, last + 1, MAX_SEQS)]


def _minus(gaps: list[Range], taken: list[Range]) -> list[Range]:
    """`gaps` without the seqs of `taken`."""
    out: list[Range] = []
    for first, last in gaps:
        pieces = [(first, last)]
        for a, b in taken:
            nxt: list[Range] = []
            for x, y in pieces:
                if b < x or y < a:
                    nxt.append((x, y))
                    continue
                if x < a:
                    nxt.append((x, a - 1))
                if b < y:
                    nxt.append((b + 1, y))
            pieces = nxt
        out += pieces
    return out


@dataclass
class _Ask:
    due_at: float
    attempts: int = 0
    outstanding: bool = False


@dataclass
class ResendPlan:
    """Which gaps to ask for now (pure; the caller gives the gaps and the clock)."""

    grace_s: float
    backoff_max_s: float
    max_outstanding: int
    asks: dict[Key, _Ask] = field(default_factory=dict)
    # Seqs a table said it does not have: not asked for again in this run.
    unavailable: dict[str, list[Range]] = field(default_factory=dict)

    def due(self, gaps: Mapping[str, list[Range]], now: float) -> list[Key]:
        """The requests to send now, each marked outstanding until `answered`: every open gap (less what its table
        does not have) older than the grace period, in chunks of MAX_SEQS, within `max_outstanding`."""
        current: set[Key] = set()
        for table_id, table_gaps in gaps.items():
            for gap in _minus(table_gaps, self.unavailable.get(table_id, [])):
                for first, last in chunks(gap):
                    current.add((table_id, first, last))
        for key in list(self.asks):
            if key not in current and not self.asks[key].outstanding:
                del self.asks[key]  # filled, or narrowed into another key (which waits its own grace)
        for key in current:
            self.asks.setdefault(key, _Ask(now + self.grace_s))
        room = self.max_outstanding - sum(1 for a in self.asks.values() if a.outstanding)
        out: list[Key] = []
        for key in sorted(current, key=lambda k: (self.asks[k].due_at, k)):
            ask = self.asks[key]
            if room <= 0 or ask.due_at > now:
                break
            if ask.outstanding:
                continue
            ask.outstanding = True
            out.append(key)
            room -= 1
        return out

    def answered(self, key: Key, now: float, missing: list[Range] | None = None) -> None:
        """A request's reply came (or did not): it is asked again after the backoff if its gap stays; `missing` are
        the seqs its table said it does not have."""
        ask = self.asks.get(key)
        if ask is not None:
            ask.outstanding = False
            ask.attempts += 1
            ask.due_at = now + min(max(self.grace_s, 1.0) * 2 ** (ask.attempts - 1), self.backoff_max_s)
        if missing:
            table_id = key[0]
            self.unavailable[table_id] = sorted([*self.unavailable.get(table_id, []), *missing])


def resend_command(table_id: str, gap: Range, broker: str, prefix: str) -> list[str]:
    """The `tablectl command send` lines an operator runs for a gap (a key of role floor, technician or supervisor)."""
    return [
        f"tablectl command send --key KEY.pem --key-id KEY_ID --broker {broker} --prefix {prefix} --table {table_id} "
        f"resend from_seq={first} to_seq={last}"
        for first, last in chunks(gap)
    ]
