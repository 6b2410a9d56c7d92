"""A linked table's side of the link controller's MQTT v5 protocol (docs/linked-progressives.md, "Protocol"): the
messages as pydantic models, pure. The link controller's own models are link/protocol.py, which the controller does
not import (the link is a separate service); tests/link checks that what a table sends is what the link accepts.

Topics under `<prefix>/link/<link_id>/`: the table publishes on `request/<table_id>` (QoS 1, MQTT v5 ResponseTopic
`response/<table_id>` and CorrelationData) and reads `response/<table_id>`, the retained `progressive/<level>` (the
link's meters) and `jackpot` (the hits pending validation across the link).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Sent(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)


class _Heard(BaseModel):
    # What the link sends may grow fields: a table reads what it knows.
    model_config = ConfigDict(defer_build=True, extra="ignore", frozen=True)


class ContributionOut(_Sent):
    seat: int
    wager: str
    cents: int


class ClaimOut(_Sent):
    seat: int
    level: str
    percent: int
    rule: str


class PaidOut(_Sent):
    seat: int
    level: str
    amount_cents: int
    by: str


class RequestOut(_Sent):
    kind: Literal["heartbeat", "contribute", "claim", "paid"]
    round_id: str | None = None
    contributions: list[ContributionOut] = Field(default_factory=list)
    claim: ClaimOut | None = None
    paid: PaidOut | None = None


class HitIn(_Heard):
    table_id: str
    asset_number: str
    round_id: str
    seat: int
    level: str
    order: int
    amount_cents: int = Field(ge=0)
    meter_before_cents: int = Field(ge=0)
    validated_by: str | None = None
    meter_after_cents: int | None = Field(None, ge=0)  # a claim's answer; None from a link older than it


class ResponseIn(_Heard):
    ok: bool
    kind: str
    error: str | None = None
    status: str = "closed"
    lease_ms: int = Field(0, ge=0)
    display: dict[str, int] = Field(default_factory=dict)
    new: int = 0
    duplicates: int = 0
    hit: HitIn | None = None


class MeterIn(_Heard):
    level: str
    display_cents: int = Field(ge=0)


class JackpotsIn(_Heard):
    pending: list[HitIn]


def topics(prefix: str, link_id: str, table_id: str) -> tuple[str, str, str]:
    """(request, response, base) topics of this table on this link."""
    base = f"{prefix}/link/{link_id}"
    return f"{base}/request/{table_id}", f"{base}/response/{table_id}", base
