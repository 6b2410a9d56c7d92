"""The supervisor command verbs: each one's arguments, the engine input it becomes, and the roles that may use
it (docs/commands.md, "Verbs").

Shared by the table (controller.supervisor.gate checks a command's arguments and makes its input) and by
`tablectl command send` (which checks the arguments before signing, and lists the verbs in its help).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from controller.config.table import Role
from controller.engine.inputs import (
    AcknowledgeTilt,
    BindBoxes,
    CashOutAccount,
    ClearTilt,
    CloseTable,
    Confirm,
    FloorpersonDecision,
    Input,
    MarkOutOfOrder,
    OpenTable,
    PlayerLeft,
    ReleaseHeld,
    ResetMeter,
    ValidateJackpot,
)


class _Args(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)


VerbArgs = _Args  # a verb's validated arguments, as the gate hands them on


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


class BindArgs(_Args):
    seats: list[Annotated[int, Field(ge=1, le=7)]] = Field(
        min_length=1,
        max_length=7,
        description="adjacent boxes bound to one player for the session (643a.7(k), 683a.7(e)); one box: released",
    )


class SeatArgs(_Args):
    seat: int = Field(ge=1, le=7, description="the seat (betting position) whose player left the table")


class ReleaseHeldArgs(_Args):
    seat: int = Field(ge=1, le=7, description="the seat whose player left with his wagers held (.7(b))")
    to: Literal["player", "house"] = Field(
        description='"player": given back to the player who came back; "house": collected as losing wagers'
    )


class TiltArgs(_Args):
    tilt: str = Field(
        pattern=r"^[a-z_]+(:[a-z0-9_\-]+)?$", max_length=64, description="the tilt's block key, e.g. critical_state"
    )


class ClearTiltArgs(TiltArgs):
    note: Note = ""


# Seqs one `resend` may ask for: a gap wider than this is asked for in several commands. Bounds what one command makes
# the table read and publish (about a second of the command listener's time on a development machine).
MAX_RESEND = 10_000


class ResendArgs(_Args):
    from_seq: int = Field(ge=1, description="the first seq to publish again")
    to_seq: int = Field(ge=1, description="the last seq to publish again (included)")

    @model_validator(mode="after")
    def _a_bounded_range(self) -> ResendArgs:
        if self.to_seq < self.from_seq:
            raise ValueError(
                f"the range is reversed: from_seq {self.from_seq} is after to_seq {self.to_seq}; give the lower seq "
                "as from_seq"
            )
        if self.to_seq - self.from_seq + 1 > MAX_RESEND:
            raise ValueError(
                f"seqs {self.from_seq}-{self.to_seq} are {self.to_seq - self.from_seq + 1:,} seqs, more than the "
                f"{MAX_RESEND:,} one resend may ask for: ask in several commands (e.g. from_seq={self.from_seq} "
                f"to_seq={self.from_seq + MAX_RESEND - 1} first)"
            )
        return self


class JackpotArgs(_Args):
    seat: int = Field(ge=1, le=7)
    level: str = Field(pattern=r"^[a-z0-9_]{1,32}$", description="the progressive meter's level, e.g. mega")
    hit: str = Field(min_length=1, max_length=64, description="the jackpot hit being validated, as its event names it")


class ResetMeterArgs(_Args):
    level: str = Field(pattern=r"^[a-z0-9_]{1,32}$", description="the progressive meter's level, e.g. mega")
    reason: str = Field(min_length=1, max_length=500, description="why, for the journal: a reset is audited")

    @model_validator(mode="after")
    def _a_reason(self) -> ResetMeterArgs:
        # 605a.7(a)(5): the reset is audited; spaces would pass min_length and leave the record without a why.
        if not self.reason.strip():
            raise ValueError("reason is blank: say why the meter is reset, e.g. 'sign replaced, meter test'")
        return self


class CashOutAccountArgs(_Args):
    seat: int = Field(ge=1, le=7, description="the seat (betting position) whose game account is paid out")
    reason: str = Field(
        min_length=1, max_length=500, description="why the terminal cannot cash out, for the journal (e.g. its fault)"
    )

    @model_validator(mode="after")
    def _a_reason(self) -> CashOutAccountArgs:
        if not self.reason.strip():
            raise ValueError("reason is blank: say why the seat's terminal cannot cash out, e.g. 'terminal offline'")
        return self


@dataclass(frozen=True, slots=True)
class Signer:
    """The supervisor key that signed a command, with the role the table's config gives that key."""

    key_id: str
    role: Role


