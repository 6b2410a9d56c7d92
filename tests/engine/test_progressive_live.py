"""Progressive meters in the live engine (issue 7 items 3, 4): contributions at the lock-out, hits paid at each
player's turn and held for a floorperson's validation, a void's exact reversal, the lock-out while the sign is
away. Pure engine, scripted decks (the e2e tests run the same through the daemon and a real broker)."""

from __future__ import annotations

from typing import TypedDict

from controller.engine.commands import LightSeat, ShowWin
from controller.engine.inputs import Signed, ValidateJackpot
from controller.engine.state import Phase
from controller.progressive.model import MICRO
from drivers.interfaces import DeviceOffline, DeviceOnline, FaceUpCard
from tests.engine.conftest import Deck, MakeTable, PureTable


class ProgressiveRules(TypedDict):
    progressive_paytable: str
    progressive_wager_cents: int


# Paytable C (655a.12(c)(1), (3)) on a $1 Progressive Payout Wager: mega $10,000, major $1,000, minor $250.
RULES: ProgressiveRules = {"progressive_paytable": "C", "progressive_wager_cents": 100}
# Seats 1 and 3 both make a straight flush in hearts with the community 9h Th Jh: two major hits in one round.
SEAT1, SEAT3 = ["Qh", "Kh"], ["7h", "8h"]
COMMUNITY = ["9h", "Th", "Jh"]


def signed(inp: ValidateJackpot) -> Signed:
    return Signed(inp, f"cmd-{inp.hit}", "validate_jackpot", inp.key_id, inp.role)


def two_major_hits(make_table: MakeTable, deck: Deck) -> PureTable:
    t = make_table([deck([*SEAT1, *SEAT3, *COMMUNITY])], **RULES)
    for seat in (1, 3):
        t.wager(seat, "ante", 500)
        t.wager(seat, "progressive", 100)
    t.press("no_more_bets")
    for street in ("street_3", "street_4", "street_5"):
        for seat in (1, 3):
            t.wager(seat, street, 500)
    return t


def test_seeded_at_open_once(make_table: MakeTable) -> None:
    t = make_table(**RULES)
    seeded = [e for e in t.events if e.type == "meter.seeded"]
    assert {e.payload["level"]: e.payload["seed_cents"] for e in seeded} == {
        "mega": 1_000_000,
        "major": 100_000,
        "minor": 25_000,
    }
    assert all(e.rule == "655a.12(c)(3) paytable C" for e in seeded)


def test_two_hits_of_one_level_are_paid_in_turn_and_held_for_validation(make_table: MakeTable, deck: Deck) -> None:
    t = two_major_hits(make_table, deck)
    # Each $1 wager put 7 % into the major meter at the lock-out (655a.8(b)): 14 cents on $1,000.
    contributed = [e for e in t.events if e.type == "meter.contributed" and e.payload["level"] == "major"]
    assert [(e.payload["seat"], e.payload["delta"]["display_micro"]) for e in contributed] == [
        (1, 7 * MICRO),
        (3, 7 * MICRO),
    ]
    hits = [e for e in t.events if e.type == "progressive.hit"]
    # Counterclockwise from the dealer's right: seat 3 first takes the whole meter, then seat 1 the reseed.
    assert [(e.payload["seat"], e.payload["level"], e.payload["amount"], e.rule) for e in hits] == [
        (3, "major", 100_014, "655a.11(i)(1)(iii)"),
        (1, "major", 100_000, "655a.11(i)(1)(iii)"),
    ]
    settled = {e.payload["seat"]: e.payload for e in t.events if e.type == "progressive.settled"}
    assert settled[3]["paid"] + settled[3]["returned"] == 100_014
    assert settled[1]["paid"] + settled[1]["returned"] == 100_000
    assert t.state.phase is Phase.JACKPOT and "jackpot" in t.state.blocks
    assert "round.completed" not in t.types()
    lights = [(c.verb, c.seat) for c in t.commands if isinstance(c, LightSeat) and c.on]
    assert lights == [("light_on", 3), ("light_on", 1)]
    wins = [(c.level, c.amount_cents, c.seat) for c in t.commands if isinstance(c, ShowWin)]
    assert wins == [("major", 100_014, 3), ("major", 100_000, 1)]

    first, second = (e.payload["hit"] for e in hits)
    out = t.feed(signed(ValidateJackpot(3, "major", first, "floor-ann", "floorperson")))
    assert [e.type for e in out] == ["command.accepted", "progressive.validated", "progressive.paid"]
    assert out[2].payload["amount"] == 100_014
    assert t.state.phase is Phase.JACKPOT
    out = t.feed(signed(ValidateJackpot(1, "major", second, "floor-ann", "floorperson")))
    types = [e.type for e in out]
    assert types[:5] == [
        "command.accepted",
        "progressive.validated",
        "progressive.paid",
        "table.block_cleared",
        "round.completed",
    ]
    assert "jackpot" not in t.state.blocks
    assert t.state.meters is not None and t.state.meters.balance_problems() == []
    assert t.state.meters.level("major").display_cents == 100_000


