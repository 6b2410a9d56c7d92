"""The link's messages on MQTT v5 (docs/linked-progressives.md, "Protocol"; docs/mqtt.md, "The link"): pure models,
no I/O.

Topics under `<prefix>/link/<link_id>/`:

| topic | what | QoS | retained |
|---|---|---|---|
| `request/<table_id>` | a table's `LinkRequest` (response topic and correlation data as MQTT v5 properties) | 1 | no |
| `response/<table_id>` | the controller's `LinkResponse`, with the request's correlation data | 1 | no |
| `event` | every link event in seq order (gap-free) | 1 | no |
| `state` | `LinkState`: open, closed or tilted, the database, each table's lease, what it refused | 1 | yes |
| `progressive/<level>` | `LinkMeter`: what every linked sign shows | 1 | yes |
| `jackpot` | `PendingJackpots`: hits awaiting validation (asset number, level, amount), for every sign | 1 | yes |
| `cmd/<verb>`, `cmd/reply` | signed supervisor commands (controller.supervisor.envelope) and the replies | 1 | no |
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from controller.progressive.parameters import LEVEL_PATTERN

RULE_CITE = "605a.8 (not available; NY 9 NYCRR 5321.18 as the stand-in)"
# 500 contributions are some 30 KB; a request or command over this is refused unread. At most the shipped broker's
# packet limit (controller.config.broker.MAX_PACKET_SIZE, equal to it): the link never decodes more than a packet the
# shipped broker passes (whose payload is smaller still, its topic and header counted), so through that broker this
# never fires; it holds behind a broker configured without the limit, or with it raised for the tables (their
# messages to the link stay small whatever their events are). tests/link/test_hostile_link.py checks it through a
# broker started without the limit.
MAX_REQUEST_BYTES = 64 * 1024
MAX_CONTRIBUTIONS = 500  # per request: one lock-out of a seven-seat table has at most 7 x its progressive spots


def base(prefix: str, link_id: str) -> str:
    return f"{prefix}/link/{link_id}"


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ContributionIn(_Message):
    seat: int = Field(ge=1, le=9)
    wager: str = Field(pattern=LEVEL_PATTERN, description="the progressive wager spot, e.g. progressive")
    cents: int = Field(gt=0, le=100_000_000)


class ClaimIn(_Message):
    seat: int = Field(ge=1, le=9)
    level: str = Field(pattern=LEVEL_PATTERN)
    percent: int = Field(ge=1, le=100, description="the paytable's share of the meter at the player's turn")
    rule: str = Field(min_length=1, max_length=80, description="the subsection that pays it, e.g. 655a.11(i)(1)(iv)")


class PaidIn(_Message):
    """A hit the table paid once a floorperson's signed validate_jackpot there validated it (655a.11(i)(1)(iv))."""

    seat: int = Field(ge=1, le=9)
    level: str = Field(pattern=LEVEL_PATTERN)
    amount_cents: int = Field(ge=0, description="what the table paid: the link's award")
    by: str = Field(min_length=1, max_length=80, description="the key_id that signed the validation at the table")


class LinkRequest(_Message):
    """What a table sends. `round_id` with `contributions` (a lock-out's progressive wagers), `claim` (a hit) or
    `paid` (the hit paid at the table: the link's books close it)."""

    kind: Literal["heartbeat", "contribute", "claim", "paid"]
    round_id: str | None = Field(None, pattern=r"^[A-Za-z0-9_\-.:]{1,96}$")
    contributions: list[ContributionIn] = Field(default_factory=list, max_length=MAX_CONTRIBUTIONS)
    claim: ClaimIn | None = None
    paid: PaidIn | None = None

    @model_validator(mode="after")
    def _one_row_per_spot(self) -> LinkRequest:
        """The link keys a contribution by table, round, seat and wager: two rows of one key in a request (with
        different cents, which would the meters take?) is not a lock-out a table makes."""
        seen: set[tuple[int, str]] = set()
        for c in self.contributions:
            if (c.seat, c.wager) in seen:
                raise ValueError(f"seat {c.seat} twice for {c.wager}: one lock-out has one wager per seat and spot")
            seen.add((c.seat, c.wager))
        return self


class HitOut(_Message):
    table_id: str
    asset_number: str
    round_id: str
    seat: int
    level: str
    order: int = Field(description="the seq of its meter.hit: the order of wins across the link")
    amount_cents: int
    meter_before_cents: int
    validated_by: str | None = None
    # A claim's answer (on the pending jackpots only with [link] jackpot_meter_after: a floor older than it refuses
    # unknown fields, docs/mqtt.md's upgrade order): the table books the link's meter after the award and its reseed,
    # not the chapter's estimate of it. A table older than this field ignores it; a link older than it sends none,
    # and the table estimates as before.
    meter_after_cents: int | None = Field(None, description="the level's meter after the award and its reseed")


class LinkResponse(_Message):
    ok: bool
    kind: str
    error: str | None = None
    status: str = Field(description="open, closed or tilted")
    lease_ms: int = Field(0, description="how long the table may take progressive wagers from sending its request")
    display: dict[str, int] = Field(default_factory=dict, description="cents by level")
    new: int = 0
    duplicates: int = 0
    hit: HitOut | None = None


class TableLease(_Message):
    asset_number: str
    leased: bool
    last_seen: str | None = None


class LinkRefusals(_Message):
    """What the link refused since its process started (link/refusals.py): counts by kind (`request_malformed`,
    `command bad_signature`, ...) and the latest refusal's kind, time, topic and reason, the last two a publisher's
    text escaped (controller/core/shown.py) and cut short."""

    total: int = Field(ge=0)
    counts: dict[str, int]
    last_kind: str | None = None
    last_at: str | None = Field(None, description="UTC, ISO 8601, seconds")
    last_topic: str | None = None
    last_reason: str | None = None


class LinkState(_Message):
    link_id: str
    status: str
    tilt: str | None
    database: Literal["up", "down"]
    seq: int
    tables: dict[str, TableLease]
    rule: str = RULE_CITE
    # None while nothing was refused. A floor older than this field refuses the whole state (its model forbids
    # unknown fields): upgrade the floor first, then the link (docs/mqtt.md, "The link").
    refusals: LinkRefusals | None = None


class LinkMeter(_Message):
    link_id: str
    level: str
    display_cents: int
    seq: int


class PendingJackpots(_Message):
    link_id: str
    pending: list[HitOut]
