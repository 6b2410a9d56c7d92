"""Random dealer actions, device events (good and faulty), wagers, decisions and ticks against the pure
engine, for every chapter in controller.games.registry.SPECS, with the round's invariants after every step.

Each chapter is dealt only by the methods its spec supports (`supported_methods`, all three when it does not
say), and meets only the faults that can occur with them: no shoe for a chapter dealt only from the hand, no
community card exposed where the chapter has none."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from controller.cli.main import main
from controller.core.cards import STANDARD_DECK
from controller.core.events import DomainEvent
from controller.core.settlement import ChapterRules
from controller.engine.commands import (
    DeviceCommand,
    DispenseStack,
    LockSeat,
    LockTerminal,
    RemoveStub,
    Shuffle,
    UnlockSeat,
    UnlockTerminal,
)
from controller.engine.inputs import (
    CloseTable,
    Confirm,
    CountEntered,
    FloorpersonDecision,
    Input,
    MarkOutOfOrder,
    OpenTable,
    PlayerLeft,
    Recover,
    StopRecord,
    Tick,
    Who,
)
from controller.engine.round import RoundEngine
from controller.engine.spec import AbandonedWagers, DealingMethod, TableOptions
from controller.engine.state import TableState
from controller.games.registry import SPECS, settle_record
from controller.store import snapshot
from drivers.interfaces import (
    BUTTONS,
    TERMINAL_SPOTS,
    AccountRequested,
    CardDrawn,
    DealerConfirmed,
    DeviceFault,
    DeviceFaultCleared,
    DeviceOffline,
    DeviceOnline,
    FaceUpCard,
    LockAcknowledged,
    ShuffleCompleted,
    StackDispensed,
    StubRemoved,
    WagerDetected,
    WagerRefused,
)
from tests.engine.conftest import example_rules
from tests.engine.device_checks import (
    StatusMirror,
    back_in_service_answer,
    hold_key,
    lift_holds,
    no_card_of_a_held_device,
    reports_healthy,
    stands_in,
)

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
ALL_METHODS: tuple[DealingMethod, ...] = ("automated_shoe", "manual_shoe", "hand")
SHOE_METHODS = ("automated_shoe", "manual_shoe")
SHOE_CODES = ("jam", "stopped", "incomplete", "empty", "misfeed", "foreign_card", "malfunction")
CARD_EVENTS = ("cards.dealt", "card.dealt", "deal.awaiting_dealer")


def with_counted_wagers(spec: Any, counted: dict[str, str]) -> Any:
    """The chapter's spec with `counted_wagers` (a default member of ChapterSpec[ChapterRules]) answering `counted`."""

    class WithCountedWagers(type(spec)):  # type: ignore[misc]
        def counted_wagers(self, rules: Any) -> dict[str, str]:
            return counted

    return WithCountedWagers()


