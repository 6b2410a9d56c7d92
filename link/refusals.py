"""What the link refused, counted by reason, for where an operator looks (docs/linked-progressives.md, "Refusals"):
the systemd status line (`systemctl status tablectl-link`) and the link's retained state, which the floor console's
link panel shows. Counted by a fixed kind, never by the refusal's text (a publisher's words, of any number): the log
line of each refusal has the text, and the latest one's is kept, escaped and cut short, for the state. Pure but for
the clock it is given; counted since the process started.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal

from controller.core.shown import shown

Kind = Literal[
    "request_malformed",  # not JSON, not the protocol's shape, a value PostgreSQL could not store
    "request_too_big",  # over MAX_REQUEST_BYTES, not read
    "response_topic",  # answers asked on a topic not the requesting table's own (a forged or misconfigured table)
    "no_response_topic",  # a request with no MQTT v5 response topic: nowhere to answer (an MQTT 3.1.1 client, a probe)
    "table_not_on_link",  # a table the link's [[tables]] does not list
    "contribution",  # a contribution the books refused (a wager spot with no meter, what the database refused)
    "claim",  # a claim refused (an unknown level, a round claimed otherwise)
    "paid",  # a paid report refused (a hit the link never recorded, another amount)
    "command",  # a command refused: `command <code>` (malformed, replayed, bad signature, refused...)
]

# What a person does about a flood of refusals, said in each of their log lines (floor/refusal_log.py).
REFUSED_REMEDY = "fix or stop the publisher: a table's configuration or a supervisor's tool"
# The latest refusal's topic and reason as the state carries them: a publisher's text, escaped as a terminal would
# be shown it (controller/core/shown.py) and cut to these many characters, so the retained state stays small.
TOPIC_CHARS = 200
REASON_CHARS = 300


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Refusals:
    def __init__(self, clock: Callable[[], str] = _utc_now) -> None:
        self.counts: Counter[str] = Counter()
        self.clock = clock
        self.last_kind: str | None = None
        self.last_at: str | None = None
        self.last_topic: str | None = None
        self.last_reason: str | None = None

    def note(self, kind: Kind, code: str | None = None, *, topic: str = "", reason: str = "") -> None:
        key = f"{kind} {code}" if code else kind
        self.counts[key] += 1
        self.last_kind, self.last_at = key, self.clock()
        self.last_topic = shown(topic)[:TOPIC_CHARS] or None
        self.last_reason = shown(reason)[:REASON_CHARS] or None

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def text(self) -> str:
        """`N refused (kind n, ...)`, the commonest first; empty while none was."""
        if not self.counts:
            return ""
        by = ", ".join(f"{k} {n}" for k, n in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])))
        return f"{self.total} refused ({by})"
