"""Signed supervisor commands: the canonical form, Ed25519 signing and verification, roles, replay protection,
freshness, and each verb's arguments and engine input (docs/commands.md).

`CommandGate.check` takes a payload as it came off the broker and returns either `Accepted` (with the engine
input to step) or `Rejected` (with a code and a reason an operator can act on). It never raises on bad input:
whatever the bytes, the answer is one of the two. The checks run cheapest and least revealing first; a
command's id and nonce are recorded only once its signature verified and it is fresh, so that a forger who
copies a real command's id cannot burn it before the real one arrives.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import sqlite3
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from controller.config.keys import decode_public_key
from controller.config.table import CommandSettings, Role, Supervisor
from controller.engine.inputs import (
    AcknowledgeTilt,
    ClearTilt,
    CloseTable,
    Confirm,
    FloorpersonDecision,
    Input,
    MarkOutOfOrder,
    OpenTable,
    Signed,
    ValidateJackpot,
)
from controller.mqtt.contract import SupervisorCommand
from controller.store.journal import connect

# A command is a few hundred bytes; anything much larger is not one, and is refused before it is parsed.
MAX_PAYLOAD_BYTES = 16 * 1024
# Seen command ids and nonces are kept this long past max_age_seconds, so that a table clock stepped back by
# NTP within this margin cannot make a pruned command fresh (and acceptable) again.
REPLAY_MARGIN_SECONDS = 60.0

_REQUIRED = ("command_id", "table_id", "verb", "issued_at", "nonce", "key_id", "signature")


# -- the canonical form and signatures ---------------------------------------------------------------------


def canonical_bytes(body: Mapping[str, Any]) -> bytes:
    """What is signed: the command's JSON object without `signature`, keys sorted at every level, no spaces,
    UTF-8 (a lone surrogate escaped in the JSON is kept as is, so any parsed object has one canonical form)."""
    unsigned = {k: v for k, v in body.items() if k != "signature"}
    text = json.dumps(unsigned, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8", "surrogatepass")


def iso_utc(t: datetime) -> str:
    return t.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def sign_command(
    key: Ed25519PrivateKey,
    *,
    table_id: str,
    verb: str,
    key_id: str,
    args: Mapping[str, Any] | None = None,
    issued_at: datetime | None = None,
    command_id: str | None = None,
    nonce: str | None = None,
) -> dict[str, Any]:
    """A complete command envelope, signed. Fresh command_id and nonce unless given (tests give them)."""
    body: dict[str, Any] = {
        "command_id": command_id or uuid.uuid4().hex,
        "table_id": table_id,
        "verb": verb,
        "args": dict(args or {}),
        "issued_at": iso_utc(issued_at or datetime.now(UTC)),
        "nonce": nonce or secrets.token_hex(16),
        "key_id": key_id,
    }
    body["signature"] = base64.b64encode(key.sign(canonical_bytes(body))).decode("ascii")
    return body


def public_key_b64(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """The raw 32-byte public key in base64, as [[supervisors]] public_key takes it."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return base64.b64encode(public.public_bytes(Encoding.Raw, PublicFormat.Raw)).decode("ascii")


# -- verbs, their arguments, the roles that may use them ---------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Note = Annotated[str, Field(max_length=500, description="free text for the journal")]


class NoArgs(_Args):
    pass


class NoteArgs(_Args):
    note: Note = ""


class VerifyDeckArgs(_Args):
    deck: Literal["A", "B"] | None = Field(None, description="which deck of two; leave out for every deck")
    note: Note = ""


class DeviceArgs(_Args):
    device: Literal["shuffler", "shoe"]


# What each floorperson decision may say (controller.engine.inputs.FloorpersonDecision).
DECISIONS: Mapping[str, tuple[str, ...]] = {
    "chip_count": ("proceed", "recount", "void"),
    "shuffle_order": ("reshuffle",),
}


class FloorpersonDecisionArgs(_Args):
    about: Literal["chip_count", "shuffle_order"]
    decision: str
    note: Note = ""

    @model_validator(mode="after")
    def _decision_fits(self) -> FloorpersonDecisionArgs:
        allowed = DECISIONS[self.about]
        if self.decision not in allowed:
            raise ValueError(
                f"decision {self.decision!r} is not one for {self.about}: give one of {', '.join(allowed)}"
            )
        return self


class TiltArgs(_Args):
    tilt: str = Field(
        pattern=r"^[a-z_]+(:[a-z0-9_\-]+)?$", max_length=64, description="the tilt's block key, e.g. critical_state"
    )


class ClearTiltArgs(TiltArgs):
    note: Note = ""