class TableMachine(RuleBasedStateMachine):
    chapter = "655a"
    # An automated-shoe table whose shoe is covered from the start, dealt from the stand-in manual shoe: drawn for every
    # table it is too rare (a few examples in a hundred) to meet each of the stand-in's faults in each phase.
    stand_in_only = False
    # An automated-shoe table falling back to the hand, its shuffler reading no order: the one where covering the shoe
    # in betting refuses "no more bets" (.9(a)(1)). Drawn for every table it is one in twelve, and some draws have none.
    hand_fallback_only = False

    def __init__(self) -> None:
        super().__init__()
        self.spec = SPECS[self.chapter]
        self.game_rules = example_rules(self.chapter)
        self.offers = list(self.spec.offers(self.game_rules))
        self.methods: tuple[DealingMethod, ...] = tuple(self.spec.supported_methods)
        self.shoe_dealt = any(m in SHOE_METHODS for m in self.methods)  # else no shoe is at the table
        players = {n: {o.spot: o.min_cents for o in self.offers} for n in (1, 2)}
        plan = self.spec.plan(self.game_rules, self.methods[0], [1, 2], players)
        self.community = any(t.split("#")[0] == "community" for t in plan.targets)
        self.spots = [o.spot for o in self.offers] + ["street_3", "nonsense"]
        self.engine: RoundEngine[ChapterRules]
        self.state = TableState("t1")
        self.pending: list[DeviceCommand] = []
        self.shoe: list[str] = []
        self.now = T0
        self.events: list[DomainEvent] = []
        # the model the invariants compare with
        self.locks_outstanding: set[int] = set()
        self.after_no_more_bets = False
        self.wagers: dict[int, dict[str, int]] = {}
        self.dealt_count = 0
        self.asked: dict[str, Any] | None = None
        self.coin = 7
        self.round_id: str | None = None
        # An exposure void whose chapter still settles some wagers (683a.13(d)): those wagers, and what the live
        # engine settled of them, checked at the end of the step and against `tablectl settle` on the record.
        self.exposure_kept: dict[tuple[int, str], int] | None = None
        self.exposure_settled: dict[tuple[int, str], dict[str, Any]] = {}
        self.exposure_recorded = False
        # The device statuses a supervisor reads, and the hold states already shown liftable this example.
        self.status = StatusMirror()
        self.liftable: set[tuple[object, ...]] = set()
        # Each round's dealing section (.8, .9 or .10): its "no more bets", lock-out, deal and stub cite one.
        self.sections: dict[str, str] = {}
        self.locked: set[str] = set()  # the rounds whose "no more bets" was announced
        self.refusals_restarted = 0  # restarts with "no more bets" refused for the covered shoe (the rule's aim)

    # -- the one way in -----------------------------------------------------------------------

    def step(self, inp: Input) -> list[DomainEvent]:
        before = copy.deepcopy(self.state)
        state, effects = self.engine.step(self.state, inp)
        assert self.state == before, f"a step changed the state it was given ({inp})"
        self.state = state
        commands = [e for e in effects if not isinstance(e, DomainEvent)]
        no_card_of_a_held_device(
            self.engine, before, state, inp, commands, [e for e in effects if isinstance(e, DomainEvent)]
        )
        if isinstance(inp, MarkOutOfOrder) and not inp.out:
            back_in_service_answer(before, inp.device, [e for e in effects if isinstance(e, DomainEvent)])
        self.status.feed([e for e in effects if isinstance(e, DomainEvent)])
        one_dealing_section(self.sections, [e for e in effects if isinstance(e, DomainEvent)])
        not_locked_for_nothing(self.locked, state, self.spec.rule, [e for e in effects if isinstance(e, DomainEvent)])
        if isinstance(inp, LockAcknowledged) and inp.locked:
            self.locks_outstanding.discard(inp.seat)
        out = [e for e in effects if isinstance(e, DomainEvent)]
        for e in effects:
            if not isinstance(e, DomainEvent):
                if isinstance(e, DispenseStack):
                    assert not self.locks_outstanding, "a stack asked for before every lock was acknowledged"
                self.pending.append(e)
            else:
                self.check(e)
        self.events += out
        if self.exposure_kept is not None:
            assert self.exposure_settled.keys() == self.exposure_kept.keys(), (
                "683a.13(d): every optional wager of a player still at the table is settled under 683a.11(i)"
            )
            assert self.exposure_recorded, "683a.13(d): the round's record is journaled for `tablectl settle`"
            self.exposure_kept = None
        return out

    def check(self, e: DomainEvent) -> None:
        p = e.payload
        if e.round_id is not None and e.round_id != self.round_id:  # a new round
            self.round_id = e.round_id
            self.wagers, self.after_no_more_bets, self.dealt_count, self.asked = {}, False, 0, None
        if e.type == "no_more_bets":
            self.after_no_more_bets = True
            self.locks_outstanding = set(range(1, self.spec.seats(self.game_rules) + 1))
        elif e.type in CARD_EVENTS or e.type.endswith(".dealt"):
            assert not self.locks_outstanding, f"{e.type} before every lock was acknowledged"
            self.dealt_count += (
                1 if e.type == "card.dealt" else p.get("count", 0) if e.type != "deal.awaiting_dealer" else 0
            )
        elif e.type == "card.face_up_discarded":
            self.dealt_count += 1
        elif e.type == "wager.accepted":
            assert not self.after_no_more_bets, 'a wager counted after "no more bets"'
            self.wagers.setdefault(p["seat"], {})[p["spot"]] = p["amount"]
        elif e.type in ("wager.returned", "wager.withdrawn"):
            self.wagers.get(p["seat"], {}).pop(p["spot"], None)
        elif e.type == "street_wager.placed":
            spot = self.asked["spot"] if self.asked else None
            if spot:
                self.wagers.setdefault(p["seat"], {})[spot] = p["amount"]
        elif e.type == "round.voided":
            expected = {str(n): w for n, w in self.wagers.items() if w}
            left = set(p.get("players_left", ()))
            if (
                e.rule == self.spec.rule("13(d)")
                and self.spec.exposure_settles
                and any(ws and n not in left for n, ws in self.wagers.items())
            ):
                # 683a.13(d): "all wagers shall be returned ... provided that if any player placed a Pocket Bonus,
                # Board Bonus, Lo Ball or All-Six Bonus Wager, those wagers shall be settled in accordance with
                # 683a.11(i)": those of the players still at the table are settled, not returned; 683a.11(i) settles
                # each "remaining player" (683a.11(h)): a departed player's (683a.7(b)) stay listed in `returned`.
                self.exposure_kept = {
                    (n, w): a
                    for n, ws in self.wagers.items()
                    if n not in left
                    for w, a in ws.items()
                    if w in self.spec.exposure_settles and a
                }
                self.exposure_settled, self.exposure_recorded = {}, False
                returned = {
                    str(n): {w: a for w, a in ws.items() if (n, w) not in self.exposure_kept}
                    for n, ws in self.wagers.items()
                }
                expected = {n: ws for n, ws in returned.items() if ws}
                assert p["returned"] == expected, "683a.13(d): every wager but the optional ones is returned"
            else:
                assert p["returned"] == expected, "a void must return every wager of the round"
        elif self.exposure_kept is not None and e.type.removesuffix(".settled") in self.spec.exposure_settles:
            key = (p["seat"], p["wager"])
            assert key in self.exposure_kept and p["amount"] == self.exposure_kept[key], f"{key} settled, not placed"
            assert key not in self.exposure_settled, f"{key} settled twice"
            assert e.rule is not None and e.rule.startswith(self.spec.rule("11(i)")), e.rule
            self.exposure_settled[key] = {**{k: p[k] for k in SETTLED_FIELDS}, "rule": e.rule}
        elif self.exposure_kept is not None and e.type == "round.recorded":
            self.same_as_tablectl_settle(p["record"])
            self.exposure_recorded = True
        elif e.type == "stub.discarded":
            assert self.dealt_count + p["count"] == 52, "dealt + face up + stub must be the 52 cards"
        if e.type == "decision.requested":
            self.asked = dict(p)

    def same_as_tablectl_settle(self, record: dict[str, Any]) -> None:
        """`tablectl settle` (controller.games.registry.settle_record) on the exposure's `round.recorded` settles the
        optional wagers as the live table did, and pushes every Ante and Raise Wager it returned (683a.13(d))."""
        assert self.exposure_kept is not None
        rows, _ = settle_record(self.game_rules, record)
        recomputed = {
            (x.seat, x.wager): {f: x.as_dict()[f] for f in (*SETTLED_FIELDS, "rule")}
            for x in rows
            if x.wager in self.spec.exposure_settles
        }
        assert recomputed == self.exposure_settled, (
            "tablectl settle disagrees with the live table on the optional wagers"
        )
        others = [x for x in rows if x.wager not in self.spec.exposure_settles]
        assert all((x.outcome, x.rule, x.paid) == ("push", self.spec.rule("13(d)"), 0) for x in others)
        seats = {s["seat"] for s in record["seats"]}
        returned = {
            (n, w): a
            for n in seats
            for w, a in self.wagers.get(n, {}).items()
            if w not in self.spec.exposure_settles and a
        }
        assert {(x.seat, x.wager): x.amount for x in others} == returned, (
            "tablectl settle pushes other wagers than the live table returned"
        )

    # -- setup --------------------------------------------------------------------------------

    @initialize(
        method=st.sampled_from(["automated_shoe", "manual_shoe", "hand"]),
        counts=st.booleans(),
        preinspected=st.booleans(),
        abandoned=st.sampled_from(["lose", "hold"]),
        two=st.booleans(),
        counted=st.booleans(),
        fallback=st.sampled_from(["manual_shoe", "automated_shoe", "hand", None]),
        covered=st.booleans(),
    )
    def open(
        self,
        method: DealingMethod,
        counts: bool,
        preinspected: bool,
        abandoned: AbandonedWagers,
        two: bool,
        counted: bool,
        fallback: DealingMethod | None = "manual_shoe",
        covered: bool = False,
    ) -> None:
        if self.stand_in_only:
            method, fallback, covered = "automated_shoe", "manual_shoe", True
        if self.hand_fallback_only:
            method, fallback, covered = "automated_shoe", "hand", False
        if counted and len(self.offers) > 1:  # as if the last optional wager were on a table game system
            self.spec = with_counted_wagers(self.spec, {self.offers[-1].spot: "x.8(b)"})
        if method not in self.methods:
            method = self.methods[0]  # the chapter publishes no procedure for that method
        opts = TableOptions(
            decks="two_decks" if two else "one_deck",
            cards_preinspected=preinspected,
            shuffler_counts=counts,
            stub_count_every=1,
            abandoned_wagers=abandoned,
            idle_inspection_minutes=30,
            fallback_dealing_method=fallback,
        )
        self.engine = RoundEngine(self.spec, self.game_rules, method, opts)
        self.step(Tick(self.now))
        self.step(OpenTable())
        if covered and method == "automated_shoe" and fallback is not None:
            self.step(MarkOutOfOrder("shoe"))  # the fallback (a stand-in manual shoe, or the hand) deals from the start

    # -- devices answer (or not) --------------------------------------------------------------

    @rule(i=st.integers(0, 20), count=st.sampled_from([52, 52, 52, 52, 51, 53]))
    def answer(self, i: int, count: int) -> None:
        if not self.pending:
            return
        c = self.pending.pop(i % len(self.pending))
        match c:
            case Shuffle():
                self.shoe = list(STANDARD_DECK)
                self.shoe.reverse()
                order = tuple(self.shoe) if self.engine.method == "hand" else ()
                self.step(ShuffleCompleted("shuffler", card_count=count, order=order))
            case LockSeat(seat=seat) | UnlockSeat(seat=seat):
                self.step(LockAcknowledged(f"wager_station_{seat}", seat=seat, locked=isinstance(c, LockSeat)))
            case LockTerminal(seat=seat) | UnlockTerminal(seat=seat):
                self.step(LockAcknowledged(f"wager_terminal_{seat}", seat=seat, locked=isinstance(c, LockTerminal)))
            case DispenseStack(cards=n):
                stack, self.shoe = self.shoe[:n], self.shoe[n:]
                self.step(StackDispensed("shoe", cards=tuple(stack)))
            case RemoveStub():
                stub, self.shoe = self.shoe, []
                self.step(StubRemoved("shoe", cards=tuple(stub)))

    @rule()
    def wrong_stack(self) -> None:
        if not self.shoe_dealt:
            return
        c = next((c for c in self.pending if isinstance(c, DispenseStack)), None)
        if c is not None:
            self.pending.remove(c)
            stack, self.shoe = self.shoe[: c.cards + 1], self.shoe[c.cards + 1 :]
            self.step(StackDispensed("shoe", cards=tuple(stack)))

    @rule()
    def draw(self) -> None:
        if self.shoe and self.shoe_dealt:
            card, self.shoe = self.shoe[0], self.shoe[1:]
            self.step(CardDrawn("shoe", card=card))

    @rule()
    def face_up(self) -> None:
        if self.shoe and self.shoe_dealt:
            card, self.shoe = self.shoe[0], self.shoe[1:]
            self.step(FaceUpCard("shoe", card=card))

    @rule(
        dev=st.sampled_from(["shuffler", "shoe"]),
        code=st.sampled_from(SHOE_CODES),
    )
    def fault(self, dev: str, code: str) -> None:
        if dev == "shoe" and not self.shoe_dealt:
            return
        if self.rare():
            return
        self.step(DeviceFault(dev, code=code, detail="injected"))

    @rule(dev=st.sampled_from(["shuffler", "shoe"]), code=st.sampled_from(SHOE_CODES))
    def cleared(self, dev: str, code: str) -> None:
        """The device says a fault is cleared, held or not: a clear for a fault it does not hold lifts nothing."""
        held = self.state.device_faults.get(dev)
        self.step(DeviceFaultCleared(dev, code=code))
        if held is None or code not in held.uncleared:
            assert self.state.device_faults.get(dev) == held
        elif len(held.uncleared) > 1:
            assert f"device:{dev}" in self.state.blocks or self.held_by_hand(dev), f"the {dev}'s faults were forgotten"

    @rule(dev=st.sampled_from(["shuffler", "shoe"]), online=st.booleans())
    def online(self, dev: str, online: bool) -> None:
        if dev == "shoe" and not self.shoe_dealt:
            return
        if not online and self.rare():
            return
        self.step(DeviceOnline(dev) if online else DeviceOffline(dev, reason="unplugged"))

    @rule()
    def restart(self) -> None:
        """The daemon restarts: the commands in flight are lost, the state comes back from its stored form."""
        if self.rare():
            return
        self.pending.clear()
        held = dict(self.state.device_faults)
        self.recovered(None)
        # A fault kept with the state stands after the restart and the device's start-up identification, whatever
        # the phase (docs/recovery.md); its next identification is the attendant's restart of it.
        for dev in held:
            self.step(DeviceOnline(dev))
            assert dev in self.state.device_faults, f"the {dev}'s fault was forgotten at the restart"
            assert f"device:{dev}" in self.state.blocks or self.held_by_hand(dev)

    def recovered(self, stop: StopRecord | None) -> dict[str, Any] | None:
        """The state read back from its stored form and `Recover`, whose `table.recovered` must say the refusal the
        dealer's next "no more bets" meets (`no_more_bets_refused`: its rule, reason and blocks, and what lifts it),
        or none when the press would not be refused for a block that stops dealing. That refusal, or None."""
        self.state = snapshot.decode(snapshot.encode(self.state))
        self.status.restart()
        out = self.step(Recover(after_stop=stop))
        said = next((e.payload.get("no_more_bets_refused") for e in out if e.type == "table.recovered"), None)
        pending = self.refusal_now()
        assert (said and {k: v for k, v in said.items() if k != "remedy"}) == pending, (
            f"the restart said {said}, the press meets {pending}"
        )
        if said is not None and "shuffle_order" in said["blocks"]:
            # Either way on, cited: the shoe back in service (.13(g)), or the floorperson's reshuffle (.5(a)).
            assert f"({self.spec.rule('13(g)')};" in said["remedy"] and f"({self.spec.rule('5(a)')})" in said["remedy"]
        elif said is not None:
            assert said["remedy"], "a refusal said without what lifts it"
        return pending

    def refusal_now(self) -> dict[str, Any] | None:
        """What the dealer's "no more bets" would meet now for a block that stops dealing (on a copy: the machine's
        table is not pressed), as `no_more_bets.refused` says it; None for anything else."""
        _, effects = self.engine.step(self.state, BUTTON["no_more_bets"])
        refused = [e for e in effects if isinstance(e, DomainEvent) and e.type == "no_more_bets.refused"]
        return next(({"rule": e.rule, **e.payload} for e in refused if "blocks" in e.payload), None)

    @rule(by=st.sampled_from(["SIGTERM", "crash"]), report=st.sampled_from(["none", "identify", "fault", "offline"]))
    def covered_and_restarted(self, by: str, report: str) -> None:
        """The automated shoe covered while betting is open, on a table falling back to the hand whose shuffler reads
        no order ("no more bets" refused under .9(a)(1) while wagers stand, docs/rules.md), then the table stopped
        (or crashed) and started again, and the covered shoe's first report. The refusal and its remedy survive: said
        by `table.recovered`, met by the next press, whatever the shoe said (its mark is lifted only by a signed
        back_in_service). Drawn as one rule, which first plays on to betting as a good dealer would (`progress`, a few
        steps): the random walk meets the cover, betting and a restart together too seldom."""
        if self.engine.method != "automated_shoe" or self.engine.options.fallback_dealing_method != "hand":
            return
        for _ in range(12):
            if self.state.phase.value == "betting" and self.state.round is not None:
                break
            self.progress()
        s = self.state
        if s.phase.value != "betting" or s.round is None or len(s.deck_order) == 52:
            return
        if not any(w.wagers for w in s.round.seats.values()):
            self.player(1 + len(self.events) % self.spec.seats(self.game_rules))
        if "shoe" not in self.state.out_of_order:
            self.step(MarkOutOfOrder("shoe"))
        if "shuffler" in self.state.out_of_order:
            # Both covered, no method deals (.13(g)); the shuffler back in betting, the deck it did not shuffle (by
            # hand) has no order either: the same refusal (docs/rules.md).
            for inp in reports_healthy(self.state, "shuffler"):  # repaired, it answers: taken back (docs/rules.md)
                self.step(inp)
            self.step(MarkOutOfOrder("shuffler", out=False))
        before = self.refusal_now()
        if "shuffle_order" in self.state.blocks:
            assert before is not None and "shuffle_order" in before["blocks"], "wagers stand, nothing refused"
            sole = before["blocks"] == ["shuffle_order"]
            assert before["rule"] == self.spec.rule("9(a)(1)" if sole else "13(g)"), before
            self.refusals_restarted += 1
        self.pending.clear()
        # A stop on purpose (`table.stopped`, journaled last: its seq is the next) or a crash: the same recovery.
        assert self.recovered(None if by == "crash" else StopRecord(len(self.events) + 1, by)) == before, (
            "the refusal pending at the stop is not the one after the restart"
        )
        for inp in COVERED_REPORTS[report]:
            self.step(inp)
        assert self.refusal_now() == before, f"the covered shoe's first report ({report}) changed the refusal"

    @rule(dev=st.sampled_from(["shuffler", "shoe"]), out=st.booleans())
    def mark(self, dev: str, out: bool) -> None:
        if dev == "shoe" and not self.shoe_dealt:
            return
        if out and self.rare():
            return
        self.step(MarkOutOfOrder(dev, out))

    @rule(code=st.sampled_from((*SHOE_CODES, "offline", "identify", "cleared")), cover=st.booleans())
    def stand_in(self, code: str, cover: bool) -> None:
        """An automated-shoe table with a fallback: the shoe covered (unthinned, so the fallback deals often), then what
        the device `shoe` says (the stand-in manual shoe's, while it deals in the covered shoe's place)."""
        if self.engine.method != "automated_shoe" or self.engine.options.fallback_dealing_method is None:
            return
        if self.hand_fallback_only:  # no stand-in shoe; and covered unthinned, the shoe seldom waits for betting
            return
        if cover and "shoe" not in self.state.out_of_order:
            self.step(MarkOutOfOrder("shoe"))
        held = self.state.device_faults.get("shoe")
        if code == "offline":
            self.step(DeviceOffline("shoe", reason="cable"))
        elif code == "identify":
            self.step(DeviceOnline("shoe"))
        elif code == "cleared":
            self.step(DeviceFaultCleared("shoe", code=held.uncleared[0] if held else "malfunction"))
        else:
            self.step(DeviceFault("shoe", code=code, detail="stand-in"))

    # -- people --------------------------------------------------------------------------------

    @rule(seat=st.integers(0, 8), i=st.integers(0, 10), amount=st.sampled_from([0, 100, 500, 1000, 2500, 99_999]))
    def wager(self, seat: int, i: int, amount: int) -> None:
        spot = self.spots[i % len(self.spots)]
        self.step(WagerDetected(f"{_device(spot)}_{seat}", seat=seat, spot=spot, amount_cents=amount))

    @rule(seat=st.integers(1, 7))
    def player(self, seat: int) -> None:
        for o in self.offers:
            self.step(WagerDetected(f"{_device(o.spot)}_{seat}", seat=seat, spot=o.spot, amount_cents=o.min_cents))

    @rule(
        seat=st.integers(0, 8), amount=st.sampled_from([0, 100, 5_000]), request=st.sampled_from(["buy_in", "cash_out"])
    )
    def account(self, seat: int, amount: int, request: str) -> None:
        """A buy-in or cash-out at the seat's terminal, confirmed by the dealer (605a.2(d)(1)), on any table."""
        self.step(AccountRequested(f"wager_terminal_{seat}", seat, request, amount, "cash" if amount else "chips"))
        self.step(DealerConfirmed(f"wager_terminal_{seat}", seat, request))

    @rule(seat=st.integers(1, 7))
    def refused_by_station(self, seat: int) -> None:
        self.step(
            WagerRefused(f"wager_station_{seat}", seat=seat, spot=self.spots[0], amount_cents=500, reason="locked")
        )

    @rule(choice=st.integers(0, 3))
    def decide(self, choice: int) -> None:
        if self.asked is None or self.state.phase.value != "decision":
            return
        p = self.asked
        if p["kind"] == "wager_or_fold":
            allowed = p["allowed"]
            if choice == 3:
                self.step(ButtonPressedFold)
            else:
                self.step(
                    WagerDetected(
                        f"wager_station_{p['seat']}",
                        seat=p["seat"],
                        spot=p["spot"],
                        amount_cents=allowed[choice % len(allowed)],
                    )
                )
        else:
            self.step(BUTTON["withdraw" if choice == 0 else "let_it_ride"])

    @rule(button=st.sampled_from(BUTTONS))
    def press(self, button: str) -> None:
        if button == "community_exposed" and not self.community:
            return
        self.step(BUTTON[button])

    @rule(
        who=st.sampled_from(["dealer", "floorperson"]),
        what=st.sampled_from(["cards_inspected", "deck_verified", "shuffled", "misdeal", "no_misdeal", "other"]),
    )
    def confirm(self, who: Who, what: str) -> None:
        self.step(Confirm(who, what))

    @rule(what=st.sampled_from(["chips", "stub"]), delta=st.sampled_from([0, 0, 0, -1, 1]))
    def count(self, what: Literal["chips", "stub"], delta: int) -> None:
        r = self.state.round
        right = 0
        if r is not None:
            right = r.chips_accepted if what == "chips" else 52 - len(r.dealt) - len(r.discarded)
        self.step(CountEntered(what, max(0, right + delta)))

    @rule(decision=st.sampled_from(["proceed", "recount", "void", "reshuffle"]))
    def decide_floor(self, decision: str) -> None:
        self.step(FloorpersonDecision("chip_count" if decision != "reshuffle" else "shuffle_order", decision, "fp1"))

    @rule(seat=st.integers(1, 7))
    def leaves(self, seat: int) -> None:
        self.step(PlayerLeft(seat))

    @rule(minutes=st.sampled_from([1, 10, 45, 240, 500]))
    def tick(self, minutes: int) -> None:
        self.now += timedelta(minutes=minutes)
        self.step(Tick(self.now))

    @rule(p=st.integers(0, 15))
    def close_and_reopen(self, p: int) -> None:
        if p:
            return
        self.step(CloseTable())
        if self.state.phase.value == "closed":
            self.pending.clear()
            self.step(OpenTable())

    # -- progress: what a good dealer, floorperson and devices do next -----------------------------

    def rare(self) -> bool:
        self.coin = (self.coin * 1103515245 + 12345) % 2**31  # deterministic thinning of the fault rules
        return self.coin % 3 != 0

    def progress(self) -> None:
        s = self.state
        phase = s.phase.value
        if phase in ("opening", "blocked"):
            key = next(iter(s.blocks), "")
            if key == "inspection":
                self.step(Confirm("dealer" if "dealer" not in s.confirmed else "floorperson", "cards_inspected"))
            elif key == "idle_inspection":
                self.step(Confirm("dealer", "cards_inspected"))
            elif key.startswith("deck_"):
                self.step(Confirm("floorperson", "deck_verified"))
            elif key.startswith("device:"):
                self.step(DeviceOnline(key[7:]))
            elif key == "no_method":
                for dev in list(s.out_of_order):
                    for inp in reports_healthy(self.state, dev):
                        self.step(inp)
                    self.step(MarkOutOfOrder(dev, False))
            elif key == "shuffle_order":
                self.step(FloorpersonDecision("shuffle_order", "reshuffle"))
        elif self.pending:
            self.answer(0, 52)
        elif phase == "shuffling":
            self.step(Confirm("dealer", "shuffled"))
        elif phase == "betting" and s.round is not None:
            if "shuffle_order" in s.blocks:  # no card order to deal this round from the hand: shuffle again (.5(a))
                self.step(FloorpersonDecision("shuffle_order", "reshuffle"))
            elif not any(st.wagers for st in s.round.seats.values()):
                self.player(1 + len(self.events) % self.spec.seats(self.game_rules))
            else:
                self.step(BUTTON["no_more_bets"])
        elif phase == "reconciling":
            if "chip_count" in s.blocks:
                self.step(FloorpersonDecision("chip_count", "proceed"))
            else:
                self.count("chips", 0)
        elif phase == "dealing":
            self.draw()
        elif phase == "dealt":
            self.step(BUTTON["dealt"])
        elif phase == "stub_count":
            if s.round is not None and s.round.stub_entered is not None:
                self.step(Confirm("dealer", "misdeal"))
            else:
                self.count("stub", 0)
        elif phase == "decision":
            self.decide(1)
        elif phase == "closed":
            self.step(OpenTable())

    @rule()
    def progress_a(self) -> None:
        self.progress()

    @rule()
    def progress_b(self) -> None:
        self.progress()

    @rule()
    def progress_c(self) -> None:
        self.progress()

    @rule()
    def progress_d(self) -> None:
        self.progress()

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def consistent(self) -> None:
        s = self.state
        assert s.accounts.balance_problem() is None
        if s.phase.value in ("blocked", "opening"):
            assert s.blocks, "blocked without a reason"
            assert s.round is None
        if s.round is not None and s.phase.value in ("dealing", "dealt", "decision", "stub_count"):
            assert s.round.players, "cards dealt to no player"
        # Covered, a device is no longer held; but the shoe stood in for is the stand-in manual shoe's port (its hold).
        assert not (s.out_of_order.keys() & s.devices_down.keys()) - ({"shoe"} if stands_in(self.engine, s) else set())
        # A fault kept for a restart is one of the devices down: it never blocks on its own, nor outlives the block
        # (a shoe held while the table deals by hand blocks nothing: no round of it asks the shoe for a card).
        assert s.device_faults.keys() <= s.devices_down.keys()
        assert all(
            f.uncleared and (f"device:{d}" in s.blocks or self.held_by_hand(d)) for d, f in s.device_faults.items()
        )

    @invariant()
    def holds_agree(self) -> None:
        """The device status a supervisor reads says what the engine holds; every hold can be lifted."""
        self.status.agrees(self.state)
        key = hold_key(self.state)
        if key not in self.liftable:
            lift_holds(self.engine, self.state)
            self.liftable.add(key)

    def held_by_hand(self, dev: str) -> bool:
        """A shoe held while the table deals by hand blocks nothing (no round of it asks the shoe for a card); it is
        held only for a table that could turn to it, its fallback a shoe: any other could never block."""
        fallback = self.engine.options.fallback_dealing_method
        return dev == "shoe" and self.engine.method == "hand" and fallback in SHOE_METHODS