def test_validation_refusals_name_the_reason(make_table: MakeTable, deck: Deck) -> None:
    t = two_major_hits(make_table, deck)
    hit = next(e for e in t.events if e.type == "progressive.hit").payload["hit"]
    out = t.feed(signed(ValidateJackpot(3, "major", hit, "dealer-bob", "dealer")))
    assert out[-1].type == "input.refused" and "may not validate" in out[-1].payload["reason"]
    out = t.feed(signed(ValidateJackpot(3, "major", "t1-r000001-h9", "floor-ann", "floorperson")))
    assert out[-1].type == "input.refused" and "no jackpot 't1-r000001-h9'" in out[-1].payload["reason"]
    out = t.feed(signed(ValidateJackpot(1, "mega", hit, "floor-ann", "floorperson")))
    assert out[-1].type == "input.refused" and "seat 3's major" in out[-1].payload["reason"]
    t.feed(signed(ValidateJackpot(3, "major", hit, "floor-ann", "floorperson")))
    again = t.feed(signed(ValidateJackpot(3, "major", hit, "floor-ann", "floorperson")))
    assert again[-1].type == "input.refused", "a hit is paid once"
    assert sum(1 for e in t.events if e.type == "progressive.paid") == 1


def test_void_reverses_contributions_exactly(make_table: MakeTable, deck: Deck) -> None:
    """Two cards found face up in the shoe void the round (655a.13(a)), and the meters take back its contributions
    exactly."""
    t = make_table([deck([*SEAT1, *SEAT3, *COMMUNITY])], method="manual_shoe", **RULES)
    before = t.state.meters
    t.wager(1, "ante", 500)
    t.wager(1, "progressive", 100)
    t.wager(2, "ante", 500)
    t.wager(2, "progressive", 100)
    t.press("no_more_bets")
    assert t.state.meters != before
    for _ in range(2):  # two cards found face up: the round is void (655a.13(a))
        card, t.shoe = t.shoe[0], t.shoe[1:]
        t.feed(FaceUpCard("shoe", card=card))
    assert "round.voided" in t.types()
    reversed_ = [e for e in t.events if e.type == "meter.contributions_reversed"]
    assert {e.payload["level"] for e in reversed_} == {"mega", "major", "minor"}
    after = t.state.meters
    assert after is not None and before is not None
    for level in ("mega", "major", "minor"):
        a, b = after.level(level), before.level(level)
        assert (a.display_micro, a.reserve_micro, a.overflow_micro, a.contributed_micro) == (
            b.display_micro,
            b.reserve_micro,
            b.overflow_micro,
            b.contributed_micro,
        )
        assert a.reversed_count == 2 and a.reversed_cents == 200


def test_sign_offline_locks_out_progressive_wagers_only(make_table: MakeTable) -> None:
    """655a.2(c): the progressive table game system's lock-out keeps Progressive Payout Wagers from being recognised
    (655a.8(b)) while the system cannot show its meters; the other wagers go on."""
    t = make_table(**RULES)
    out = t.feed(DeviceOffline("progressive_sign", reason="unplugged"))
    assert [e.type for e in out][-1] == "progressive.locked_out"
    assert out[-1].rule == "655a.8(b)"
    rejected = t.wager(1, "progressive", 100)
    assert rejected[0].type == "wager.rejected" and "locked out" in rejected[0].payload["reason"]
    assert t.wager(1, "ante", 500)[0].type == "wager.accepted", "the rest of the game goes on"
    out = t.feed(DeviceOnline("progressive_sign"))
    assert "progressive.unlocked" in [e.type for e in out]
    assert t.wager(1, "progressive", 100)[0].type == "wager.accepted"