class JackpotArgs(_Args):
    seat: int = Field(ge=1, le=7)
    level: str = Field(pattern=r"^[a-z0-9_]{1,32}$", description="the progressive meter's level, e.g. mega")
    hit: str = Field(min_length=1, max_length=64, description="the jackpot hit being validated, as its event names it")


@dataclass(frozen=True, slots=True)
class Signer:
    key_id: str
    role: Role


@dataclass(frozen=True, slots=True)
class Verb:
    args: type[_Args]
    make: Callable[[Any, Signer], Input]
    help: str


VERBS: Mapping[str, Verb] = {
    "open_table": Verb(NoArgs, lambda a, s: OpenTable(), "open the table for gaming"),
    "close_table": Verb(
        NoArgs,
        lambda a, s: CloseTable(),
        "close the table: at once between rounds, else once the round in progress is complete",
    ),
    "verify_deck": Verb(
        VerifyDeckArgs,
        lambda a, s: Confirm("floorperson", "deck_verified", a.deck, a.note),
        "a new deck is at the table and verified (.4(a)); clears a removed deck or a deck change due",
    ),
    "verify_inspection": Verb(
        NoteArgs,
        lambda a, s: Confirm("floorperson", "cards_inspected", note=a.note),
        "the floorperson verifies the dealer's inspection of the cards (.4(a))",
    ),
    "floorperson_decision": Verb(
        FloorpersonDecisionArgs,
        lambda a, s: FloorpersonDecision(a.about, a.decision, s.key_id, a.note),
        "a floorperson's ruling on a chip count or a shuffle without its card order",
    ),
    "mark_out_of_order": Verb(
        DeviceArgs,
        lambda a, s: MarkOutOfOrder(a.device, True),
        "cover the shuffler or shoe as out of order (.13(g)); another method takes over",
    ),
    "back_in_service": Verb(
        DeviceArgs,
        lambda a, s: MarkOutOfOrder(a.device, False),
        "put a repaired shuffler or shoe back in use, between rounds",
    ),
    "acknowledge_tilt": Verb(
        TiltArgs,
        lambda a, s: AcknowledgeTilt(a.tilt, s.key_id, s.role),
        "record that the signer saw the tilt; it stays until cleared",
    ),
    "clear_tilt": Verb(
        ClearTiltArgs, lambda a, s: ClearTilt(a.tilt, s.key_id, s.role, a.note), "clear the tilt: the table may go on"
    ),
    "validate_jackpot": Verb(
        JackpotArgs,
        lambda a, s: ValidateJackpot(a.seat, a.level, a.hit, s.key_id, s.role),
        "a floorperson or above validates a progressive payout (655a.11(i)(1)(iii))",
    ),
}

# "floorperson or above" (655a.5(a), .11(i)(1)(iii)): a supervisor may do all a floorperson may, and more.
ROLE_VERBS: Mapping[Role, frozenset[str]] = {
    "floorperson": frozenset(
        {"verify_deck", "verify_inspection", "floorperson_decision", "acknowledge_tilt", "validate_jackpot"}
    ),
    "technician": frozenset({"mark_out_of_order", "back_in_service", "acknowledge_tilt"}),
    "supervisor": frozenset(VERBS),
}


def roles_for(verb: str) -> list[str]:
    return sorted(role for role, verbs in ROLE_VERBS.items() if verb in verbs)


def parse_args(verb: str, args: Mapping[str, Any]) -> _Args:
    """The verb's arguments, validated; ValueError naming each problem and what the verb takes."""
    spec = VERBS[verb]
    try:
        return spec.args.model_validate(dict(args))
    except ValidationError as err:
        raise ValueError(f"bad args for {verb}: {describe(err, 'args')}; {verb} takes {takes(verb)}") from None


def takes(verb: str) -> str:
    fields = VERBS[verb].args.model_fields
    if not fields:
        return "no args"
    return ", ".join(f"{name}{'' if f.is_required() else ' (optional)'}" for name, f in fields.items())


def describe(err: ValidationError, under: str = "") -> str:
    out = []
    for e in err.errors():
        where = ".".join(str(p) for p in (under, *e["loc"]) if p != "")
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "missing":
            msg = "is required but missing"
        elif e["type"] == "extra_forbidden":
            msg = "is not a known field"
        out.append(f"{where}: {msg}" if where else msg)
    return "; ".join(out)


