"""Pieces of `tablectl demo --floor` (floor/cli/demo.py) that know nothing of its processes: the start's signals as the
controller hands them in, the linked tables' decks, and the link's reconciliation as the demo prints it."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

HEARTS = ["Ah", "Kh", "Qh", "Jh", "Th", "9h", "8h", "7h", "6h", "5h", "4h", "3h", "2h"]
RANKS = "23456789TJQKA"
T = TypeVar("T")
# How long a table asked to stop at once (SIGTERM: its runner journals `table.stopped`) is waited for, then killed.
TABLE_STOP_S = 10.0


class StartSignals(Protocol):
    """`tablectl demo`'s SIGINT and SIGTERM of the start (controller/shell/start_signals.py, handed in by the CLI,
    which the floor may not import): until `hand_over`, a signal cancels the start's task (`guarding`), and the
    controller says the stop's one line."""

    def reached(self, stage: str) -> None: ...

    async def guarding(self, start: Awaitable[T]) -> T: ...

    def hand_over(self, act: Callable[[str], None]) -> None: ...


class Reporting(Protocol):
    """The link controller as the summary reads it (floor/cli/demo.py's Link: `tablectl link report --json`)."""

    async def report(self) -> tuple[int, str]: ...


def deck_script(rng: random.Random, n: int = 300) -> str:
    """The second shuffle and every third after it deal thirteen hearts from the top: a hit within three rounds."""
    decks = []
    for i in range(n):
        top = HEARTS if i % 3 == 1 else []
        rest = [r + s for s in "cdhs" for r in RANKS if r + s not in top]
        rng.shuffle(rest)
        decks.append(" ".join([*top, *rest]))
    return "decks = [\n" + ",\n".join(json.dumps(d) for d in decks) + "\n]\n"


async def link_summary(link: Reporting) -> int:
    """The link's reconciliation (`tablectl link report`): what each linked table contributed, the hits, the balance."""
    code, out = await link.report()
    try:
        rec = json.loads(out)
    except ValueError:
        print(f"tablectl demo --floor: tablectl link report failed: {out.strip()[-500:]}", file=sys.stderr)
        return 1
    for lv in rec["levels"]:
        by_table = ", ".join(
            f"{t} ${m / 100_000_000:,.2f}" for t, m in sorted(lv["contributions_by_table_micro"].items())
        )
        hits = "; ".join(
            f"{h['table_id']} seat {h['seat']} ${h['amount_cents'] / 100:,.2f} "
            f"({'paid, validated by ' + h['validated_by'] if h.get('validated_by') else 'pending'})"
            for h in lv["hits"]
        )
        print(
            f"link {rec['link_id']} {rec['status']}: {lv['level']} ${lv['display_cents'] / 100:,.2f}; "
            f"contributions {by_table or 'none'}; hits {hits or 'none'}",
            flush=True,
        )
    print(f"tablectl demo --floor: the link's books {'balance' if rec['balanced'] else 'DO NOT balance'}", flush=True)
    return 0 if code == 0 and rec["balanced"] else 1
