"""The MQTT contract's messages as pydantic models (DESIGN.md, docs/mqtt.md): `tablectl schema` prints their
JSON Schemas, the daemon builds what it publishes from them and validates what it receives with them.

Topics under <prefix>/<table_id>/: status, birth, device/<id>, progressive/<level>, event, cmd/<verb>,
cmd/reply.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ISSUED_AT_EXAMPLE = "2026-11-21T08:00:00.000000Z"


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SupervisorCommand(_Message):
    """A signed supervisor command, published (QoS 1, not retained) on <prefix>/<table_id>/cmd/<verb>.

    `signature` is Ed25519 over the command's canonical form: this JSON object without `signature`, keys
    sorted, separators "," and ":" with no spaces, UTF-8 (controller.commands.canonical_bytes). The topic's
    <verb> must equal `verb`, and `table_id` must be the receiving table's, so a signed command cannot be
    redirected to another verb or table.
    """

    command_id: str = Field(pattern=r"^[0-9a-f]{32}$", description="unique per command (uuid4 hex); replies carry it")
    table_id: str = Field(description="the table the command is for")
    verb: str = Field(description="what to do, e.g. verify_deck; equals the topic's last level")
    args: dict[str, Any] = Field(default_factory=dict, description="the verb's arguments")
    issued_at: datetime = Field(description=f"when it was signed, UTC, e.g. {ISSUED_AT_EXAMPLE}")
    nonce: str = Field(pattern=r"^[0-9a-f]{32,64}$", description="random hex, never reused (replay protection)")
    key_id: str = Field(description="which configured supervisor key signed it")
    signature: str = Field(description="base64 of the 64-byte Ed25519 signature over the canonical form")


Outcome = Literal["applied", "ignored", "rejected"]


class CommandReply(_Message):
    """The table's answer on <prefix>/<table_id>/cmd/reply (QoS 1, not retained).

    applied: verified and carried out; ignored: verified, but the table's state does not allow it now (the
    engine's `input.ignored`/`input.refused` event says why); rejected: not carried out because the command
    is malformed, unsigned, badly signed, replayed, stale, for another table or not allowed for the role.
    """

    command_id: str | None = Field(description="the command's id; null when the payload had none readable")
    table_id: str
    verb: str | None
    outcome: Outcome
    reason: str | None = Field(None, description="why it was ignored or rejected, in words an operator can act on")
    event_seqs: list[int] = Field(default_factory=list, description="journal seqs of the events it produced")
    ts: datetime
