"""A chapter 684a round through the pure engine, dealt from an automated dealing shoe (684a.10): order of events,
citations, the layout and the amounts. The rules are the example Rules Submission in configs/chapter-684a.toml.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from pathlib import Path

import pytest

from controller.core.events import DomainEvent
from controller.engine.commands import DispenseStack
from controller.engine.spec import DealingMethod
from controller.games.chapter_684a.rules import Chapter684aRules
from controller.games.chapter_684a.spec import Chapter684aSpec
from tests.engine.conftest import ChapterTable, Deck, PureTable, sealed

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "chapter-684a.toml"
COMPLETE = "684a (not available: completion of the round; settled per the Rules Submission, 601a.2)"

# 684a.10(b): a stack of five to seats 2, 4 and 7 clockwise from the dealer's left, then the dealer's stack; a
# player placed an All-Six Bonus Wager, so the next stack's top card is the All-Six Bonus card, the rest burned.
SEAT2 = ["Kh", "Kd", "3s", "3c", "9h"]
SEAT4 = ["2h", "5h", "8h", "Jh", "Qh"]
SEAT7 = ["4c", "6s", "7d", "Tc", "2s"]
DEALER = ["As", "Kc", "9s", "6c", "3d"]
ALL_SIX, BURNED = "Ks", ["2c", "4d", "5s", "7c"]
ORDER = [*SEAT2, *SEAT4, *SEAT7, *DEALER, ALL_SIX, *BURNED]


def rules(**override: object) -> Chapter684aRules:
    with CONFIG.open("rb") as f:
        game = tomllib.load(f)["game"]
    return Chapter684aRules.model_validate({**game, **override})


def table(
    chapter_table: ChapterTable,
    decks: Sequence[Sequence[str]] = (),
    method: DealingMethod = "automated_shoe",
    **override: object,
) -> PureTable:
    return chapter_table(Chapter684aSpec(), rules(**override), method, decks)


def play_scripted_round(chapter_table: ChapterTable, deck: Deck) -> PureTable:
    t = table(chapter_table, [deck(ORDER)])
    t.wager(2, "ante", 500)
    t.wager(2, "odds", 500)
    t.wager(2, "all_six", 100)
    t.wager(4, "ante", 1000)
    t.wager(4, "odds", 1000)
    t.wager(4, "prime", 100)
    t.wager(6, "ante", 500)  # no Odds Wager: returned at "no more bets" (684a.10(b))
    t.wager(7, "ante", 500)
    t.wager(7, "odds", 500)
    t.press("no_more_bets")
    t.wager(2, "raise", 750)  # one and a half Antes: not a multiple the rules allow (raise_multiples = [1, 2, 3])
    t.wager(2, "raise", 1000)
    t.wager(4, "raise", 2000)
    t.press("fold")  # seat 7
    return t


def round_events(t: PureTable) -> list[DomainEvent]:
    return [e for e in t.events if e.round_id == "t1-r000001"]


def test_full_round_event_order_and_rules(chapter_table: ChapterTable, deck: Deck) -> None:
    t = play_scripted_round(chapter_table, deck)
    assert [(e.type, e.rule, e.payload.get("seat")) for e in round_events(t)] == [
        ("betting.opened", "684a.1", None),
        ("wager.accepted", "684a.1", 2),
        ("wager.accepted", "684a.1", 2),
        ("wager.accepted", "684a.1", 2),
        ("wager.accepted", "684a.1", 4),
        ("wager.accepted", "684a.1", 4),
        ("wager.accepted", "684a.1", 4),
        ("wager.accepted", "684a.1", 6),
        ("wager.accepted", "684a.1", 7),
        ("wager.accepted", "684a.1", 7),
        ("wager.returned", "684a.1", 6),
        ("no_more_bets", "684a.10(a)(2)", None),
        ("lockout.confirmed", "684a.10(a)(2)", None),
        ("deal.started", "684a.10(b)", None),
        ("cards.dealt", "684a.10(b)", 2),
        ("cards.dealt", "684a.10(b)", 4),
        ("cards.dealt", "684a.10(b)", 7),
        ("dealer.dealt", "684a.10(b)", None),
        ("all_six_bonus.dealt", "684a.10(b)", None),
        ("burn.dealt", "684a.10(b)", None),
        ("stub.discarded", "684a.10(c)", None),
        ("decision.requested", "684a.1", 2),
        ("wager.rejected", "684a.1", 2),
        ("street_wager.placed", "684a.1", 2),
        ("decision.requested", "684a.1", 4),
        ("street_wager.placed", "684a.1", 4),
        ("decision.requested", "684a.1", 7),
        ("seat.folded", "684a.1", 7),
        # Counterclockwise from the dealer's right; seat 7's Ante and Odds went at the fold.
        ("hand.settled", "684a.1", 4),
        ("prime.settled", "684a.1", 4),
        ("hand.settled", "684a.1", 2),
        ("all_six.settled", "684a.1", 2),
        ("round.recorded", COMPLETE, None),
        ("round.completed", COMPLETE, None),
    ]
    returned = next(e for e in round_events(t) if e.type == "wager.returned")
    assert "no Odds Wager at this seat" in returned.payload["reason"]


def test_layout_stacks_and_the_all_six_card(chapter_table: ChapterTable, deck: Deck) -> None:
    t = play_scripted_round(chapter_table, deck)
    ev = {(e.type, e.payload.get("seat")): e for e in round_events(t)}
    assert [sealed(ev[("cards.dealt", n)])["cards"] for n in (2, 4, 7)] == [SEAT2, SEAT4, SEAT7]
    assert sealed(ev[("dealer.dealt", None)])["cards"] == DEALER
    # 684a.10(b): the top card of the stack after the dealer's to the All-Six Bonus area, the other four burned.
    assert (ev[("all_six_bonus.dealt", None)].payload, ev[("all_six_bonus.dealt", None)].sealed) == (
        {"count": 1},
        {"cards": [ALL_SIX]},
    )
    assert (ev[("burn.dealt", None)].payload, ev[("burn.dealt", None)].sealed) == ({"count": 4}, {"cards": BURNED})
    assert ev[("stub.discarded", None)].payload == {"count": 52 - 25}
    assert ev[("round.completed", None)].payload["areas"] == {
        "dealer": DEALER,
        "all_six_bonus": [ALL_SIX],
        "burn": BURNED,
    }
    dispensed = [c.cards for c in t.commands if isinstance(c, DispenseStack)]
    assert dispensed == [5] * 5 and [c.verb for c in t.commands].count("remove_stub") == 1


def test_no_card_identity_in_public_payload_before_settlement(chapter_table: ChapterTable, deck: Deck) -> None:
    t = play_scripted_round(chapter_table, deck)
    events = round_events(t)
    first = next(i for i, e in enumerate(events) if e.type.endswith(".settled"))
    for e in events[:first]:
        assert not any(c in str(e.payload) for c in ORDER), e


def test_full_round_amounts(chapter_table: ChapterTable, deck: Deck) -> None:
    """A fold collects the Ante and Odds Wagers at once (684a.1 "Fold")."""
    t = play_scripted_round(chapter_table, deck)
    by = {(e.type, e.payload.get("seat")): e.payload for e in round_events(t)}
    # The dealer's A-K high qualifies (dealer_qualifies). Seat 4's flush beats it: Ante and Raise 1 to 1, the
    # Odds Wager 5 to 1 for a flush; all five red, so Prime pays 18 to 1.
    seat4 = by[("hand.settled", 4)]
    assert seat4["hand"] == "flush"
    assert [(w["wager"], w["amount"], w["outcome"], w["paid"]) for w in seat4["wagers"]] == [
        ("ante", 1000, "win", 1000),
        ("odds", 1000, "win", 5000),
        ("raise", 2000, "win", 2000),
    ]
    assert (by[("prime.settled", 4)]["hand"], by[("prime.settled", 4)]["paid"]) == ("red", 1800)
    # Seat 2's two pair beats it too: Odds 2 to 1; with the All-Six Bonus card Ks, K-K-K-3-3 is a full house.
    seat2 = by[("hand.settled", 2)]
    assert [(w["wager"], w["paid"]) for w in seat2["wagers"]] == [("ante", 500), ("odds", 1000), ("raise", 1000)]
    all_six = by[("all_six.settled", 2)]
    assert (all_six["hand"], all_six["odds"], all_six["paid"]) == ("full_house", "20 to 1", 2000)
    # Seat 7 folded: its Ante and Odds Wagers are collected at once (684a.1 "Fold").
    assert by[("seat.folded", 7)]["collected"] == {"ante": 500, "odds": 500}
    done = by[("round.completed", None)]
    assert (done["paid"], done["collected"]) == (8000 + 1800 + 2500 + 2000, 1000)


def test_raise_must_be_an_allowed_multiple_of_the_ante(chapter_table: ChapterTable) -> None:
    t = table(chapter_table, raise_multiples=[1, 3])
    t.wager(3, "ante", 500)
    t.wager(3, "odds", 500)
    t.press("no_more_bets")
    assert t.events[-1].payload["allowed"] == [500, 1500]
    bad = t.wager(3, "raise", 1000)
    assert [(e.type, e.rule) for e in bad] == [("wager.rejected", "684a.1")]
    assert bad[0].payload["reason"] == "must be one of $5.00, $15.00"
    placed = t.wager(3, "raise", 1500)
    assert (placed[0].type, placed[0].payload["multiple"]) == ("street_wager.placed", 3)


def test_a_fold_collects_ante_and_odds(chapter_table: ChapterTable) -> None:
    t = table(chapter_table)
    t.wager(1, "ante", 500)
    t.wager(1, "odds", 300)
    t.press("no_more_bets")
    folded = t.press("fold")[:3]
    assert [(e.type, e.rule) for e in folded] == [
        ("seat.folded", "684a.1"),
        ("round.recorded", COMPLETE),
        ("round.completed", COMPLETE),
    ]
    assert folded[0].payload["collected"] == {"ante": 500, "odds": 300}
    assert (folded[2].payload["paid"], folded[2].payload["collected"]) == (0, 800)


def test_no_all_six_wager_no_all_six_stack(chapter_table: ChapterTable) -> None:
    t = table(chapter_table)
    t.wager(1, "ante", 500)
    t.wager(1, "odds", 500)
    t.wager(1, "prime", 100)
    t.press("no_more_bets")
    assert [c.cards for c in t.commands if isinstance(c, DispenseStack)] == [5, 5]
    assert next(e for e in t.events if e.type == "stub.discarded").payload == {"count": 52 - 10}
    assert "all_six_bonus.dealt" not in t.types()


@pytest.mark.parametrize("method", ["manual_shoe", "hand"])
def test_unpublished_dealing_methods_are_refused(chapter_table: ChapterTable, method: DealingMethod) -> None:
    spec = Chapter684aSpec()
    with pytest.raises(ValueError, match=r"are not available, only 684a\.10 .* \"automated_shoe\""):
        spec.require_method(method)
    with pytest.raises(ValueError, match=r"684a\.10"):
        spec.plan(rules(), method, [1], {1: {"ante": 500, "odds": 500}})


def test_offers_follow_the_rules() -> None:
    spec = Chapter684aSpec(limits={"odds": (500, 5000)})
    offers = {o.spot: (o.rule, o.min_cents, o.max_cents) for o in spec.offers(rules())}
    assert list(offers) == ["ante", "odds", "prime", "all_six"]  # the Four Card Bonus is refused by the rules
    assert offers["odds"] == ("684a.1", 500, 5000)
    bare = rules(prime_paytable=None, prime_hand=None, all_six_paytable=None, all_six_hand=None)
    assert [o.spot for o in spec.offers(bare)] == ["ante", "odds"]


def test_citations_never_name_an_unpublished_subsection() -> None:
    c = Chapter684aSpec.citations
    assert all(rule.startswith("684a") for rule in c.values())
    assert [c[k] for k in ("10(a)(2)", "10(d)", "7(c)", "13(c)")] == [
        "684a.10(a)(2)",
        "684a.10(d)",
        "684a.10(a)(2)",
        "684a.10(f)",
    ]
    for key in ("13(a)", "13(d)", "13(f)", "13(g)", "7(b)", "8(f)", "9(a)(3)", "4(a)"):
        assert c.get(key) == f"684a (not available: the step other chapters cite as .{key})"
