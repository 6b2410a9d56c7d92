"""Across random rounds, hits, resets and voids: contributions == display growth + reserve + paid + overflow
(+ what audited resets removed), to the micro-cent; displays fall only by a hit, a reset or a void; the events
replay to the same meters; the stored form reads back the same."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from controller.core.events import DomainEvent
from controller.progressive import codec
from controller.progressive.meters import close_round, contribute, hit, reset, seed_missing, void_round
from controller.progressive.model import MICRO, FixedFromMeter, MeterError, Meters, PercentOfMeter, replay
from controller.progressive.parameters import (
    PPM_PER_PERCENT,
    LevelParameters,
    ProgressiveParameters,
    TableProgressives,
)

LEVEL_NAMES = ["mega", "major", "minor", "bonus", "side"]


@st.composite
def tables(draw: st.DrawFn) -> TableProgressives:
    names = iter(draw(st.permutations(LEVEL_NAMES)))
    progressives = []
    for spot in draw(
        st.lists(st.sampled_from(["progressive", "five_card_hand_bonus"]), min_size=1, max_size=2, unique=True)
    ):
        levels = []
        for _ in range(draw(st.integers(1, 2))):
            seed = draw(st.integers(0, 2_000_000))
            reseed = draw(st.integers(0, 2_000_000))
            # Rates down to 0.0001 % (1 ppm), so the fractions of a cent are exercised.
            primary = draw(st.integers(0, 30 * PPM_PER_PERCENT))
            reserve = draw(st.sampled_from([0, draw(st.integers(1, 10 * PPM_PER_PERCENT))]))
            limit = draw(st.none() | st.integers(max(seed, reseed, 1), max(seed, reseed, 1) + 5_000))
            levels.append(
                LevelParameters(
                    level=next(names),
                    seed_cents=seed,
                    reseed_cents=reseed,
                    primary_ppm=primary,
                    reserve_ppm=reserve,
                    limit_cents=limit,
                    rule="test",
                )
            )
        progressives.append(ProgressiveParameters(wager=spot, levels=tuple(levels), rule="test"))
    return TableProgressives(progressives=tuple(progressives))


class MeterMachine(RuleBasedStateMachine):
    """The test's own books: what went in (from the wagers it made and the rates), what came out (the sums hit()
    returned), kept apart from the model's accumulators and compared with them after every step."""

    @initialize(params=tables())
    def start(self, params: TableProgressives) -> None:
        self.params = params
        self.meters, self.log = seed_missing(Meters(), params)
        self.put_in = {name: 0 for name in params.levels}  # micro-cents the wagers contributed, less voids
        self.paid = {name: 0 for name in params.levels}
        self.round = 0
        self.round_wagers: dict[str, list[tuple[str, int]]] = {}
        self.open_round: str | None = None
        self.new_round()

    def new_round(self) -> None:
        self.round += 1
        self.open_round = f"r{self.round}"
        self.round_wagers[self.open_round] = []

    def step(self, meters: Meters, events: list[DomainEvent], lowering_allowed: bool) -> None:
        for event in events:
            delta = event.payload.get("delta", {})
            if delta.get("display_micro", 0) < 0:
                assert lowering_allowed and event.type in {
                    "meter.hit",
                    "meter.reset",
                    "meter.contributions_reversed",
                }, event
        before = self.meters
        for name, lv in meters.levels.items():
            if not lowering_allowed:
                assert lv.display_micro >= before.levels[name].display_micro
        self.meters = meters
        self.log += events

    @rule(data=st.data(), amount=st.sampled_from([100, 500, 125, 1, 2_500]), seat=st.integers(1, 7))
    def wager(self, data: st.DataObject, amount: int, seat: int) -> None:
        assert self.open_round is not None
        spot = data.draw(st.sampled_from([p.wager for p in self.params.progressives]))
        meters, events = contribute(self.meters, self.params, spot, amount, seat=seat, round_id=self.open_round)
        for lv in self.params.for_wager(spot).levels:
            self.put_in[lv.level] += amount * (lv.primary_ppm + lv.reserve_ppm)
        self.round_wagers[self.open_round].append((spot, amount))
        self.step(meters, events, lowering_allowed=False)

    @rule(data=st.data(), percent=st.sampled_from([100, 100, 10, 1, 50]), seat=st.integers(1, 7))
    def hit_percent(self, data: st.DataObject, percent: int, seat: int) -> None:
        level = data.draw(st.sampled_from(sorted(self.params.levels)))
        shown = self.meters.levels[level].display_cents
        meters, paid, events = hit(
            self.meters, self.params, level, PercentOfMeter(percent), seat=seat, round_id=self.open_round, rule="test"
        )
        assert paid == shown * percent // 100
        if percent < 100:
            assert meters.levels[level].display_micro == self.meters.levels[level].display_micro - paid * MICRO
        else:
            reseed = self.params.levels[level].reseed_cents
            assert meters.levels[level].display_cents >= min(reseed, self.params.levels[level].limit_cents or reseed)
        self.paid[level] += paid
        self.step(meters, events, lowering_allowed=True)

    @rule(data=st.data(), cents=st.integers(1, 5_000))
    def hit_fixed(self, data: st.DataObject, cents: int) -> None:
        level = data.draw(st.sampled_from(sorted(self.params.levels)))
        if cents > self.meters.levels[level].display_cents:
            try:
                hit(self.meters, self.params, level, FixedFromMeter(cents), seat=1, round_id=None, rule="test")
            except MeterError:
                return
            raise AssertionError("a fixed award above the meter was paid")
        meters, paid, events = hit(
            self.meters, self.params, level, FixedFromMeter(cents), seat=1, round_id=None, rule="test", paid_by="system"
        )
        self.paid[level] += paid
        self.step(meters, events, lowering_allowed=True)

    @rule()
    def settle_round(self) -> None:
        assert self.open_round is not None
        meters, events = close_round(self.meters, self.open_round)
        self.step(meters, events, lowering_allowed=False)
        self.new_round()

    @rule()
    def void(self) -> None:
        assert self.open_round is not None
        rid = self.open_round
        try:
            meters, events = void_round(self.meters, rid, rule="test")
        except MeterError:
            # Refused only when a level the round fed has paid a hit (or was reseeded) since it contributed.
            first = next(i for i, e in enumerate(self.log) if e.type == "meter.contributed" and e.round_id == rid)
            fed = {e.payload["level"] for e in self.log if e.type == "meter.contributed" and e.round_id == rid}
            assert any(
                e.type in ("meter.hit", "meter.reseeded") and e.payload["level"] in fed for e in self.log[first:]
            )
            return
        for spot, amount in self.round_wagers[rid]:
            for lv in self.params.for_wager(spot).levels:
                self.put_in[lv.level] -= amount * (lv.primary_ppm + lv.reserve_ppm)
        self.step(meters, events, lowering_allowed=True)
        self.new_round()

    @precondition(lambda self: self.round % 5 == 0)
    @rule(data=st.data())
    def audited_reset(self, data: st.DataObject) -> None:
        level = data.draw(st.sampled_from(sorted(self.params.levels)))
        meters, events = reset(self.meters, self.params, level, reason="test", authorised_by="fp")
        self.step(meters, events, lowering_allowed=True)

    @invariant()
    def balances_to_the_micro_cent(self) -> None:
        for name, lv in self.meters.levels.items():
            growth = lv.display_micro - lv.house_funded_micro
            assert (
                self.put_in[name]
                == growth + lv.reserve_micro + self.paid[name] * MICRO + lv.overflow_micro + lv.removed_micro
            ), name
            assert lv.contributed_micro == self.put_in[name]
            assert lv.wins_cents == self.paid[name]
            limit = self.params.levels[name].limit_cents
            assert limit is None or lv.display_cents <= limit
        assert self.meters.balance_problems() == []

    @invariant()
    def events_replay_and_the_store_reads_back(self) -> None:
        # Through JSON, as the journal would give them back.
        text = json.dumps([[e.type, e.rule, e.payload, e.round_id] for e in self.log])
        assert replay(DomainEvent(*row) for row in json.loads(text)) == self.meters
        assert codec.decode(codec.encode(self.meters, self.round)).meters == self.meters


MeterMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=50,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestMeterBalance = MeterMachine.TestCase