# -- the outcome of the checks ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rejected:
    code: str  # a word a program can test: docs/commands.md lists them
    reason: str
    command_id: str | None = None
    verb: str | None = None
    key_id: str | None = None

    def payload(self) -> dict[str, Any]:
        """The `command.rejected` event's payload."""
        return {
            "command_id": self.command_id,
            "verb": self.verb,
            "key_id": self.key_id,
            "code": self.code,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Accepted:
    command: SupervisorCommand
    role: Role
    input: Signed


# -- the seen-set ------------------------------------------------------------------------------------------

_REPLAY_SCHEMA = """
CREATE TABLE IF NOT EXISTS command_seen (
    table_id   TEXT NOT NULL,
    command_id TEXT NOT NULL,
    nonce      TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    issued_at  REAL NOT NULL,  -- Unix seconds, for pruning
    seen_at    TEXT NOT NULL,
    PRIMARY KEY (table_id, command_id)
);
CREATE UNIQUE INDEX IF NOT EXISTS command_seen_nonce ON command_seen (table_id, nonce);
CREATE INDEX IF NOT EXISTS command_seen_issued ON command_seen (table_id, issued_at);
"""


class ReplayStore:
    """Command ids and nonces already received, in the journal's SQLite file (its own table), so a replay is
    refused after a restart too. Each record is committed (fsync) before the command is stepped: a crash in
    between loses the command, never lets it run twice."""

    def __init__(self, path: Path | str, table_id: str) -> None:
        self.table_id = table_id
        self._db: sqlite3.Connection | None = connect(path)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _REPLAY_SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def seen_or_record(self, cmd: SupervisorCommand, now: datetime, keep_seconds: float) -> str | None:
        """Why the command is a replay, or None after recording it. Prunes what has gone stale anyway."""
        db = self._require()
        cutoff = now.timestamp() - keep_seconds
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM command_seen WHERE table_id = ? AND issued_at < ?", (self.table_id, cutoff))
            row = db.execute(
                "SELECT command_id, nonce, key_id, seen_at FROM command_seen "
                "WHERE table_id = ? AND (command_id = ? OR nonce = ?) LIMIT 1",
                (self.table_id, cmd.command_id, cmd.nonce),
            ).fetchone()
            if row is None:
                db.execute(
                    "INSERT INTO command_seen (table_id, command_id, nonce, key_id, issued_at, seen_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (self.table_id, cmd.command_id, cmd.nonce, cmd.key_id, cmd.issued_at.timestamp(), iso_utc(now)),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        if row is None:
            return None
        what = "command_id" if row[0] == cmd.command_id else "nonce"
        return (
            f"{what} {getattr(cmd, what)} was already received at {row[3]} (signed by {row[2]}): a command is "
            "carried out once; sign a new one (`tablectl command send` makes a fresh id and nonce)"
        )

    def count(self) -> int:
        return int(
            self._require()
            .execute("SELECT COUNT(*) FROM command_seen WHERE table_id = ?", (self.table_id,))
            .fetchone()[0]
        )

    def _require(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError("the command replay store is closed")
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


# -- the checks --------------------------------------------------------------------------------------------


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Two values for one key could be read one way by the signer's library and another way here.
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(f"the key {k!r} appears twice in one object")
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _text(obj: Mapping[str, Any], key: str) -> str | None:
    # Echoed in replies and events for the sender to recognise, so bounded however long the field was.
    value = obj.get(key)
    return value[:64] if isinstance(value, str) else None


class CommandGate:
    """Every check between a payload and the engine, in order (docs/commands.md)."""

    def __init__(
        self, table_id: str, supervisors: Sequence[Supervisor], settings: CommandSettings, store: ReplayStore
    ) -> None:
        self.table_id = table_id
        self.settings = settings
        self.store = store
        self.keys: dict[str, tuple[Role, Ed25519PublicKey]] = {
            s.key_id: (s.role, decode_public_key(s.public_key)) for s in supervisors
        }

    def check(self, topic_verb: str, payload: bytes, now: datetime) -> Accepted | Rejected:
        if len(payload) > MAX_PAYLOAD_BYTES:
            return Rejected(
                "too_big",
                f"the payload is {len(payload)} bytes, more than the {MAX_PAYLOAD_BYTES} a "
                "command may have: publish only the signed command envelope",
            )
        try:
            obj = json.loads(payload.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
        except UnicodeDecodeError:
            return Rejected("not_json", "the payload is not UTF-8 text: publish the command as JSON in UTF-8")
        except RecursionError:
            return Rejected("not_json", "the payload's JSON is nested too deeply to be a command")
        except ValueError as err:  # json.JSONDecodeError, _Duplicate, huge integers
            return Rejected(
                "not_json",
                f"the payload is not valid JSON ({err}): publish the command envelope as "
                "`tablectl command send` makes it",
            )
        if not isinstance(obj, dict):
            return Rejected(
                "not_object",
                f"the payload is a JSON {type(obj).__name__}, not an object: a command is "
                "a JSON object with " + ", ".join(_REQUIRED),
            )
        ctx = {"command_id": _text(obj, "command_id"), "verb": _text(obj, "verb"), "key_id": _text(obj, "key_id")}
        missing = [k for k in _REQUIRED if k not in obj]
        if missing and missing != ["signature"]:
            return Rejected(
                "missing_fields",
                f"the command lacks {', '.join(missing)}: a command has {', '.join(_REQUIRED)} and args",
                **ctx,
            )
        if obj.get("signature") in (None, ""):
            return Rejected(
                "unsigned",
                "the command is unsigned: sign it with a supervisor key listed in the table's "
                "config (`tablectl command send --key KEY.pem --key-id ID`)",
                **ctx,
            )
        try:
            cmd = SupervisorCommand.model_validate(obj)
        except ValidationError as err:
            return Rejected("bad_envelope", f"the command envelope is malformed: {describe(err)}", **ctx)
        ctx = {"command_id": cmd.command_id, "verb": cmd.verb, "key_id": cmd.key_id}
        if cmd.table_id != self.table_id:
            return Rejected(
                "wrong_table",
                f"the command is for table {cmd.table_id}, this is table {self.table_id}: "
                f"publish it on the topic of table {cmd.table_id}",
                **ctx,
            )
        if topic_verb != cmd.verb:
            return Rejected(
                "verb_mismatch",
                f"the command says {cmd.verb!r} but came on the topic for "
                f"{topic_verb!r}: publish it on .../cmd/{cmd.verb}",
                **ctx,
            )
        known = self.keys.get(cmd.key_id)
        if known is None:
            listed = ", ".join(sorted(self.keys)) or "none"
            return Rejected(
                "unknown_key",
                f"key_id {cmd.key_id!r} is not among this table's [[supervisors]] "
                f"(listed: {listed}): add its public key to the table's config",
                **ctx,
            )
        role, public = known
        problem = self._bad_signature(obj, cmd, public)
        if problem:
            return Rejected("bad_signature", problem, **ctx)
        spec = VERBS.get(cmd.verb)
        if spec is None:
            return Rejected("unknown_verb", f"there is no verb {cmd.verb!r}; the verbs are {', '.join(VERBS)}", **ctx)
        age = (now - cmd.issued_at).total_seconds()
        if age > self.settings.max_age_seconds:
            return Rejected(
                "stale",
                f"the command was signed {age:.1f} s ago, more than commands.max_age_seconds = "
                f"{self.settings.max_age_seconds:g}: sign it again, and check that the "
                "signer's and the table's clocks are synchronised",
                **ctx,
            )
        if -age > self.settings.max_clock_skew_seconds:
            return Rejected(
                "future",
                f"the command was signed {-age:.1f} s in the future, more than "
                f"commands.max_clock_skew_seconds = {self.settings.max_clock_skew_seconds:g}: "
                "synchronise the signer's clock with NTP",
                **ctx,
            )
        replay = self.store.seen_or_record(cmd, now, self.settings.max_age_seconds + REPLAY_MARGIN_SECONDS)
        if replay:
            return Rejected("replayed", replay, **ctx)
        if cmd.verb not in ROLE_VERBS[role]:
            return Rejected(
                "role_not_allowed",
                f"key {cmd.key_id} has the role {role}, which may not {cmd.verb} (a "
                f"{' or '.join(roles_for(cmd.verb))} may); a {role} may "
                f"{', '.join(sorted(ROLE_VERBS[role]))}",
                **ctx,
            )
        try:
            args = parse_args(cmd.verb, cmd.args)
        except ValueError as err:
            return Rejected("bad_args", str(err), **ctx)
        signer = Signer(cmd.key_id, role)
        inp = Signed(spec.make(args, signer), cmd.command_id, cmd.verb, cmd.key_id, role)
        return Accepted(cmd, role, inp)

    @staticmethod
    def _bad_signature(obj: Mapping[str, Any], cmd: SupervisorCommand, public: Ed25519PublicKey) -> str | None:
        try:
            sig = base64.b64decode(cmd.signature, validate=True)
        except (binascii.Error, ValueError):
            return "the signature is not base64: sign the canonical form and send the signature in base64"
        if len(sig) != 64:
            return f"the signature is {len(sig)} bytes, an Ed25519 signature has 64"
        try:
            public.verify(sig, canonical_bytes(obj))
        except InvalidSignature:
            return (
                f"the signature does not verify with key {cmd.key_id}'s public key: the command was changed "
                "after signing, or signed with another key, or not over the canonical form (docs/commands.md)"
            )
        return None
