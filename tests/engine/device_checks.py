"""What a supervisor relies on of the shuffler and shoe holds, checked by tests/engine/test_stateful.py after every
step: each hold and its block can be lifted by something the table can still receive; no card is asked of (or taken
from) a held or covered device; the automated shoe's back in service is refused exactly while the port's device is
held; the device status published from the journaled events (`DeviceTracker`) agrees with the holds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controller.core.events import DomainEvent, JournaledEvent
from controller.engine.commands import DeviceCommand, DispenseStack, RemoveStub, Shuffle
from controller.engine.context import usable_method
from controller.engine.inputs import Input, MarkOutOfOrder
from controller.engine.round import RoundEngine
from controller.engine.spec import DealingMethod
from controller.engine.state import TableState
from controller.mqtt.device_status import DeviceTracker
from drivers.interfaces import CardDrawn, DeviceFaultCleared, DeviceOnline, FaceUpCard, StackDispensed

DEVICES = ("shuffler", "shoe")
BETWEEN_ROUNDS = ("blocked", "opening", "betting", "closed")
CARD_EVENTS = ("cards.dealt", "card.dealt", "card.face_up_discarded")
# The holds that stop the table for a device: lifted by what the device says or by the marks (.13(g)).
HOLD_BLOCKS = ("device:shuffler", "device:shoe", "no_method")


def method_in_use(engine: RoundEngine[Any], state: TableState) -> DealingMethod:
    base = engine.method
    return usable_method(base, engine.options.fallback_dealing_method, state.out_of_order) or base


def stands_in(engine: RoundEngine[Any], state: TableState) -> bool:
    """The manual shoe deals in the place of the covered automated shoe: `shoe` is the stand-in (docs/rules.md)."""
    return (
        "shoe" in state.out_of_order
        and engine.method == "automated_shoe"
        and method_in_use(engine, state) == ("manual_shoe")
    )


def hold_key(state: TableState) -> tuple[object, ...]:
    """What decides whether the holds can be lifted: a state already shown liftable need not be shown again."""
    faults = tuple(sorted((d, f.uncleared, f.restarted) for d, f in state.device_faults.items()))
    holds = tuple(sorted(b for b in state.blocks if b in HOLD_BLOCKS))
    unfit = tuple(
        sorted(
            (d, r.offline is not None, r.fault.uncleared if r.fault else (), bool(r.fault and r.fault.restarted))
            for d, r in state.covered_reports.items()
        )
    )
    return (state.phase, holds, tuple(sorted(state.devices_down)), faults, tuple(sorted(state.out_of_order)), unfit)


def reports_healthy(state: TableState, dev: str) -> list[Input]:
    """What a covered device says once repaired: each fault it reported while covered said cleared, and it identifies
    if its last report was its going offline; then a back_in_service of it is taken (docs/rules.md)."""
    report = state.covered_reports.get(dev)
    if report is None:
        return []
    said: list[Input] = [DeviceFaultCleared(dev, code=c) for c in (report.fault.uncleared if report.fault else ())]
    return said + ([DeviceOnline(dev)] if report.offline is not None else [])


def lift_holds(engine: RoundEngine[Any], state: TableState) -> None:
    """From `state`, what the attendant and the devices can always send: each held fault said cleared, each held device
    identifying (twice: a restarted daemon's first identification clears nothing), each covered device put back in
    service. Every hold, and the block it raised, must lift: a held fault that can never lift stops the table for
    good (test_stateful's last session found one)."""
    for _ in range(4):
        if not (state.devices_down or state.device_faults or set(state.blocks) & set(HOLD_BLOCKS)):
            return
        said: list[Input] = []
        for dev, held in sorted(state.device_faults.items()):
            said += [DeviceFaultCleared(dev, code=code) for code in held.uncleared]
        for dev in sorted(state.devices_down):
            said += [DeviceOnline(dev), DeviceOnline(dev)]
        if "no_method" in state.blocks:
            for dev in sorted(state.out_of_order):
                said += [*reports_healthy(state, dev), MarkOutOfOrder(dev, False)]
        for inp in said:
            state, _ = engine.step(state, inp)
    # `no_method` is lifted by a back in service, taken only between rounds: a round under way (or the shuffle for
    # the next) ends first, by what the dealer and devices send anyway.
    between = str(state.phase) in BETWEEN_ROUNDS
    stuck = {
        "devices_down": dict(state.devices_down),
        "device_faults": {d: f.uncleared for d, f in state.device_faults.items()},
        "blocks": [b for b in state.blocks if b in HOLD_BLOCKS and (between or b != "no_method")],
        "out_of_order": dict(state.out_of_order),
        "phase": str(state.phase),
    }
    if stuck["devices_down"] or stuck["device_faults"] or stuck["blocks"]:
        raise AssertionError(f"a hold nothing the table can receive lifts: {stuck}")


def no_card_of_a_held_device(
    engine: RoundEngine[Any],
    before: TableState,
    after: TableState,
    inp: Input,
    commands: Sequence[DeviceCommand],
    events: Sequence[DomainEvent],
) -> None:
    """No shuffle or dispense asked of a held or covered device; no card a held or covered shoe reports dealt (the
    stand-in manual shoe is the `shoe` while the automated one is covered)."""
    for dev, asked in (("shuffler", Shuffle), ("shoe", (DispenseStack, RemoveStub))):
        if any(isinstance(c, asked) for c in commands):
            assert dev not in after.devices_down, f"{commands} asked of the held {dev}: {after.devices_down[dev]}"
            assert dev not in after.out_of_order, f"{commands} asked of the covered {dev}"
    # Dealt by hand, a held shoe deals nothing: a face-up card is the deck's (.13(a)), whatever device reported it.
    if isinstance(inp, CardDrawn | FaceUpCard | StackDispensed) and method_in_use(engine, before) != "hand":
        dealt = [e.type for e in events if e.type in CARD_EVENTS]
        covered = "shoe" in before.out_of_order and not stands_in(engine, before)
        assert not (dealt and "shoe" in before.devices_down), f"{dealt} from the held shoe"
        assert not (dealt and covered), f"{dealt} from the covered shoe"


def back_in_service_answer(before: TableState, dev: str, events: Sequence[DomainEvent]) -> None:
    """MarkOutOfOrder(dev, out=False): refused exactly while the device (the port's, for the shoe stood in for) is
    held, or its latest report while covered is not healthy (offline, a fault outstanding), saying so with its status;
    put back between rounds when it is not."""
    types = [e.type for e in events]
    if dev not in before.out_of_order:
        assert "device.back_in_service" not in types
    elif dev in before.devices_down:
        assert "input.refused" in types and "device.back_in_service" not in types, f"back in service of held {dev}"
    elif dev in before.covered_reports:
        refused = [e for e in events if e.type == "input.refused"]
        assert refused and "device.back_in_service" not in types, f"back in service of {dev} not answering"
        assert refused[0].payload["status"]["state"] in ("offline", "fault") and refused[0].rule, refused[0]
    elif str(before.phase) in BETWEEN_ROUNDS:
        assert "device.back_in_service" in types, f"back in service of {dev} refused, nothing held: {types}"


class StatusMirror:
    """The device statuses `device/<id>` a supervisor reads, fed the step's events as the daemon journals them."""

    def __init__(self) -> None:
        self.boots = 0
        self.seq = 0
        self.restart()

    def restart(self) -> None:
        """A new boot: the daemon's tracker counts only this boot's events (controller/mqtt/device_status.py)."""
        self.boots += 1
        self.boot = f"boot-{self.boots}"
        self.tracker = DeviceTracker("t1", self.boot, DEVICES, started="2026-11-28T00:00:00.000000Z")

    def feed(self, events: Sequence[DomainEvent]) -> None:
        for e in events:
            self.seq += 1
            ts = f"2026-11-28T00:00:00.{self.seq % 1_000_000:06d}Z"
            self.tracker.apply(
                JournaledEvent(self.seq, f"e{self.seq}", self.boot, ts, "t1", e.round_id, e.type, e.rule, e.payload)
            )

    def agrees(self, state: TableState) -> None:
        status = {s.device_id: s.state for s in self.tracker.statuses()}
        for dev in DEVICES:
            said = status[dev]
            if dev in state.out_of_order:
                # The stand-in's hold too: the cover is on the automated shoe (docs/mqtt.md). A restart says the mark
                # again (Recover), so the new boot's status says it as well.
                assert said == "out_of_order", f"{dev} covered, its status says {said}"
            elif dev in state.devices_down:
                # Held for going offline, before a restart too: the restart says every hold again (Recover), so the
                # new boot's status never reads `unknown` while the table waits for the device; and the hand-dealt
                # table's fallback shoe, held without a block, reads `unusable` live as after a restart.
                assert said == "unusable", f"{dev} held ({state.devices_down[dev]}), its status says {said}"
            else:
                assert said not in ("unusable", "out_of_order"), f"{dev} neither held nor covered, status {said}"