DEALING_EVENTS = ("no_more_bets", "lockout.confirmed", "deal.awaiting_dealer", "cards.dealt", "stub.discarded")


def one_dealing_section(sections: dict[str, str], events: list[DomainEvent]) -> None:
    """A round is dealt by the procedure its "no more bets" was announced under, whatever is marked out of order after
    it (.13(g) turns the next round, docs/rules.md): every dealing event of a round cites the same section."""
    for e in events:
        if e.type not in DEALING_EVENTS or e.round_id is None or e.rule is None:
            continue
        section = e.rule.split("(")[0]  # "643a.9(a)(3)" -> "643a.9"
        if section.split(".")[-1] in ("8", "9", "10"):
            dealt_by = sections.setdefault(e.round_id, section)
            assert dealt_by == section, f"{e.type} cites {e.rule} in a round announced under {dealt_by}"


def not_locked_for_nothing(
    locked: set[str], state: TableState, rule: Callable[[str], str], events: list[DomainEvent]
) -> None:
    """A round whose wagers were locked is never voided for what the table knew before its "no more bets" (.9(a)(3):
    announced "prior to dealing any cards"): the deck's card order, fixed by its shuffle (a hand round is announced
    only with the 52 cards' order, .9(a)(1)), and whether any dealing method can deal it (the round's own method is
    pinned by a mark after the lock, so none missing at the deal was missing at the lock, .13(g)). A void for a device
    that fails after the lock (.13(f), a stand-in's .13(g)) or for the cards (.13(a)-(d), the stub) is none of these."""
    for e in events:
        if e.type == "no_more_bets" and e.round_id is not None:
            locked.add(e.round_id)
            if e.rule == rule("9(a)(3)"):
                assert len(state.deck_order) == 52, "wagers locked for a round from the hand with no card order"
        elif e.type == "round.voided" and e.round_id in locked:
            why = str(e.payload.get("reason", ""))
            assert e.rule != rule("9(a)(1)") and "no dealing method" not in why, (
                f"a locked round voided for what the table knew before the lock: {e.rule} {why}"
            )


