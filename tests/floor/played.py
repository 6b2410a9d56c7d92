"""A 655a table played on the real engine (tests/engine's pure table) into a real journal file, each input's events
journaled as one commit at a clock the test sets: so a round can be dealt before a period's edge (a gaming day's
start hour, a shift's change) and settled after it, which no wall-clock run can place. Shared by
test_reconcile_days.py and test_reconcile_shifts.py (no test module imports another)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from controller.core.events import DomainEvent
from controller.engine.commands import DeviceCommand
from controller.engine.inputs import Input, Signed, ValidateJackpot
from controller.engine.state import Phase
from controller.store.journal import Journal
from drivers.interfaces import FaceUpCard
from tests.engine.conftest import PureTable
from tests.engine.mississippi_table import make

PLAIN = ((1, "ante", 500), (1, "three_card_bonus", 100), (2, "ante", 1000), (3, "ante", 500))


class Played:
    """A pure table whose every input is journaled as one commit at `now`."""

    def __init__(self, path: Path, table_id: str, start: datetime, table: PureTable | None = None) -> None:
        self.t = table or make()
        self.journal = Journal(path, table_id, "boot-1")
        self.now = start
        self.journal.append(self.t.events, self.now)  # the opening

    def at(self, when: datetime) -> Played:
        assert when >= self.now, "a journal's clock does not go back in this scenario"
        self.now = when
        return self

    def log(self, events: Sequence[DomainEvent]) -> list[DomainEvent]:
        self.journal.append(events, self.now)
        self.now += timedelta(seconds=1)
        return list(events)

    def wagers(self, *placed: tuple[int, str, int]) -> None:
        for seat, spot, cents in placed:
            self.log(self.t.wager(seat, spot, cents))

    def decide(self, pending: Sequence[DomainEvent], fold: int | None, jump: tuple[int, datetime] | None) -> None:
        """Every decision: seat `fold` folds at its first, the others bet the least allowed; `jump` = (n, when):
        after the first n decisions the clock jumps to `when` (a round the gaming day's start cuts in two)."""
        taken = 0
        while True:
            asks = [e for e in pending if e.type == "decision.requested"]
            if not asks or self.t.state.phase.value != "decision":
                return
            p = asks[-1].payload
            if p["seat"] == fold:
                pending = self.log(self.t.press("fold"))
            elif p["kind"] == "wager_or_fold":
                pending = self.log(self.t.wager(p["seat"], p["spot"], p["allowed"][0]))
            else:
                pending = self.log(self.t.press("let_it_ride"))
            taken += 1
            if jump is not None and taken == jump[0]:
                self.at(jump[1])

    def round(
        self,
        when: datetime,
        fold: int | None = None,
        jump: tuple[int, datetime] | None = None,
        wagers: Sequence[tuple[int, str, int]] = PLAIN,
        validate_at: datetime | None = None,
    ) -> str:
        """A round; a jackpot it hits is validated by a floorperson at `validate_at` (655a.11(i)(1))."""
        self.at(when)
        self.wagers(*wagers)
        locked = self.log(self.t.press("no_more_bets"))
        round_id = str(locked[0].round_id)
        self.decide(locked, fold, jump)
        if self.t.state.phase is Phase.JACKPOT:
            assert validate_at is not None, "this round hit a jackpot: say when the floorperson validates it"
            self.at(validate_at)
            hits = [e.payload for e in self.t.events if e.type == "progressive.hit" and e.round_id == round_id]
            for h in hits:
                v = ValidateJackpot(h["seat"], h["level"], h["hit"], "floor-ann", "floorperson")
                self.log(self.t.feed(Signed(v, f"cmd-{h['hit']}", "validate_jackpot", v.key_id, v.role)))
        assert [e.type for e in self.t.events if e.round_id == round_id][-1] == "round.completed"
        return round_id

    def voided_round(self, when: datetime, *extra: tuple[int, str, int]) -> str:
        """655a.13(a): the shoe finds a card face up in two stacks; the round is void, every wager returned (and a
        progressive wager's contributions reversed)."""
        self.at(when)
        self.wagers((1, "ante", 500), (2, "ante", 500), (2, "three_card_bonus", 200), *extra)
        shown = {"n": 0}
        t, orig = self.t, self.t.answer

        def answer(c: DeviceCommand) -> list[Input]:
            if c.verb == "dispense_stack" and shown["n"] < 2:
                shown["n"] += 1
                card, t.shoe = t.shoe[0], t.shoe[1:]
                return [FaceUpCard("shoe", card=card), *orig(c)]
            return orig(c)

        t.answer = answer
        out = self.log(t.press("no_more_bets"))
        t.answer = orig
        void = next(e for e in out if e.type == "round.voided")
        assert void.rule == "655a.13(a)"
        return str(void.round_id)
