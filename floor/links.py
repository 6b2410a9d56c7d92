"""The linked progressives as the floor sees them: the link controller's retained topics folded into one model per
link (pure: no I/O, no clock but the times given).

The link controller (`tablectl link`, docs/linked-progressives.md) publishes under `<prefix>/link/<link_id>/`:
`state` (open, closed or tilted, its database, each table's lease), `progressive/<level>` (what every linked sign
shows), `jackpot` (the hits awaiting validation) and `event` (every link event, gap-free seq). The floor may not
import the link's package (pyproject.toml's layering: the floor names the link by its topics), so the models
below mirror link/protocol.py, and tests/floor/test_console_links.py holds their fields equal to it.

`state` is also the link's last will, `{"status": "offline"}`: every other field of it is optional here. Its
`refusals` (what the link refused, by kind, and the latest) is absent from a link older than it and from one that
refused nothing; a floor older than it refuses a state that carries it (its models forbid unknown fields), hence the
upgrade order, the floor first, then the link (docs/mqtt.md, "The link"). Within `refusals` alone, a field this floor
does not know is passed over (LinkRefusalsMsg): a link may add to its refusal summary, which the floor only shows,
without the floor upgraded first. Every other model here forbids unknown fields, as the tables' contract does
(controller/mqtt/contract.py): a field the floor does not know in a lease, a meter, a hit or an event may change what
the floor's reading of the rest means, so it is refused rather than read past.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from controller.core.shown import shown

LEVEL = r"^[a-z_]{1,32}$"  # controller.progressive.parameters.LEVEL_PATTERN
RULE = "605a.8 (not available; NY 9 NYCRR 5321.18 as the stand-in)"


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LinkTableLease(_Msg):
    asset_number: str
    leased: bool
    last_seen: str | None = None


class LinkRefusalsMsg(_Msg):
    """link/protocol.py's LinkRefusals. Bounded as a link sends it (a handful of kinds, the latest refusal's topic and
    reason cut short), with room: a retained state past these is refused whole, leases and all. A field it does not
    know is passed over, not refused (the module's docstring): the message's size and depth bound it (messages.py)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    total: int = Field(ge=0)
    counts: dict[Annotated[str, Field(max_length=64)], Annotated[int, Field(ge=0)]] = Field(max_length=64)
    last_kind: str | None = Field(None, max_length=64)
    last_at: str | None = Field(None, max_length=40)
    last_topic: str | None = Field(None, max_length=1000)
    last_reason: str | None = Field(None, max_length=2000)


class LinkStateMsg(_Msg):
    link_id: str | None = None
    status: str = Field(min_length=1, max_length=32)
    tilt: str | None = None
    database: Literal["up", "down"] | None = None
    seq: int | None = Field(None, ge=0)
    tables: dict[str, LinkTableLease] = Field(default_factory=dict)
    rule: str | None = None
    refusals: LinkRefusalsMsg | None = None  # absent: a link older than it, or one that refused nothing


class LinkMeterMsg(_Msg):
    link_id: str
    level: str = Field(pattern=LEVEL)
    display_cents: int = Field(ge=0)
    seq: int = Field(ge=0)


class LinkHitMsg(_Msg):
    table_id: str
    asset_number: str
    round_id: str
    seat: int = Field(ge=1, le=9)
    level: str = Field(pattern=LEVEL)
    order: int = Field(ge=1)
    amount_cents: int = Field(ge=0)
    meter_before_cents: int = Field(ge=0)
    validated_by: str | None = None
    # A claim's answer's (link/protocol.py HitOut); on the pending list only from a link with [link]
    # jackpot_meter_after (docs/mqtt.md's upgrade order), read and shown here when it comes.
    meter_after_cents: int | None = Field(None, ge=0)


class LinkJackpotsMsg(_Msg):
    link_id: str
    pending: list[LinkHitMsg]


class LinkEventMsg(_Msg):
    seq: int = Field(ge=1)
    ts: str
    type: str = Field(min_length=1, max_length=64)
    rule: str | None = None
    table_id: str | None = None
    round_id: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)


LinkKind = Literal["link_state", "link_meter", "link_jackpot", "link_event"]
LinkModel = LinkStateMsg | LinkMeterMsg | LinkJackpotsMsg | LinkEventMsg
LINK_MODELS: dict[LinkKind, type[BaseModel]] = {
    "link_state": LinkStateMsg,
    "link_meter": LinkMeterMsg,
    "link_jackpot": LinkJackpotsMsg,
    "link_event": LinkEventMsg,
}


