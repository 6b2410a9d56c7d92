"""Properties of any Mississippi Stud round, over random decks, wagers (valid or not) and decisions."""

from __future__ import annotations

import json
import re
from typing import TypedDict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.core.cards import STANDARD_DECK
from controller.core.events import DomainEvent
from tests.engine.conftest import MakeTable

SPOT_AMOUNTS = {
    "ante": st.sampled_from([0, 300, 500, 1000, 2500, 10_000, 20_000]),  # 300 and 20,000 are outside the limits
    "three_card_bonus": st.sampled_from([100, 500, 5000]),  # 5,000 is above the limit
    "six_card_bonus": st.sampled_from([100, 2500]),
}
seat_wagers = st.fixed_dictionaries({}, optional={spot: amt for spot, amt in SPOT_AMOUNTS.items()})


class Round(TypedDict):
    """One round as `rounds` draws it."""

    deck: list[str]
    wagers: dict[int, dict[str, int]]  # seat: {spot: cents}
    decisions: dict[tuple[int, int], int]  # (seat, street index): choice


rounds = st.fixed_dictionaries(
    {
        "deck": st.permutations(STANDARD_DECK),
        "wagers": st.dictionaries(st.integers(1, 6), seat_wagers, max_size=6),
        # per (seat, street index): 0 folds, 1-3 bets that multiple, 4 first tries an illegal amount then bets 1x
        "decisions": st.dictionaries(st.tuples(st.integers(1, 6), st.integers(0, 2)), st.integers(0, 4)),
    }
)
CARD = re.compile(r'"[2-9TJQKA][cdhs]"')
NON_GAME = ("device.", "table.closing", "table.closed", "input.ignored")


def play(make_table: MakeTable, r: Round) -> list[DomainEvent]:
    t = make_table([list(r["deck"])])
    for seat, wagers in sorted(r["wagers"].items()):
        for spot, amount in wagers.items():
            t.wager(seat, spot, amount)
    pending = t.press("no_more_bets")
    while True:
        asks = [e for e in pending if e.type == "decision.requested"]
        if not asks:
            break
        p = asks[-1].payload
        street = ("street_3", "street_4", "street_5").index(p["spot"])
        choice = r["decisions"].get((p["seat"], street), 1)
        if choice == 0:
            pending = t.press("fold")
        elif choice == 4:
            t.wager(p["seat"], p["spot"], p["allowed"][0] + 1)
            pending = t.wager(p["seat"], p["spot"], p["allowed"][0])
        else:
            pending = t.wager(p["seat"], p["spot"], p["allowed"][choice - 1])
    return [e for e in t.events if e.round_id == "t1-r000001"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(r=rounds)
def test_round_invariants(make_table: MakeTable, r: Round) -> None:
    """In any round the automated shoe deals, the lock-out is confirmed before the first card (655a.10(a)(2))."""
    events = play(make_table, r)
    types = [e.type for e in events]
    if "no_more_bets.refused" in types:
        assert "cards.dealt" not in types
        return
    # Lock-out before the first card (655a.10(a)(2)).
    assert types.index("lockout.confirmed") < types.index("cards.dealt")
    # Every game event cites a subsection of chapter 655a.
    assert all(e.rule and e.rule.startswith("655a.") for e in events if not e.type.startswith(NON_GAME))
    # All 52 cards are accounted for: stacks + Six Card Bonus cards + community cards + stub.
    dealt = sum(
        e.payload["count"]
        for e in events
        if e.type in ("cards.dealt", "six_card_bonus.dealt", "community.dealt", "stub.discarded")
    )
    assert dealt == 52
    # Each accepted wager (the last reading on its spot) is settled exactly once, as a win, push or loss,
    # and a wager after "no more bets" is never counted.
    accepted: dict[tuple[int, str], int] = {}
    for e in events:
        if e.type == "wager.accepted":
            accepted[(e.payload["seat"], e.payload["spot"])] = e.payload["amount"]
        elif e.type in ("wager.returned", "wager.withdrawn"):
            accepted.pop((e.payload["seat"], e.payload["spot"]), None)
    settled: dict[tuple[int, str], int] = {}
    paid = collected = 0
    for e in events:
        p = e.payload
        rows = []
        if e.type == "hand.settled":
            rows = p["wagers"]
        elif e.type in ("three_card_bonus.settled", "six_card_bonus.settled"):
            rows = [p]
        elif e.type == "seat.folded":
            rows = [
                {"wager": w, "amount": a, "paid": 0, "returned": 0, "collected": a} for w, a in p["collected"].items()
            ]
        for w in rows:
            key = (p["seat"], w["wager"])
            assert key not in settled, f"{key} settled twice"
            settled[key] = w["amount"]
            assert (w["returned"], w["collected"]) in ((w["amount"], 0), (0, w["amount"]))
            assert w["paid"] >= 0 and (w["paid"] == 0 or w["returned"] == w["amount"])
            paid += w["paid"]
            collected += w["collected"]
    assert {k: v for k, v in settled.items() if not k[1].startswith("street_")} == accepted
    done = events[-1]
    assert done.type == "round.completed"
    assert (done.payload["paid"], done.payload["collected"]) == (paid, collected)
    # No card identity in a public payload before the round's settlement.
    settling = (
        "hand.settled",
        "three_card_bonus.settled",
        "six_card_bonus.revealed",
        "round.recorded",
        "round.completed",
    )
    first = min(types.index(t) for t in settling if t in types)
    assert not any(CARD.search(json.dumps(dict(e.payload))) for e in events[:first])