from drivers.interfaces import ButtonPressed  # noqa: E402

# What the covered shoe says first once the table is up again: nothing yet, it identifies (it may have been uncovered
# while the table was down), a fault, or it is gone.
COVERED_REPORTS: dict[str, list[Input]] = {
    "none": [],
    "identify": [DeviceOnline("shoe")],
    "fault": [DeviceOnline("shoe"), DeviceFault("shoe", code="jam", detail="card jam at the gate")],
    "offline": [DeviceOffline("shoe", reason="unplugged")],
}


def _device(spot: str) -> str:
    """Where a wager is made: the Five Card Hand Bonus at the terminal (655a.7(d)(5)), the rest on its station."""
    return "wager_terminal" if spot in TERMINAL_SPOTS else "wager_station"


# What a `<wager>.settled` event and a `tablectl settle` row both say of a wager.
SETTLED_FIELDS = ("seat", "wager", "amount", "outcome", "paid", "returned", "collected")

BUTTON = {b: ButtonPressed("dealer_panel", button=b) for b in BUTTONS}
ButtonPressedFold = BUTTON["fold"]

SETTINGS = settings(
    max_examples=100,
    stateful_step_count=120,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)  # no shrinking: < 30 s even on failure
STAND_IN_SETTINGS = settings(SETTINGS, max_examples=15)