def link_kind_of(prefix: str, topic: str) -> tuple[str, LinkKind] | None:
    """(link_id, kind) for a link topic the floor takes; None for any other (requests, answers, commands)."""
    if not topic.startswith(prefix + "/link/"):
        return None
    parts = topic[len(prefix) + 6 :].split("/")
    if len(parts) == 2 and parts[1] == "state":
        return parts[0], "link_state"
    if len(parts) == 2 and parts[1] == "jackpot":
        return parts[0], "link_jackpot"
    if len(parts) == 2 and parts[1] == "event":
        return parts[0], "link_event"
    if len(parts) == 3 and parts[1] == "progressive":
        return parts[0], "link_meter"
    return None


def _refusals_shown(r: LinkRefusalsMsg | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "total": r.total,
        "counts": {shown(k)[:64]: n for k, n in sorted(r.counts.items())},
        "last_kind": shown(r.last_kind)[:64] if r.last_kind else None,
        "last_at": shown(r.last_at)[:40] if r.last_at else None,
        "last_topic": shown(r.last_topic)[:200] if r.last_topic else None,
        "last_reason": shown(r.last_reason)[:300] if r.last_reason else None,
    }


def link_subscriptions(prefix: str) -> list[str]:
    return [f"{prefix}/link/+/{t}" for t in ("state", "progressive/+", "jackpot", "event")]


def hit_key(hit: dict[str, Any]) -> str:
    """A linked hit's name on the floor: the link's order of wins is unique per link."""
    return f"{hit['level']}#{hit['order']}"


@dataclass
class LinkLive:
    link_id: str
    status: str = "unknown"  # open, closed, tilted; offline by the link's last will; unknown before any
    tilt: str | None = None
    database: str | None = None
    seq: int = 0
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)  # table_id -> asset_number, leased, last_seen
    meters: dict[str, dict[str, Any]] = field(default_factory=dict)  # level -> display_cents, seq
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # hit_key -> the hit and since when
    status_since: str | None = None
    last_event_seq: int = 0
    # What the link refused, as its state last said (None: nothing, or a link too old to say). Its kinds, topic and
    # reason are outside text: escaped here as the floor escapes a publisher's text (controller/core/shown.py), and
    # the page sets them as text, never markup.
    refusals: dict[str, Any] | None = None

    def apply(self, model: LinkModel, at: str) -> None:
        """Fold one message in; `at` is when the floor received it (the link's retained topics carry no time)."""
        if isinstance(model, LinkStateMsg):
            if model.status != self.status:
                self.status, self.status_since = model.status, at
            self.tilt = model.tilt
            if model.status == "offline":
                self.tables = {t: {**v, "leased": False} for t, v in self.tables.items()}
                return  # the last will says nothing else: the leases lapse, the rest is as last known
            self.database = model.database
            self.seq = max(self.seq, model.seq or 0)
            self.tables = {t: v.model_dump() for t, v in model.tables.items()}
            self.refusals = _refusals_shown(model.refusals)
        elif isinstance(model, LinkMeterMsg):
            old = self.meters.get(model.level)
            if old is None or model.seq >= int(old["seq"]):
                self.meters[model.level] = {"display_cents": model.display_cents, "seq": model.seq}
        elif isinstance(model, LinkJackpotsMsg):
            now = {hit_key(h.model_dump()): h.model_dump() for h in model.pending if h.validated_by is None}
            self.pending = {k: {**h, "since": self.pending.get(k, {}).get("since", at)} for k, h in now.items()}
        else:
            self.last_event_seq = max(self.last_event_seq, model.seq)

    def link_of(self, table_id: str) -> dict[str, Any] | None:
        """What a linked table's tile shows of its link: the link's state and the table's lease."""
        lease = self.tables.get(table_id)
        if lease is None:
            return None
        return {
            "link_id": self.link_id,
            "status": self.status,
            "tilt": self.tilt,
            "database": self.database,
            "leased": bool(lease.get("leased")),
            "last_seen": lease.get("last_seen"),
            "asset_number": lease.get("asset_number"),
            "healthy": self.status == "open" and self.database == "up" and bool(lease.get("leased")),
        }

    def panel(self) -> dict[str, Any]:
        return {**asdict(self), "pending": sorted(self.pending.values(), key=lambda h: int(h["order"])), "rule": RULE}
