"""The MQTT contract's messages as pydantic models (DESIGN.md, docs/mqtt.md): `tablectl schema` prints their
JSON Schemas, the daemon builds what it publishes from them and validates what it receives with them.

Topics under <prefix>/<table_id>/: status, birth, device/<id>, progressive/<level>, event, anchor, cmd/<verb>,
cmd/reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from controller.release.manifest import Verdict

ISSUED_AT_EXAMPLE = "2026-11-21T08:00:00.000000Z"


class _Message(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)


class SupervisorCommand(_Message):
    """A signed supervisor command, published (QoS 1, not retained) on <prefix>/<table_id>/cmd/<verb>.

    `signature` is Ed25519 over the command's canonical form: this JSON object without `signature`, keys
    sorted, separators "," and ":" with no spaces, UTF-8 (controller.supervisor.envelope.canonical_bytes). The topic's
    <verb> must equal `verb`, and `table_id` must be the receiving table's, so a signed command cannot be
    redirected to another verb or table. The table verifies the canonical form of the JSON object it received,
    so a signer must not use floats in `args` (their text is not canonical across languages). docs/commands.md
    lists the verbs, their args and the roles that may use them.
    """

    command_id: str = Field(pattern=r"^[0-9a-f]{32}$", description="unique per command (uuid4 hex); replies carry it")
    table_id: str = Field(pattern=r"^[A-Za-z0-9_\-]+$", description="the table the command is for")
    verb: str = Field(
        pattern=r"^[a-z_]{1,40}$", description="what to do, e.g. verify_deck; equals the topic's last level"
    )
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


class SeqsMissing(_Message):
    """Seqs a `resend` asked for that the table cannot send, and why."""

    first_seq: int
    last_seq: int
    why: str = Field(description="rolled back, archived out of reach, damaged, not journaled (yet), ...")


class Resent(_Message):
    """What a `resend` did: how many of the seqs asked for went out again on `event`, and which the table has not."""

    from_seq: int
    to_seq: int
    sent: int = Field(description="events published again, each flagged replayed, in seq order")
    missing: list[SeqsMissing] = Field(
        default_factory=list,
        description="ranges of seqs not sent, each with why, in seq order: the first 50 at most (a `why` cut to 160 "
        "characters), so the reply stays well under the broker's packet limit; `missing_not_listed` counts the rest",
    )
    missing_not_listed: int = Field(
        0,
        ge=0,
        description="ranges of seqs not sent that `missing` leaves out (absent when none): ask again from the seq "
        "after the last listed range to have them named",
    )
    seqs_not_listed: int = Field(0, ge=0, description="how many seqs those ranges hold (absent when none)")


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
    code: str | None = Field(
        None,
        description="the rejection as a word a program can test, e.g. bad_signature, "
        "stale, replayed (docs/commands.md); null unless rejected",
    )
    event_seqs: list[int] = Field(default_factory=list, description="journal seqs of the events it produced")
    ts: datetime
    resent: Resent | None = Field(None, description="a `resend`'s result; absent from every other reply")


# -- what the table publishes ---------------------------------------------------------------------------------

# Digits are spelled [0-9], never \d: in pydantic-core's Rust regex \d is every Unicode digit (a stamp in Arabic-Indic
# digits passed), and its Unicode tables cost the daemon about 1 MB resident (0.65 MB at the first such pattern, 0.16
# MB more for each model that validates one; issue 19). The stamps and rates the table writes are ASCII.
ISO_UTC = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z$"
TS_EXAMPLE = "2026-11-21T08:00:00.000000Z"
# A string rather than a datetime: the journal's stamp is published verbatim (a datetime would re-render it,
# e.g. drop ".000000"), so a consumer comparing with the journal sees the same text.
Timestamp = Annotated[
    str,
    Field(
        pattern=ISO_UTC,
        json_schema_extra={"format": "date-time"},
        description=f"UTC, ISO 8601 with a Z, e.g. {TS_EXAMPLE}",
    ),
]
# One MQTT topic level: no "/", "+" or "#", so an id can never widen or redirect a topic.
TopicLevel = Annotated[str, Field(pattern=r"^[A-Za-z0-9_\-]+$")]
TableId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_\-]+$", description="the table's id, as in its topics")]
BootId = Annotated[str, Field(min_length=1, description="changes at every start of the daemon (uuid4 hex)")]
Cents = Annotated[int, Field(ge=0, description="integer cents")]
RATE = r"^(100(\.0+)?|[0-9]{1,2}(\.[0-9]+)?)$"


class TableStatus(_Message):
    """Retained on <prefix>/<table_id>/status (QoS 1): online once connected, degraded while one of the daemon's
    tasks is down or a task's tilt stands, or a retained topic's latest value is held back as too large for the broker
    (`reason` says which), offline when the daemon stops (with `reason` when
    a fault stopped it), lost when the broker loses the connection (the MQTT last will, so it is the broker that
    says so)."""

    state: Literal["online", "degraded", "offline", "lost"]
    table_id: TableId
    boot_id: BootId
    ts: Timestamp = Field(description="when the table said so; for lost, when the connection was opened")
    reason: str | None = Field(
        None,
        description="why the table is degraded (a task down or restarting, a task's tilt, a retained topic stale "
        "on the broker: `birth stale: ...`) or stopped (a storage failure); absent when online or stopped normally",
    )


class Software(_Message):
    name: Literal["tablectl"] = "tablectl"
    version: str = Field(description="the installed tablectl version")
    code_sha256: str = Field(
        pattern=r"^[0-9a-f]{64}$",
        description=(
            "the overall digest of the installed code (605a.4(c)): sha256 of what `sha256sum` prints for every file "
            "of controller/, drivers/, floor/ and link/ but __pycache__, in byte order of the paths relative to the "
            "installation (docs/software.md says how a laboratory recomputes it)"
        ),
    )
    code_files: int = Field(ge=1, description="how many files the digest covers")
    verdict: Verdict = Field(
        "no_manifest",
        description="the check at start against the signed release manifest: verified, mismatch, no_manifest, "
        "bad_manifest, bad_signature, untrusted_key or no_release_keys (docs/software.md)",
    )
    release_key: str | None = Field(None, description="the public key that signed the manifest, when there is one")


class GameInfo(_Message):
    chapter: str = Field(pattern=r"^[0-9]{3}a$", description="the chapter of 58 Pa. Code, e.g. 655a")
    name: str = Field(description="the game's name in the chapter, e.g. Mississippi Stud")
    seats: int = Field(ge=1)
    dealing_method: Literal["automated_shoe", "manual_shoe", "hand"]
    rules: dict[str, Any] = Field(
        description="the config's [game] table with every default filled in: the "
        "paytable letters, wager limits (cents) and table procedure"
    )


class PaytableInfo(_Message):
    """One paytable in force, as the chapter prints it."""

    wager: str = Field(description="the wager it pays, as the events name it (ante, three_card_bonus, ...)")
    citation: str = Field(description="where the table is printed, e.g. 655a.12(d) paytable A")
    letter: str | None = Field(description="the letter the certificate holder selected; null for a fixed table")
    rows: dict[str, str] = Field(
        description="hand class -> award as the chapter writes it: '40 to 1', '50 for 1', "
        "'100% of the mega meter', '$1,000', 'push' or 'lose'"
    )


class DeviceInfo(_Message):
    device_id: TopicLevel = Field(description="the id used in device/<id> and in device events")
    driver: str = Field(description="the driver's entry-point name (table_controller.drivers)")
    port: str | None = Field(None, description="the configured port, if the driver has one")
    seat: int | None = Field(None, ge=1, description="the seat a wager station or terminal serves")
    identity: dict[str, str] | None = Field(
        description="model, serial, firmware, firmware_hash as the device reported them in this boot; null until "
        "it has answered"
    )


class Birth(_Message):
    """Retained on <prefix>/<table_id>/birth (QoS 1), at every (re)connect and whenever a device identifies
    itself: what runs this table, under which rules, on which devices."""

    table_id: TableId
    boot_id: BootId
    ts: Timestamp = Field(description="when the daemon started")
    software: Software
    game: GameInfo
    paytables: list[PaytableInfo]
    devices: list[DeviceInfo]


DeviceState = Literal["unknown", "online", "offline", "unusable", "out_of_order"]


class DeviceStatus(_Message):
    """Retained on <prefix>/<table_id>/device/<device_id> (QoS 1), derived from the journaled device events of
    this boot and published right after the event that changed it.

    state: unknown (not heard from since the daemon started), online (answered), offline (does not answer),
    unusable (the engine stopped using it after a fault or loss, 13(g) of the chapter), out_of_order (covered or with
    a sign indicating that it is out of order placed on it, 13(g), and another method took over). A fault report
    does not change the state by itself: it is kept in fault_* until the device comes back online or back into
    service.
    """

    table_id: TableId
    boot_id: BootId
    device_id: TopicLevel
    online: bool | None = Field(description="whether it answered at its last report; null before any")
    state: DeviceState
    reason: str | None = Field(None, description="why it is offline, unusable or out of order")
    rule: str | None = Field(None, description="the subsection behind the state, e.g. 655a.13(g)")
    fault_code: str | None = Field(None, description="its last fault since it was last online: jam, timeout, ...")
    fault_detail: str | None = None
    fault_at: Timestamp | None = None
    since: Timestamp = Field(description="when the state last changed (the daemon's start for unknown)")
    seq: int | None = Field(None, ge=1, description="journal seq of the event that last changed this status")


class ProgressiveMeter(_Message):
    """Retained on <prefix>/<table_id>/progressive/<level> (QoS 1): a progressive meter's values, published
    after the events that changed them (each meter update is journaled first)."""

    table_id: TableId
    level: TopicLevel = Field(
        description="the meter's level: progressive, mega, major, minor, five_card_hand_bonus, ..."
    )
    display_cents: Cents = Field(description="the amount the meter shows: what a 100% award pays now")
    seed_cents: Cents = Field(description="the amount the meter started from")
    reseed_cents: Cents = Field(description="the amount it returns to after a 100% award")
    # Exact decimal strings, not floats: an examiner compares them with the schedule (655a.12(c)(3): "21%").
    primary_rate_percent: str = Field(
        pattern=RATE,
        description='primary incrementation rate: percent of each wager added to the meter, e.g. "21" or "2.5"',
    )
    reserve_rate_percent: str = Field(pattern=RATE, description="reserve incrementation rate, as primary")
    reserve_cents: Cents = Field(description="the reserve accumulated towards the next reseed")
    hits: int = Field(ge=0, description="awards paid from this meter")
    rule: str | None = Field(None, description="the subsection fixing seed and rates, e.g. 655a.12(c)(3)")
    as_of_seq: int = Field(ge=0, description="journal seq of the last event that changed the meter")
    ts: Timestamp


class TableEvent(_Message):
    """Every journaled event, on <prefix>/<table_id>/event (QoS 1, not retained), in seq order.

    seq counts from 1 per table without gaps, across restarts; event_id is unique; delivery is at least once,
    so dedupe by event_id and detect gaps by seq. `payload` differs by `type` (docs/events.md) and never holds
    a card identity before the round's settlement.
    """

    event_id: str = Field(min_length=1, description="unique per event (a uuid7 in hex: time-ordered)")
    boot_id: BootId = Field(description="the boot that journaled it")
    seq: int = Field(ge=1)
    ts: Timestamp = Field(description="when it was journaled")
    table_id: TableId
    round_id: str | None = Field(description="<table_id>-r<round number>; null between rounds")
    type: str = Field(pattern=r"^[a-z0-9_]+(\.[a-z0-9_]+)*$", description="e.g. hand.settled (docs/events.md)")
    rule: str | None = Field(
        description="the subsection that makes it happen, e.g. 655a.11(h)(3); null for "
        "events about the controller and its devices"
    )
    payload: dict[str, Any]
    replayed: bool = Field(
        False,
        description="true when journaled while the broker was away (or before a "
        "restart) and published later; absent on live events",
    )


class JournalAnchor(_Message):
    """Retained on <prefix>/<table_id>/anchor (QoS 1): the last event the broker acknowledged and its hash in the
    journal's chain, published each time the outbox is drained and after a reconnect. At start the table reads it
    back (with a bounded wait) and holds its journal against it: a journal that ends before `seq`, or has another
    hash there, lost committed events, and the table starts under the `tilt:rollback` tilt with its next event after
    `seq`, so a seq the floor holds is never used again for another event (docs/journal.md, "The anchor")."""

    table_id: TableId
    boot_id: BootId = Field(description="the boot that published it")
    seq: int = Field(ge=1, description="the highest seq the broker has acknowledged")
    hash: str = Field(pattern=r"^[0-9a-f]{64}$", description="the journal's chain hash at that seq (docs/journal.md)")
    round_no: int = Field(ge=0, description="the highest round number journaled so far: numbering continues after it")
    ts: Timestamp


# -- the topics ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Topic:
    """One topic of the contract under <prefix>/<table_id>/."""

    name: str  # "status", "device/<id>", ...
    model: type[BaseModel]
    qos: int
    retain: bool
    sender: Literal["table", "supervisor"]
    summary: str


TOPICS: tuple[Topic, ...] = (
    Topic("status", TableStatus, 1, True, "table", "online, offline, or lost (the last will)"),
    Topic("birth", Birth, 1, True, "table", "software version and code hash, game, paytables, devices"),
    Topic("device/<id>", DeviceStatus, 1, True, "table", "one device: online, state, last fault, since"),
    Topic("progressive/<level>", ProgressiveMeter, 1, True, "table", "one progressive meter's values"),
    Topic("event", TableEvent, 1, False, "table", "every journaled event, in seq order"),
    Topic("anchor", JournalAnchor, 1, True, "table", "the last seq the broker acknowledged and its chain hash"),
    Topic("cmd/<verb>", SupervisorCommand, 1, False, "supervisor", "a signed supervisor command"),
    Topic("cmd/reply", CommandReply, 1, False, "table", "the table's answer to a command"),
)


def topic_for(name: str) -> Topic:
    """The contract's topic for a topic name ("event"), a topic under a table ("device/shoe", "cmd/reply") or a
    model name ("DeviceStatus"); KeyError naming the known ones otherwise."""
    for t in TOPICS:
        if name in (t.name, t.model.__name__):
            return t
    head, _, rest = name.partition("/")
    for t in TOPICS:
        pattern_head, _, pattern_rest = t.name.partition("/")
        if pattern_rest.startswith("<") and head == pattern_head and rest and "/" not in rest:
            return t
    known = ", ".join(f"{t.name} ({t.model.__name__})" for t in TOPICS)
    raise KeyError(f"{name!r} is not a topic of the MQTT contract; known: {known}")


class Topics:
    """The full topic names of one table."""

    def __init__(self, prefix: str, table_id: str) -> None:
        self.table_id = table_id
        self.base = f"{prefix}/{table_id}"
        self.status = f"{self.base}/status"
        self.birth = f"{self.base}/birth"
        self.event = f"{self.base}/event"
        self.anchor = f"{self.base}/anchor"
        self.cmd_reply = f"{self.base}/cmd/reply"

    def device(self, device_id: str) -> str:
        return f"{self.base}/device/{device_id}"

    def progressive(self, level: str) -> str:
        return f"{self.base}/progressive/{level}"

    def cmd(self, verb: str) -> str:
        return f"{self.base}/cmd/{verb}"

    def relative(self, topic: str) -> str | None:
        """`device/shoe` for `<prefix>/<table_id>/device/shoe`; None for another table's topic."""
        return topic[len(self.base) + 1 :] if topic.startswith(self.base + "/") else None