@pytest.mark.parametrize("chapter", sorted(SPECS))
def test_random_tables_keep_the_invariants(chapter: str) -> None:
    machine = type(f"TableMachine_{chapter}", (TableMachine,), {"chapter": chapter})
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(machine, settings=SETTINGS)


STAND_IN = [c for c in sorted(SPECS) if {"automated_shoe", "manual_shoe"} <= set(SPECS[c].supported_methods)]


@pytest.mark.parametrize("chapter", STAND_IN)
def test_random_stand_in_tables_keep_the_invariants(chapter: str) -> None:
    """The stand-in manual shoe (docs/rules.md): every fault, offline, identification and clear of the device `shoe`,
    in every phase, with the marks of both devices, on the automated-shoe table dealing from its fallback."""
    machine = type(f"StandInMachine_{chapter}", (TableMachine,), {"chapter": chapter, "stand_in_only": True})
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(machine, settings=STAND_IN_SETTINGS)


HAND_FALLBACK = [c for c in sorted(SPECS) if {"automated_shoe", "hand"} <= set(SPECS[c].supported_methods)]
HAND_FALLBACK_SETTINGS = settings(SETTINGS, max_examples=15)


@pytest.mark.parametrize("chapter", HAND_FALLBACK)
def test_random_tables_restart_with_no_more_bets_refused(chapter: str) -> None:
    """The automated shoe covered in betting on a table falling back to the hand (no card order: "no more bets"
    refused, .9(a)(1)), stopped or crashed and started again, then whatever the covered shoe says first, among every
    other rule: `covered_and_restarted` and `recovered` check that the refusal and its remedy survive the restart.
    The examples must reach it (found with the refusal pending at a restart), or the rule tests nothing."""
    reached: list[int] = []

    class HandFallbackMachine(TableMachine):
        def teardown(self) -> None:
            reached.append(self.refusals_restarted)

    machine = type(
        f"HandFallbackMachine_{chapter}", (HandFallbackMachine,), {"chapter": chapter, "hand_fallback_only": True}
    )
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(machine, settings=HAND_FALLBACK_SETTINGS)
    assert sum(reached) > 0, f"no example restarted with the refusal pending ({len(reached)} examples)"


