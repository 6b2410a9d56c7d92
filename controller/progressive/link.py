"""What a linked progressive's signs show of the hits pending validation across the link (docs/linked-progressives.md):
pure data, shared by the engine's state and its inputs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LinkJackpot:
    """A hit pending validation somewhere on the link, as every linked sign shows it."""

    table_id: str
    asset_number: str
    level: str
    amount_cents: int
    order: int
