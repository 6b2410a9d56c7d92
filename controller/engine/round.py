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

This module only dispatches: each input type has its step (a function over the StepContext) in the table below;
the steps are the modules under it (docs/engine.md has the map).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

from controller.core.digits import is_ascii_digits
from controller.core.invariant import INVARIANT_TILT, InvariantBroken
from controller.engine import (
    accounts,
    betting,
    confirming,
    dealing,
    decisions,
    deck_life,
    device_holds,
    irregularities,
    jackpot,
    link,
    meter_reset,
    other_method,
    players,
    recovery,
    settling,
    shuffling,
    sign,
    tilts,
)
from controller.engine.commands import SIGN
from controller.engine.context import Effect, StepContext, TableSetup
from controller.engine.inputs import (
    AcknowledgeTilt,
    BindBoxes,
    CashOutAccount,
    ClearTilt,
    CloseTable,
    Confirm,
    CountEntered,
    CriticalStateInvalid,
    FloorpersonDecision,
    Input,
    LinkAnswered,
    LinkBroadcast,
    LinkLease,
    MarkOutOfOrder,
    OpenTable,
    PlayerLeft,
    RaiseTilt,
    Recover,
    ReleaseHeld,
    ResetMeter,
    Signed,
    Tick,
    ValidateJackpot,
)
from controller.engine.spec import RulesCo
from controller.engine.state import Phase, TableState
from drivers.interfaces import (
    AccountRequested,
    BoxesBound,
    ButtonPressed,
    CardDrawn,
    CountKeyed,
    DealerConfirmed,
    DeviceFault,
    DeviceFaultCleared,
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

__all__ = ["Effect", "RoundEngine"]


class RoundEngine(TableSetup[RulesCo]):
    """Steps one table. Holds only the chapter and its immutable rules (TableSetup); state travels outside."""

    def step(self, state: TableState, inp: Input) -> tuple[TableState, list[Effect]]:
        ctx = StepContext(self, state.clone(), [])
        try:
            handle(ctx, inp)
        except InvariantBroken as err:
            # A state the steps' own checks rule out (a bug): the input changes nothing, and the table raises a
            # tilt naming it (no new round until a supervisor clears it) rather than stopping or going on unchecked.
            ctx = StepContext(self, state.clone(), [])
            recovery.critical_state_invalid(ctx, f"{type(inp).__name__}: {err}", tilt=INVARIANT_TILT)
        return ctx.s, ctx.out


# Inputs that are gaming activity (.5(f)): anything a player or the dealer does at the layout.
_ACTIVITY = (
    AccountRequested,
    DealerConfirmed,
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


def handle(ctx: StepContext, inp: Input) -> None:
    if isinstance(inp, _ACTIVITY) and ctx.s.now is not None:
        ctx.s.last_activity = ctx.s.now
    step = _STEPS.get(type(inp)) or next((_STEPS[k] for k in type(inp).__mro__ if k in _STEPS), None)
    if step is None:
        ctx.ignored(type(inp).__name__, "not an input of this engine")
    else:
        step(ctx, inp)


def signed(ctx: StepContext, c: Signed) -> None:
    """A verified supervisor command: `command.accepted` (who signed what), then its input in the same step."""
    ctx.emit("command.accepted", None, {"command_id": c.command_id, "verb": c.verb, "key_id": c.key_id, "role": c.role})
    if isinstance(c.inp, Signed):
        ctx.ignored(f"command {c.verb}", "a signed command carries one input, not another signed command")
        return
    handle(ctx, c.inp)


# -- the dealer panel's buttons -----------------------------------------------------------------------------

# The dealer panel's confirmation keys -> what the dealer confirms (Confirm.what): .4(a), .5(f), .5(c)(2), .13(g),
# .8(h).
_PANEL_CONFIRMS = {
    "inspected": "cards_inspected",
    "shuffled": "shuffled",
    "misdeal": "misdeal",
    "no_misdeal": "no_misdeal",
}
_BUTTONS: Mapping[str, Callable[[StepContext], None]] = {
    "no_more_bets": betting.no_more_bets,
    "dealt": dealing.dealt_confirmed,
    "drawn_in_error": irregularities.drawn_in_error,
    "community_exposed": irregularities.community_exposed,
    "wrong_card_count": irregularities.wrong_card_count,
}


def button(ctx: StepContext, inp: ButtonPressed) -> None:
    if inp.button in _BUTTONS:
        _BUTTONS[inp.button](ctx)
    elif inp.button in ("fold", "withdraw", "let_it_ride"):
        decisions.button_decision(ctx, inp.button)
    elif inp.button in _PANEL_CONFIRMS:
        confirming.confirm(ctx, Confirm("dealer", _PANEL_CONFIRMS[inp.button]))
    else:
        ctx.ignored(f"button {inp.button!r}", "not a button this controller knows")


# -- devices ------------------------------------------------------------------------------------------------


def wager_detected(ctx: StepContext, inp: WagerDetected) -> None:
    if not recovery.repeated_wager(ctx, inp):
        betting.wager(ctx, inp)


def wager_refused(ctx: StepContext, inp: WagerRefused) -> None:
    terminal = accounts.terminal_seat(inp.device_id) is not None
    device = "electronic wagering terminal" if terminal else "wager station"
    ctx.emit(
        "wager.rejected",
        ctx.spec.terminal_lock_rule() if terminal else ctx.rule("7(c)"),
        {
            "seat": inp.seat,
            "spot": inp.spot,
            "amount": inp.amount_cents,
            "reason": f'refused by the {device}\'s lock-out ({inp.reason}) after "no more bets"',
        },
    )
    if terminal:
        accounts.show(ctx, inp.seat, "no more bets: wager refused")


def device_fault(ctx: StepContext, inp: DeviceFault) -> None:
    other_method.device_fault(ctx, inp)
    if inp.device_id == SIGN and inp.code != "win_not_shown":
        sign.down(ctx, f"{inp.code}: {inp.detail}", inp.code)


def device_fault_cleared(ctx: StepContext, inp: DeviceFaultCleared) -> None:
    if inp.device_id == SIGN:
        sign.fault_cleared(ctx, inp)
    else:
        device_holds.fault_cleared(ctx, inp)


def device_online(ctx: StepContext, inp: DeviceOnline) -> None:
    ctx.emit("device.online", None, {"device_id": inp.device_id, "identity": dict(inp.identity)})
    if (seat := _station_seat(inp.device_id)) is not None:
        betting.station_back(ctx, seat)
        jackpot.relight(ctx, seat)
    elif (seat := accounts.terminal_seat(inp.device_id)) is not None:
        betting.terminal_back(ctx, seat)
    elif inp.device_id == SIGN:
        sign.up(ctx)
    else:
        device_holds.device_back(ctx, inp.device_id)


def device_offline(ctx: StepContext, inp: DeviceOffline) -> None:
    ctx.emit("device.offline", None, {"device_id": inp.device_id, "reason": inp.reason})
    why = f"offline ({inp.reason})" if inp.reason else "offline"
    if (seat := _station_seat(inp.device_id)) is not None:
        betting.station_down(ctx, seat, why)
    elif (seat := accounts.terminal_seat(inp.device_id)) is not None:
        betting.terminal_down(ctx, seat, why)
    elif inp.device_id == SIGN:
        sign.down(ctx, why)
    else:
        other_method.device_offline(ctx, inp.device_id, why)


def meters_shown(ctx: StepContext, inp: MetersShown) -> None:
    """The sign's read-back of what it displays, several times a second: the meters themselves are journaled when
    they change; a sign that stops answering is a DeviceFault or DeviceOffline."""


def link_answered(ctx: StepContext, inp: LinkAnswered) -> None:
    """The link's answer; the claim that settlement waited for resumes it (the chapter settles the round again
    from the same cards, now with the link's award: controller/engine/link.py)."""
    if link.answered(ctx, inp) and ctx.s.phase is Phase.CLAIMING:
        settling.settle(ctx)


def _station_seat(device_id: str) -> int | None:
    """The seat of a `wager_station_<seat>` device id, else None."""
    prefix, _, seat = device_id.rpartition("_")
    return int(seat) if prefix == "wager_station" and is_ascii_digits(seat) else None


# -- the table: input type -> its step ----------------------------------------------------------------------------

_I = TypeVar("_I")
_Step = Callable[[StepContext, Input], None]


def _on(kind: type[_I], step: Callable[[StepContext, _I], None]) -> tuple[type[object], _Step]:
    """One row of the table: the step typed for its own input (the table looks inputs up by their exact type)."""

    def run(ctx: StepContext, inp: Input) -> None:
        if not isinstance(inp, kind):
            raise InvariantBroken(f"the step for {kind.__name__} was handed a {type(inp).__name__}")
        step(ctx, inp)

    return kind, run


class _SeatInput(Protocol):
    """A device input that names the seat it acts for (a terminal's are checked against the terminal's own seat)."""

    @property
    def device_id(self) -> str: ...

    @property
    def seat(self) -> int: ...


_S = TypeVar("_S", bound=_SeatInput)


def _own_seat(step: Callable[[StepContext, _S], None]) -> Callable[[StepContext, _S], None]:
    """The step, unless a terminal speaks for another seat (605a.2(a)): refused before it can touch that seat."""

    def run(ctx: StepContext, inp: _S) -> None:
        if not accounts.foreign_seat(ctx, inp.device_id, inp.seat, type(inp).__name__):
            step(ctx, inp)

    return run


def _no_input(step: Callable[[StepContext], None]) -> Callable[[StepContext, object], None]:
    """A step that needs nothing of its input (OpenTable)."""
    return lambda ctx, _: step(ctx)


_STEPS: dict[type[object], _Step] = dict(
    [
        _on(OpenTable, _no_input(shuffling.open_table)),
        _on(CloseTable, shuffling.close_table),
        _on(Tick, deck_life.tick),
        _on(Confirm, confirming.confirm),
        _on(CountEntered, confirming.count_entered),
        _on(FloorpersonDecision, confirming.floorperson_decision),
        _on(MarkOutOfOrder, other_method.mark_out_of_order),
        _on(PlayerLeft, lambda ctx, inp: decisions.player_left(ctx, inp.seat)),
        _on(ReleaseHeld, lambda ctx, inp: decisions.release_held(ctx, inp.seat, inp.to)),
        _on(BindBoxes, lambda ctx, inp: players.bind(ctx, inp.seats, inp.by)),
        _on(BoxesBound, lambda ctx, inp: players.bind(ctx, inp.seats, "dealer")),
        _on(Signed, signed),
        _on(AcknowledgeTilt, tilts.acknowledge_tilt),
        _on(ClearTilt, tilts.clear_tilt),
        _on(RaiseTilt, tilts.raise_tilt),
        _on(ValidateJackpot, jackpot.validate_jackpot),
        _on(ResetMeter, meter_reset.reset_meter),
        _on(CashOutAccount, accounts.cash_out_account),
        _on(Recover, recovery.recover),
        _on(CriticalStateInvalid, lambda ctx, inp: recovery.critical_state_invalid(ctx, inp.reason, inp.tilt)),
        _on(ShuffleCompleted, shuffling.shuffle_completed),
        _on(WagerDetected, _own_seat(wager_detected)),
        _on(WagerRefused, _own_seat(wager_refused)),
        _on(ButtonPressed, button),
        _on(CountKeyed, confirming.count_keyed),
        _on(LockAcknowledged, _own_seat(betting.lock_acknowledged)),
        _on(SeatLight, jackpot.seat_light),
        _on(StackDispensed, dealing.stack_dispensed),
        _on(StubRemoved, dealing.stub_removed),
        _on(CardDrawn, dealing.card_drawn),
        _on(FaceUpCard, lambda ctx, inp: irregularities.face_up(ctx, inp.card)),
        _on(DeviceFault, device_fault),
        _on(DeviceFaultCleared, device_fault_cleared),
        _on(DeviceOnline, device_online),
        _on(DeviceOffline, device_offline),
        _on(MetersShown, meters_shown),
        _on(AccountRequested, _own_seat(accounts.account_requested)),
        _on(DealerConfirmed, _own_seat(accounts.dealer_confirmed)),
        _on(LinkLease, link.lease),
        _on(LinkAnswered, link_answered),
        _on(LinkBroadcast, link.broadcast),
    ]
)