def test_683a_exposure_settles_the_optional_wagers_and_tablectl_settle_agrees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example the machine found (shrunk): one player with an Ante and every optional wager, dealt from the
    automated shoe, then a community card exposed before its reveal. 683a.13(d): the Ante is returned, but the Pocket
    Bonus, Board Bonus, Lo Ball and All-Six Bonus Wagers are settled under 683a.11(i), not returned (the machine's
    void invariant used to demand them back); `tablectl settle` on the journaled record says the same."""
    machine = type("TableMachine_683a", (TableMachine,), {"chapter": "683a"})()
    machine.open(method="automated_shoe", counts=False, preinspected=False, abandoned="lose", two=False, counted=False)
    for _ in range(19):
        machine.progress_b()
    assert machine.state.phase.value == "stub_count"
    assert machine.wagers == {
        3: {"ante": 500, "pocket_bonus": 100, "board_bonus": 100, "lo_ball": 100, "all_six_bonus": 100}
    }
    out = machine.step(BUTTON["community_exposed"])
    void = next(e for e in out if e.type == "round.voided")
    assert (void.rule, void.payload["returned"]) == ("683a.13(d)", {"3": {"ante": 500}})
    live = [
        (e.payload["wager"], e.payload["outcome"], e.payload["paid"], e.payload["collected"], e.rule)
        for e in out
        if e.type.endswith(".settled")
    ]
    # The reversed deck deals seat 3 As Ks, the All-Six Bonus cards Qs Js Ts 9s and the community 8s 7s 6s.
    assert live == [
        ("pocket_bonus", "win", 2_000, 0, "683a.11(i)(1)(ii)"),
        ("board_bonus", "win", 4_000, 0, "683a.11(i)(2)(ii)"),
        ("lo_ball", "lose", 0, 100, "683a.11(i)(3)(i)"),
        ("all_six_bonus", "win", 2_000_000, 0, "683a.11(i)(4)(ii)"),
    ]
    types = [e.type for e in out]
    assert types.index("round.voided") < types.index("pocket_bonus.settled") < types.index("round.recorded")
    record = next(e for e in out if e.type == "round.recorded").payload["record"]
    (tmp_path / "round.json").write_text(json.dumps(record))
    config = Path(__file__).resolve().parents[2] / "configs" / "cajun-stud.toml"
    assert main(["settle", "--config", str(config), str(tmp_path / "round.json")]) == 0
    (seat,) = json.loads(capsys.readouterr().out)["seats"]
    assert seat["seat"] == 3
    assert [(w["wager"], w["outcome"], w["paid"], w["collected"], w["rule"]) for w in seat["wagers"]] == [
        ("ante", "push", 0, 0, "683a.13(d)"),
        *live,
    ]


def dealt_to_two_players(chapter: str, abandoned: AbandonedWagers) -> TableMachine:
    """The chapter's machine dealt from the automated shoe to players at seats 2 and 5, each with the minimum of every
    wager offered, waiting for the stub count: every card of the round, the community cards included, is out."""
    machine: TableMachine = type(f"TableMachine_{chapter}", (TableMachine,), {"chapter": chapter})()
    machine.open(
        method="automated_shoe", counts=False, preinspected=False, abandoned=abandoned, two=False, counted=False
    )
    while machine.state.phase.value != "betting":
        machine.progress_a()
    machine.player(2)
    machine.player(5)
    while machine.state.phase.value != "stub_count":
        machine.progress_a()
    return machine


def test_683a_exposure_after_the_only_player_left_settles_nothing() -> None:
    """The example the machine found in a combined run (shrunk by hand): the only player left (683a.7(b)), then a
    community card was exposed (683a.13(d)). The void returned {'3': {'ante': 500}} and settled his optional wagers,
    which had been collected as losing when he left: 683a.11(i) settles the remaining players' (683a.11(h)), so the
    void lists them all and settles none (docs/rules.md)."""
    machine = type("TableMachine_683a", (TableMachine,), {"chapter": "683a"})()
    machine.open(method="automated_shoe", counts=False, preinspected=False, abandoned="lose", two=False, counted=False)
    for _ in range(19):
        machine.progress_b()
    placed = {"ante": 500, "pocket_bonus": 100, "board_bonus": 100, "lo_ball": 100, "all_six_bonus": 100}
    assert machine.wagers == {3: placed}
    machine.step(PlayerLeft(3))
    out = machine.step(BUTTON["community_exposed"])
    void = next(e for e in out if e.type == "round.voided")
    assert (void.rule, void.payload["returned"], void.payload["players_left"]) == ("683a.13(d)", {"3": placed}, [3])
    assert not [e for e in out if e.type.endswith(".settled") or e.type == "round.recorded"]


@pytest.mark.parametrize("chapter", ["643a", "655a", "683a"])
@pytest.mark.parametrize("abandoned", ["lose", "hold"])
def test_exposure_after_a_player_left_settles_none_of_his_wagers(chapter: str, abandoned: AbandonedWagers) -> None:
    """A player left (.7(b)), then a community card was exposed (.13(d)): the void lists every wager of his with
    `players_left`, lost or held as he left them, and settles none; 683a settles the remaining player's optional
    wagers (683a.13(d), under 683a.11(i)), 643a and 655a have no such proviso and settle nothing."""
    machine = dealt_to_two_players(chapter, abandoned)
    placed = {str(n): dict(w) for n, w in machine.wagers.items()}
    machine.step(PlayerLeft(5))
    held = dict(machine.state.held_wagers)
    out = machine.step(BUTTON["community_exposed"])  # the machine's invariants check the returns and settlements
    void = next(e for e in out if e.type == "round.voided")
    optional = set(machine.spec.exposure_settles)
    stays = {"2": {w: a for w, a in placed["2"].items() if w not in optional}, "5": placed["5"]}
    assert (void.rule, void.payload["returned"], void.payload["players_left"]) == (f"{chapter}.13(d)", stays, [5])
    assert {(e.payload["seat"], e.type) for e in out if e.type.endswith(".settled")} == {
        (2, f"{w}.settled") for w in optional
    }
    assert machine.state.held_wagers == held == ({5: placed["5"]} if abandoned == "hold" else {})


@pytest.mark.parametrize("chapter", ["643a", "655a", "683a"])
def test_a_shoe_covered_in_betting_locks_no_wagers_for_a_round_it_cannot_deal(chapter: str) -> None:
    """The case `not_locked_for_nothing` states, driven through the machine (its random walk meets it too seldom): an
    automated-shoe table falling back to the hand, whose shuffler reads no order, its shoe covered while betting is
    open with wagers on the layout. The wagers were locked and the round voided at its deal under .9(a)(1) before
    docs/rules.md's reading; now no "no more bets" is announced for that deck and its wagers go back unlocked."""
    machine = type(f"TableMachine_{chapter}", (TableMachine,), {"chapter": chapter})()
    machine.open(
        method="automated_shoe",
        counts=True,
        preinspected=True,
        abandoned="lose",
        two=False,
        counted=False,
        fallback="hand",
    )
    while machine.state.phase.value != "betting" or not machine.wagers:
        machine.progress()
    betting = machine.state.round
    assert betting is not None and machine.state.deck_order == []
    machine.step(MarkOutOfOrder("shoe"))
    for _ in range(40):
        machine.progress()
    of_round = [e for e in machine.events if e.round_id == betting.round_id]
    assert "no_more_bets" not in [e.type for e in of_round] and "round.voided" not in [e.type for e in of_round]
    returned = {(e.payload["seat"], e.payload["spot"]) for e in of_round if e.type == "wager.returned"}
    assert returned == {(n, spot) for n, st in betting.seats.items() for spot in st.wagers}
