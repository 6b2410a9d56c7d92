"""The MQTT contract's messages as pydantic models (DESIGN.md, docs/mqtt.md): `tablectl schema` prints their
JSON Schemas, the daemon builds what it publishes from them and validates what it receives with them.

Topics under <prefix>/<table_id>/: status, birth, device/<id>, progressive/<level>, event, cmd/<verb>,
cmd/reply.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

ISSUED_AT_EXAMPLE = "2026-11-21T08:00:00.000000Z"


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SupervisorCommand(_Message):
    """A signed supervisor command, published (QoS 1, not retained) on <prefix>/<table_id>/cmd/<verb>.

    `signature` is Ed25519 over the command's canonical form: this JSON object without `signature`, keys
    sorted, separators "," and ":" with no spaces, UTF-8 (controller.commands.canonical_bytes). The topic's
    <verb> must equal `verb`, and `table_id` must be the receiving table's, so a signed command cannot be
    redirected to another verb or table. The table verifies the canonical form of the JSON object it received,
    so a signer must not use floats in `args` (their text is not canonical across languages). docs/commands.md
    lists the verbs, their args and the roles that may use them.
    """

    command_id: str = Field(pattern=r"^[0-9a-f]{32}$", description="unique per command (uuid4 hex); replies carry it")
    table_id: str = Field(pattern=r"^[A-Za-z0-9_\-]+$", description="the table the command is for")
    verb: str = Field(pattern=r"^[a-z_]{1,40}$",
                      description="what to do, e.g. verify_deck; equals the topic's last level")
    args: dict[str, Any] = Field(default_factory=dict, description="the verb's arguments")
    issued_at: AwareDatetime = Field(description=f"when it was signed, with its UTC offset, e.g. {ISSUED_AT_EXAMPLE}")
    nonce: str = Field(pattern=r"^[0-9a-f]{32,64}$", description="random hex, never reused (replay protection)")
    key_id: str = Field(pattern=r"^[A-Za-z0-9_.@\-]{1,64}$", description="which configured supervisor key signed it")
    signature: str = Field(min_length=1, description="base64 of the 64-byte Ed25519 signature over the canonical form")

    @field_validator("issued_at", mode="before")
    @classmethod
    def _text_time(cls, value: object) -> object:
        # A number would be read as a Unix time; the contract's form is ISO 8601 text, which the signer signed.
        if not isinstance(value, str):
            raise ValueError(f"must be ISO 8601 text such as {ISSUED_AT_EXAMPLE}")
        return value


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
    code: str | None = Field(None, description="the rejection as a word a program can test, e.g. bad_signature, "
                                               "stale, replayed (docs/commands.md); null unless rejected")
    event_seqs: list[int] = Field(default_factory=list, description="journal seqs of the events it produced")
    ts: datetime
