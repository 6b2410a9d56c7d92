"""The round, common to every chapter, as a pure state machine: (state, input) -> (state', effects).

No I/O, no awaiting, no clock: the shell feeds device events and controller inputs in, journals the
domain events that come out, and only then carries out the device commands. A chapter (ChapterSpec)
states what differs: its wagers, deal plans, decisions and settlement. Every domain event cites the
subsection that makes it happen; card identities travel in the sealed part until settlement.

Flow: shuffle -> every station unlocked -> betting -> "no more bets" -> every station's lock confirmed ->
deal (automated shoe stacks, manual shoe cards, or a card-reading shuffler's order dealt from the hand)
-> decisions clockwise from the dealer's left, each followed by its reveal -> settlement counterclockwise
from the dealer's right (the chapter's settle) -> shuffle. Irregularities void, reshuffle or block with
the chapter's remedy.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Generic

from controller.core.events import DomainEvent
from controller.engine.betting import _BettingMixin
from controller.engine.dealing import _DealingMixin
from controller.engine.decisions import _DecisionsMixin
from controller.engine.deck_life import _DeckLifeMixin
from controller.engine.inputs import (
    AcknowledgeTilt,
    ClearTilt,
    CloseTable,
    Command,
    Confirm,
    CountEntered,
    CriticalStateInvalid,
    FloorpersonDecision,
    Input,
    MarkOutOfOrder,
    OpenTable,
    PlayerLeft,
    Recover,
    Signed,
    Tick,
    ValidateJackpot,
)
from controller.engine.irregularities import DEVICES, SHOE_FAULTS, SHOE_METHODS, SHUFFLER_FAULTS, _IrregularitiesMixin
from controller.engine.progressive import SIGN, _ProgressiveMixin
from controller.engine.recovery import _RecoveryMixin
from controller.engine.settling import _SettlingMixin
from controller.engine.shuffling import _ShufflingMixin
from controller.engine.spec import (
    ChapterSpec,
    DealingMethod,
    RulesCo,
    TableOptions,
)
from controller.engine.state import Phase, TableState
from controller.engine.step import _StepBase
from controller.engine.tilts import _TiltsMixin
from controller.progressive.parameters import TableProgressives
from drivers.interfaces import (
    COUNTS,
    ButtonPressed,
    CardDrawn,
    CountKeyed,
    DeviceFault,
    DeviceOffline,
    DeviceOnline,
    FaceUpCard,
    LockAcknowledged,
    MetersShown,
    SeatLight,
    ShuffleCompleted,
    StackDispensed,
    StubRemoved,
    WagerDetected,
    WagerRefused,
)

Effect = DomainEvent | Command

__all__ = ["DEVICES", "SHOE_FAULTS", "SHOE_METHODS", "SHUFFLER_FAULTS", "Effect", "RoundEngine"]

# Inputs that are gaming activity (.5(f)): anything a player or the dealer does at the layout.
_ACTIVITY = (
    WagerDetected,
    WagerRefused,
    ButtonPressed,
    CardDrawn,
    StackDispensed,
    StubRemoved,
    CountEntered,
    CountKeyed,
    PlayerLeft,
)
# The dealer panel's confirmation keys -> what the dealer confirms (Confirm.what).
_PANEL_CONFIRMS = {
    "inspected": "cards_inspected",
    "shuffled": "shuffled",
    "misdeal": "misdeal",
    "no_misdeal": "no_misdeal",
}


class RoundEngine(Generic[RulesCo]):
    """Steps one table. Holds only the chapter and its immutable rules; state travels outside."""

    def __init__(
        self,
        spec: ChapterSpec[RulesCo],
        rules: RulesCo,
        method: DealingMethod = "automated_shoe",
        options: TableOptions | None = None,
    ) -> None:
        spec.require_method(method)  # a chapter whose other dealing sections are unpublished refuses them up front
        self.spec = spec
        self.rules = rules
        self.method = method
        opts = options or spec.options(rules)
        if opts.fallback_dealing_method not in spec.supported_methods:
            # The chapter publishes no procedure for that method: once its device is out of order (.13(g)) the
            # table waits for it (the `no_method` block) instead of dealing by a method the chapter lacks.
            opts = replace(opts, fallback_dealing_method=None)
        self.options = opts
        self.offers = {o.spot: o for o in spec.offers(rules)}
        self.decisions = list(spec.decisions(rules))
        self.counted: dict[str, str | None] = dict(spec.counted_wagers(rules))
        self.progressive = spec.progressive_wagers
        # The meters of the progressive wagers this table takes live (docs/progressive.md); ParameterError
        # (a ValueError naming the field and the fix) for figures the chapter does not allow.
        params = spec.progressives(rules)
        self.meter_params = TableProgressives(
            progressives=tuple(p for p in params.progressives if p.wager in self.offers)
        )
        self.meter_wagers = frozenset(p.wager for p in self.meter_params.progressives)

    def step(self, state: TableState, inp: Input) -> tuple[TableState, list[Effect]]:
        s = state.clone()
        out: list[Effect] = []
        _Step(self, s, out).handle(inp)
        return s, out

    def rule(self, section: str) -> str:
        return self.spec.rule(section)


class _Step(
    _ProgressiveMixin,
    _RecoveryMixin,
    _ShufflingMixin,
    _BettingMixin,
    _DealingMixin,
    _IrregularitiesMixin,
    _DeckLifeMixin,
    _DecisionsMixin,
    _SettlingMixin,
    _TiltsMixin,
    _StepBase,
):
    """One input's worth of work on a private copy of the state."""

    # -- dispatch ------------------------------------------------------------------------------

    def handle(self, inp: Input) -> None:
        if isinstance(inp, _ACTIVITY) and self.s.now is not None:
            self.s.last_activity = self.s.now
        match inp:
            case OpenTable():
                self.open_table()
            case CloseTable():
                self.close_table()
            case Tick():
                self.tick(inp)
            case Confirm():
                self.confirm(inp)
            case CountEntered():
                self.count_entered(inp)
            case FloorpersonDecision():
                self.floorperson_decision(inp)
            case MarkOutOfOrder():
                self.mark_out_of_order(inp)
            case PlayerLeft():
                self.player_left(inp.seat)
            case Signed():
                self.signed(inp)
            case AcknowledgeTilt():
                self.acknowledge_tilt(inp)
            case ClearTilt():
                self.clear_tilt(inp)
            case ValidateJackpot():
                self.validate_jackpot(inp)
            case Recover():
                self.recover()
            case CriticalStateInvalid():
                self.critical_state_invalid(inp.reason, inp.tilt)
            case ShuffleCompleted():
                self.shuffle_completed(inp)
            case WagerDetected():
                if not self.repeated_wager(inp):
                    self.wager(inp)
            case WagerRefused():
                self.emit(
                    "wager.rejected",
                    self.e.rule("7(c)"),
                    {
                        "seat": inp.seat,
                        "spot": inp.spot,
                        "amount": inp.amount_cents,
                        "reason": f'refused by the wager station\'s lock-out ({inp.reason}) after "no more bets"',
                    },
                )
            case ButtonPressed(button="no_more_bets"):
                self.no_more_bets()
            case ButtonPressed(button="fold" | "withdraw" | "let_it_ride"):
                self.button_decision(inp.button)
            case ButtonPressed(button="dealt"):
                self.dealt_confirmed()
            case ButtonPressed(button="drawn_in_error"):
                self.drawn_in_error()
            case ButtonPressed(button="community_exposed"):
                self.community_exposed()
            case ButtonPressed(button="inspected" | "shuffled" | "misdeal" | "no_misdeal"):
                # The dealer's confirmations from the panel (.4(a), .5(f), .5(c)(2), .13(g), .8(h)).
                self.confirm(Confirm("dealer", _PANEL_CONFIRMS[inp.button]))
            case ButtonPressed():
                self.ignored(f"button {inp.button!r}", "not a button this controller knows")
            case CountKeyed():
                self.count_keyed(inp)
            case LockAcknowledged():
                self.lock_acknowledged(inp)
            case SeatLight():
                self.seat_light(inp)
            case StackDispensed():
                self.stack_dispensed(inp)
            case StubRemoved():
                self.stub_removed(inp)
            case CardDrawn():
                self.card_drawn(inp)
            case FaceUpCard():
                self.face_up(inp.card)
            case DeviceFault():
                self.device_fault(inp)
                if inp.device_id == SIGN and inp.code != "win_not_shown":
                    self.sign_event("down", f"{inp.code}: {inp.detail}")
            case DeviceOnline():
                self.emit("device.online", None, {"device_id": inp.device_id, "identity": dict(inp.identity)})
                if (seat := _station_seat(inp.device_id)) is not None:
                    self.station_back(seat)
                    self.relight(seat)
                elif inp.device_id == SIGN:
                    self.sign_event("up")
                else:
                    self.device_back(inp.device_id)
            case DeviceOffline():
                self.emit("device.offline", None, {"device_id": inp.device_id, "reason": inp.reason})
                why = f"offline ({inp.reason})" if inp.reason else "offline"
                if (seat := _station_seat(inp.device_id)) is not None:
                    self.station_down(seat, why)
                elif inp.device_id == SIGN:
                    self.sign_event("down", why)
                else:
                    self.device_down(inp.device_id, why)
            case MetersShown():
                # The sign's read-back of what it displays, several times a second: the meters themselves are
                # journaled when they change; a sign that stops answering is a DeviceFault/DeviceOffline above.
                pass
            case _:
                self.ignored(type(inp).__name__, "not an input of this engine")

    # -- what people confirm ---------------------------------------------------------------------

    def confirm(self, c: Confirm) -> None:
        match c.what:
            case "cards_inspected":
                self.inspected(c.who)
            case "deck_verified":
                self.deck_verified(c)
            case "shuffled":
                self.manual_shuffle_done(c.who)
            case "misdeal" | "no_misdeal":
                if self.s.phase is not Phase.STUB_COUNT or self.r.stub_entered is None or c.who != "dealer":
                    self.ignored(c.what, "no stub count awaits the dealer's determination of a misdeal")
                else:
                    self.misdeal_determined(c.what == "misdeal")
            case _:
                self.ignored(f"confirm {c.what!r}", "not something this controller asks to confirm")

    def count_entered(self, c: CountEntered) -> None:
        if c.count < 0:
            self.refused(f"{c.what} count", "a count is not negative", None)
        elif c.what == "chips" and self.s.phase is Phase.RECONCILING:
            self.chips_counted(c.count)
        elif c.what == "stub" and self.s.phase is Phase.STUB_COUNT:
            self.stub_counted(c.count)
        else:
            self.ignored(f"{c.what} count", "no such count is awaited")

    def count_keyed(self, c: CountKeyed) -> None:
        """A count keyed on the dealer panel: checked here, since it comes from a device, then as CountEntered."""
        count: object = c.count
        if c.what not in COUNTS:
            self.refused(
                f"count {c.what!r} from {c.device_id}",
                f"the panel keys only the {' or '.join(COUNTS)} count; fix the panel's key map",
                None,
            )
        elif not isinstance(count, int) or isinstance(count, bool) or count < 0:
            rule = self.e.rule("8(b)") if c.what == "chips" else self.stub_rules()[0]
            self.refused(
                f"{c.what} count {count!r} from {c.device_id}",
                "a count is a whole non-negative number: key it again",
                rule,
            )
        else:
            self.count_entered(CountEntered("chips" if c.what == "chips" else "stub", count))

    def floorperson_decision(self, d: FloorpersonDecision) -> None:
        if d.about == "chip_count":
            self.chip_decision(d)
        elif d.about == "shuffle_order" and "shuffle_order" in self.s.blocks and d.decision == "reshuffle":
            self.emit(
                "floorperson.decided",
                None,
                {"about": d.about, "decision": d.decision, "floorperson": d.floorperson, "note": d.note},
            )
            self.unblock("shuffle_order", "floorperson")
        else:
            self.ignored(f"floorperson decision on {d.about!r}", "nothing awaits that decision")


def _station_seat(device_id: str) -> int | None:
    """The seat of a `wager_station_<seat>` device id, else None."""
    prefix, _, seat = device_id.rpartition("_")
    return int(seat) if prefix == "wager_station" and seat.isdigit() else None