@dataclass(frozen=True, slots=True)
class Verb:
    """A supervisor command verb (docs/commands.md, "Verbs"): how its arguments are checked and made an engine input.

    `make` None: a verb the shell carries out itself (`resend`), which changes no game state and never reaches the
    engine; the command listener journals who asked and does it."""

    args: type[_Args]
    make: Callable[[Any, Signer], Input] | None
    help: str


VERBS: Mapping[str, Verb] = {
    "open_table": Verb(NoArgs, lambda a, s: OpenTable(), "open the table for gaming"),
    "close_table": Verb(
        NoArgs,
        lambda a, s: CloseTable(by=f"{s.role} {s.key_id}"),
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
    "bind_player": Verb(
        BindArgs,
        lambda a, s: BindBoxes(tuple(a.seats), "floorperson"),
        "bind adjacent boxes to one table-local player for the session (no identity), or release one box",
    ),
    "player_left": Verb(
        SeatArgs,
        lambda a, s: PlayerLeft(a.seat),
        "the player at this seat left the table during the round: his wagers are abandoned (.7(b)), every box he is "
        "bound to; before the deal they are returned",
    ),
    "release_held": Verb(
        ReleaseHeldArgs,
        lambda a, s: ReleaseHeld(a.seat, a.to),
        'the wagers held for a player who left (.7(b), abandoned_wagers = "hold"): given back to him or kept by '
        "the house as losing wagers",
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
    "reset_meter": Verb(
        ResetMeterArgs,
        lambda a, s: ResetMeter(a.level, a.reason, s.key_id, s.role),
        "reset a progressive meter without a hit, between rounds (605a.7(a)(5)): its amount goes to the removed "
        "meter, still owed, and the level is reseeded",
    ),
    "cash_out_account": Verb(
        CashOutAccountArgs,
        lambda a, s: CashOutAccount(a.seat, a.reason, s.key_id, s.role),
        "cash out the seat's game account on the signer's authority, paid by an attendant (605a.2(d)(1)), for a "
        "player whose terminal cannot; refused while the seat has a wager in the round in progress",
    ),
    "resend": Verb(
        ResendArgs,
        None,
        f"publish the journal's events from_seq..to_seq (at most {MAX_RESEND:,}) again on event, flagged replayed, "
        "for a subscriber that missed them (a floor's seq gap); changes nothing at the table",
    ),
}

# Verbs the shell carries out without stepping the engine: they change no game state.
SHELL_VERBS = frozenset(v for v, spec in VERBS.items() if spec.make is None)

# "floorperson or above" (655a.5(a), .11(i)(1)(iii)): a supervisor may do all a floorperson may, and more.
ROLE_VERBS: Mapping[Role, frozenset[str]] = {
    "floorperson": frozenset(
        {
            "verify_deck",
            "verify_inspection",
            "floorperson_decision",
            "acknowledge_tilt",
            "validate_jackpot",
            "bind_player",
            "player_left",
            "release_held",
            # Pays a player whose terminal is out of order, as the floorperson pays a validated jackpot; not the
            # technician's, who repairs the terminal and handles no player's money (docs/commands.md, "Roles").
            "cash_out_account",
            # Changes nothing at the table, and the person at the console when the floor shows a stale gap is most
            # often the floorperson (docs/commands.md, "Roles").
            "resend",
        }
    ),
    "technician": frozenset({"mark_out_of_order", "back_in_service", "acknowledge_tilt", "resend"}),
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
