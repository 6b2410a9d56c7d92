"""A linked table at the pure engine (docs/linked-progressives.md, "The table side"): the link's devices answer
nothing the test does not feed, and a round whose two straight flushes claim two major hits. Shared by
test_link_table.py and test_recovery_policy.py, so that neither imports the other."""

from __future__ import annotations

from controller.engine.commands import DeviceCommand, SendLink, ShowLink
from controller.engine.inputs import Input, LinkAnswered, LinkLease, OpenTable
from controller.engine.round import RoundEngine
from controller.engine.state import Phase, TableState
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.spec import MississippiStudSpec
from tests.engine.conftest import PureTable

LEVELS = ("major", "mega", "minor")
SEAT1, SEAT3, COMMUNITY = ["Qh", "Kh"], ["7h", "8h"], ["9h", "Th", "Jh"]  # two straight flushes: two major hits


def linked_rules() -> MississippiStudRules:
    return MississippiStudRules.model_validate(
        {
            "chapter": "655a",
            "three_card_bonus_paytable": "A",
            "six_card_bonus_paytable": "C",
            "progressive_paytable": "C",
            "progressive_wager_cents": 100,
        }
    )


def linked_table(decks: list[list[str]] | None = None) -> PureTable:
    engine = RoundEngine(MississippiStudSpec(), linked_rules(), "automated_shoe")
    engine.link = "mega-link"
    t = PureTable(engine, TableState("t1"), decks or [])
    perfect = t.perfect_devices

    def answer(c: DeviceCommand) -> list[Input]:
        return [] if isinstance(c, ShowLink | SendLink) else perfect(c)

    t.answer = answer
    t.feed(OpenTable())
    return t


def phase(t: PureTable) -> Phase:
    return t.state.phase  # read afresh: each feed moves it on


def leased(t: PureTable) -> None:
    t.feed(LinkLease(True, levels=LEVELS))


def hits_round(t: PureTable) -> None:
    leased(t)
    for seat in (1, 3):
        t.wager(seat, "ante", 500)
        t.wager(seat, "progressive", 100)
    t.press("no_more_bets")
    t.feed(LinkAnswered("contribute:t1-r000001", True, new=2))
    for street in ("street_3", "street_4", "street_5"):
        for seat in (1, 3):
            t.wager(seat, street, 500)
