"""What the link refused, counted by reason, for where an operator looks (docs/linked-progressives.md, "Refusals"):
the systemd status line (`systemctl status tablectl-link`) and the link's retained state, which the floor console's
link panel shows. Counted by a fixed kind, never by the refusal's text (a publisher's words, of any number): the log
line of each refusal has the text. Pure; counted since the process started.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

Kind = Literal[
    "request_malformed",  # not JSON, not the protocol's shape, a value PostgreSQL could not store
    "request_too_big",  # over MAX_REQUEST_BYTES, not read
    "response_topic",  # answers asked on a topic not the requesting table's own (a forged or misconfigured table)
    "table_not_on_link",  # a table the link's [[tables]] does not list
    "contribution",  # a contribution the books refused (a wager spot with no meter, what the database refused)
    "claim",  # a claim refused (an unknown level, a round claimed otherwise)
    "paid",  # a paid report refused (a hit the link never recorded, another amount)
    "command",  # a command refused: `command <code>` (malformed, replayed, bad signature, refused...)
]

# What a person does about a flood of refusals, said in each of their log lines (floor/refusal_log.py).
REFUSED_REMEDY = "fix or stop the publisher: a table's configuration or a supervisor's tool"


class Refusals:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def note(self, kind: Kind, code: str | None = None) -> None:
        self.counts[f"{kind} {code}" if code else kind] += 1

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def text(self) -> str:
        """`N refused (kind n, ...)`, the commonest first; empty while none was."""
        if not self.counts:
            return ""
        by = ", ".join(f"{k} {n}" for k, n in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])))
        return f"{self.total} refused ({by})"
