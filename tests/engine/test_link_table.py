"""A linked table in the pure engine (docs/linked-progressives.md, "The table side"): the lease locks progressive
wagers out (605a.8, NY 9 NYCRR 5321.18 as the stand-in), the lock-out's contributions and each hit's claim go to the
outbox in the step's state, settlement waits at the winner's turn for the claim's answer, a void keeps what was
contributed, and a restart mid-claim sends the same claim again. The processes, the broker and the link controller
are tests/link/test_linked_tables.py's."""

from __future__ import annotations

from controller.engine.commands import SendLink, ShowLevels, ShowLink
from controller.engine.inputs import (
    LinkAnswered,
    LinkBroadcast,
    LinkLease,
    Recover,
    Signed,
    ValidateJackpot,
)
from controller.engine.progressive import LINK_RULE
from controller.engine.state import Phase
from controller.games.mississippi_stud.record import MississippiStudRound
from controller.games.mississippi_stud.settle import settle as settle_record
from controller.progressive.link import LinkJackpot
from controller.store import snapshot
from tests.engine.conftest import arranged_deck
from tests.engine.linked_table import (
    COMMUNITY,
    SEAT1,
    SEAT3,
    hits_round,
    leased,
    linked_rules,
    linked_table,
    phase,
)


def test_progressive_wagers_wait_for_the_lease_and_stop_when_it_lapses() -> None:
    t = linked_table()
    locked = [e for e in t.events if e.type == "progressive.locked_out"]
    assert [(e.rule, e.payload["reason"]) for e in locked] == [(LINK_RULE, "link down")]
    assert t.state.meters is None, "a linked table keeps no meters of its own"
    out = t.wager(1, "progressive", 100)
    assert out[-1].type == "wager.rejected" and "link down" in out[-1].payload["reason"]
    leased(t)
    assert t.types()[-2:] == ["link.up", "progressive.unlocked"]
    assert isinstance(t.commands[-1], ShowLink) and t.commands[-1].up
    assert t.wager(1, "progressive", 100)[-1].type == "wager.accepted"
    out = t.feed(LinkLease(False, "no answer from the link within the lease"))
    assert [e.type for e in out] == ["progressive.locked_out"]
    assert out[0].payload["detail"] == "no answer from the link within the lease" and out[0].rule == LINK_RULE
    sign = t.commands[-1]
    assert isinstance(sign, ShowLink) and not sign.up and "LINK DOWN" in sign.message
    assert t.feed(LinkLease(False, "still nothing")) == [], "a lapse is journaled once, not at every check"


def test_a_link_with_other_levels_keeps_the_table_locked_out() -> None:
    t = linked_table()
    t.feed(LinkLease(True, levels=("progressive",)))
    assert (
        "link" in t.state.progressive_lockout and "keeps levels ['progressive']" in t.state.progressive_lockout["link"]
    )
    assert t.wager(2, "progressive", 100)[-1].type == "wager.rejected"


def test_the_lockout_contributions_wait_in_the_outbox_until_acknowledged() -> None:
    t = linked_table()
    leased(t)
    for seat in (1, 2):
        t.wager(seat, "ante", 500)
    t.wager(1, "progressive", 100)
    t.wager(2, "progressive", 100)
    out = t.press("no_more_bets")
    sent = next(e for e in out if e.type == "link.contribution_sent")
    key = "contribute:t1-r000001"
    assert sent.payload["key"] == key and sent.rule == "655a.8(b)"
    assert sent.payload["contributions"] == [
        {"seat": 1, "wager": "progressive", "cents": 100},
        {"seat": 2, "wager": "progressive", "cents": 100},
    ]
    assert key in t.state.link_outbox and any(isinstance(c, SendLink) for c in t.commands)
    # The outbox is in the engine state, so in the journal's transaction: it survives a restart as it is.
    assert key in snapshot.decode(snapshot.encode(t.state)).link_outbox
    out = t.feed(LinkAnswered(key, True, new=2))
    assert [e.type for e in out] == ["link.contribution_acknowledged"] and key not in t.state.link_outbox
    assert t.feed(LinkAnswered(key, True, duplicates=2)) == [], "a second answer to a resend changes nothing"


def test_a_refusal_locks_progressive_play_and_keeps_the_request() -> None:
    t = linked_table()
    leased(t)
    t.wager(1, "ante", 500)
    t.wager(1, "progressive", 100)
    t.press("no_more_bets")
    key = "contribute:t1-r000001"
    out = t.feed(LinkAnswered(key, False, error="table 't1' is not on link mega-link"))
    assert [e.type for e in out] == ["link.refused"] and key in t.state.link_outbox
    assert "link_refused" in t.state.progressive_lockout
    assert t.feed(LinkAnswered(key, False, error="table 't1' is not on link mega-link")) == []


def test_hits_are_claimed_in_turn_and_paid_what_the_link_answered() -> None:
    t = linked_table([arranged_deck([*SEAT1, *SEAT3, *COMMUNITY])])
    t.feed(LinkBroadcast({"mega": 1_000_000, "major": 100_321, "minor": 25_000}))
    assert isinstance(t.commands[-1], ShowLevels) and t.commands[-1].levels["major"] == 100_321
    hits_round(t)
    # Counterclockwise from the dealer's right: seat 3's claim first, alone; settlement waits for its answer.
    assert t.state.phase is Phase.CLAIMING
    claims = [e for e in t.events if e.type == "link.claim_sent"]
    assert [(e.payload["seat"], e.payload["level"], e.payload["percent"]) for e in claims] == [(3, "major", 100)]
    assert claims[0].rule == "655a.11(i)(1)(iv)"  # the subsection that pays it, at that turn
    assert "progressive.settled" not in t.types() and "hand.settled" not in t.types()
    out = t.feed(
        LinkAnswered("claim:t1-r000001:3:major", True, amount_cents=100_321, order=41, meter_before_cents=100_321)
    )
    assert [e.type for e in out][-1] == "link.claim_sent" and out[-1].payload["seat"] == 1
    out = t.feed(
        LinkAnswered("claim:t1-r000001:1:major", True, amount_cents=100_000, order=43, meter_before_cents=100_000)
    )
    hits = [e for e in out if e.type == "progressive.hit"]
    assert [(e.payload["seat"], e.payload["amount"], e.payload["order"]) for e in hits] == [
        (3, 100_321, 41),
        (1, 100_000, 43),
    ]
    settled = {e.payload["seat"]: e.payload for e in out if e.type == "progressive.settled"}
    assert settled[3]["paid"] + settled[3]["returned"] == 100_321
    assert phase(t) is Phase.JACKPOT and not t.state.link_outbox
    for e in hits:
        t.feed(
            Signed(
                ValidateJackpot(e.payload["seat"], "major", e.payload["hit"], "floor-ann", "floorperson"),
                f"c-{e.payload['hit']}",
                "validate_jackpot",
                "floor-ann",
                "floorperson",
            )
        )
    paid = [e.payload["amount"] for e in t.events if e.type == "progressive.paid"]
    assert paid == [100_321, 100_000] and "round.completed" in t.types()
    # Each payment goes to the link from the outbox, journaled with it: the link's books close the hit (issue 15).
    reports = {k: (q.kind, q.seat, q.level, q.amount_cents, q.by) for k, q in t.state.link_outbox.items()}
    assert reports == {
        "paid:t1-r000001:3:major": ("paid", 3, "major", 100_321, "floor-ann"),
        "paid:t1-r000001:1:major": ("paid", 1, "major", 100_000, "floor-ann"),
    }
    sent = [e for e in t.events if e.type == "link.paid_sent"]
    assert [(e.payload["seat"], e.payload["amount"], e.rule) for e in sent] == [
        (3, 100_321, "655a.11(i)(1)(iv)"),
        (1, 100_000, "655a.11(i)(1)(iv)"),
    ]
    assert t.types().index("progressive.paid") < t.types().index("link.paid_sent")
    out = t.feed(LinkAnswered("paid:t1-r000001:3:major", True))
    assert [(e.type, e.payload["seat"]) for e in out] == [("link.paid_acknowledged", 3)]
    assert t.feed(LinkAnswered("paid:t1-r000001:3:major", True)) == [], "a second answer to a resend changes nothing"
    out = t.feed(LinkAnswered("paid:t1-r000001:1:major", False, error="no claimed major hit"))
    assert [e.type for e in out] == ["link.refused"] and "paid:t1-r000001:1:major" in t.state.link_outbox


def test_a_restart_mid_claim_sends_the_same_claim_again() -> None:
    t = linked_table([arranged_deck([*SEAT1, *SEAT3, *COMMUNITY])])
    hits_round(t)
    restored = snapshot.decode(snapshot.encode(t.state))
    t.state = restored
    out = t.feed(LinkLease(False, "the table started: awaiting the link's lease")) + t.feed(Recover())
    recovered = next(e for e in out if e.type == "table.recovered")
    assert recovered.payload["policy"] == "await_claim" and recovered.payload["claims"] == ["claim:t1-r000001:3:major"]
    assert isinstance(t.commands[-1], SendLink) or any(isinstance(c, SendLink) for c in t.commands[-12:])
    out = t.feed(
        LinkAnswered("claim:t1-r000001:3:major", True, amount_cents=100_014, order=7, meter_before_cents=100_014)
    )
    assert out[-1].type == "link.claim_sent" and out[-1].payload["seat"] == 1


def test_a_void_keeps_the_linked_contributions() -> None:
    t = linked_table([arranged_deck([*SEAT1, *SEAT3, *COMMUNITY])])
    leased(t)
    t.wager(1, "ante", 500)
    t.wager(1, "progressive", 100)
    t.press("no_more_bets")
    out = t.press("community_exposed")
    assert "round.voided" in [e.type for e in out]
    kept = next(e for e in out if e.type == "progressive.contributions_kept")
    assert kept.rule == LINK_RULE and kept.payload["wagers"] == {"1": {"progressive": 100}}
    assert kept.payload["acknowledged"] is False, "still in the outbox: it goes to the link all the same"
    assert "contribute:t1-r000001" in t.state.link_outbox


def test_every_linked_sign_shows_the_pending_jackpots() -> None:
    t = linked_table()
    leased(t)
    j = LinkJackpot("t2", "A-02", "mega", 1_000_123, 17)
    out = t.feed(LinkBroadcast({}, (j,)))
    assert [e.type for e in out] == ["link.jackpots_pending"]
    assert out[0].payload["pending"] == [
        {"table_id": "t2", "asset_number": "A-02", "level": "mega", "amount": 1_000_123}
    ]
    sign = t.commands[-1]
    assert isinstance(sign, ShowLink) and sign.pending == (("A-02", "mega", 1_000_123),)
    assert t.feed(LinkBroadcast({}, (j,))) == []


def test_the_archive_settles_a_linked_hit_again_to_the_links_amount() -> None:
    """The table last heard the major meter at $1,000.00, but the link's meter at each winner's turn held more: the
    hitting round's own contributions and another table's (655a.12(c)(4): the meter at that player's turn). The round
    record must carry the link's meter at each turn, so `tablectl settle` re-settles it to exactly what the link paid,
    and `progressive.settled` names the whole award and the link's meter, not the stale display (link19)."""
    t = linked_table([arranged_deck([*SEAT1, *SEAT3, *COMMUNITY])])
    t.feed(LinkBroadcast({"mega": 1_000_000, "major": 100_000, "minor": 25_000}))
    hits_round(t)
    t.feed(LinkAnswered("claim:t1-r000001:3:major", True, amount_cents=100_042, order=7, meter_before_cents=100_042))
    t.feed(LinkAnswered("claim:t1-r000001:1:major", True, amount_cents=100_021, order=9, meter_before_cents=100_021))
    recorded = next(e for e in t.events if e.type == "round.recorded").payload["record"]
    rows, _ = settle_record(linked_rules(), MississippiStudRound.model_validate(recorded))
    again = {x.seat: x.paid + x.returned for x in rows if x.wager == "progressive"}
    assert again == {3: 100_042, 1: 100_021}, "the archive must pay what the link paid at each turn"
    settled = {e.payload["seat"]: e.payload for e in t.events if e.type == "progressive.settled"}
    for seat, award in ((3, 100_042), (1, 100_021)):
        p = settled[seat]
        # A share of the meter is paid like "N for 1" odds (655a.12(c)(1)): the award includes the wager.
        assert (p["award"], p["paid"], p["returned"], p["collected"]) == (award, award - 100, 100, 0)
        assert f"major meter {award} at the link" in p["note"], p["note"]
    answered = [e.payload for e in t.events if e.type == "link.claim_answered"]
    assert [(a["amount"], a["wager"], a["wager_included"]) for a in answered] == [
        (100_042, 100, True),
        (100_021, 100, True),
    ]


def test_a_linked_hit_books_the_links_meter_after_the_award() -> None:
    """The link reseeds a 100 % hit from the reserve it put aside (more than the reseed amount, or above a $0 reseed):
    its answer says the meter it left (`meter_after_cents`), and the table's settlement, its record and `tablectl
    settle` show that meter, not the chapter's estimate from the table's figures (the reseed amount alone). A link
    older than the field answers without it: the table settles as before, with the estimate."""
    t = linked_table([arranged_deck([*SEAT1, *SEAT3, *COMMUNITY])])
    t.feed(LinkBroadcast({"mega": 1_000_000, "major": 100_000, "minor": 25_000}))
    hits_round(t)
    t.feed(
        LinkAnswered(
            "claim:t1-r000001:3:major",
            True,
            amount_cents=100_042,
            order=7,
            meter_before_cents=100_042,
            meter_after_cents=107_350,
        )
    )
    t.feed(LinkAnswered("claim:t1-r000001:1:major", True, amount_cents=107_371, order=9, meter_before_cents=107_371))
    answered = {e.payload["seat"]: e.payload for e in t.events if e.type == "link.claim_answered"}
    assert answered[3]["meter_after"] == 107_350 and "meter_after" not in answered[1]
    hits = {e.payload["seat"]: e.payload for e in t.events if e.type == "progressive.hit"}
    assert hits[3]["meter_after"] == 107_350 and "meter_after" not in hits[1], "the hit says the meter the link left"
    settled = {e.payload["seat"]: e.payload["note"] for e in t.events if e.type == "progressive.settled"}
    assert settled[3].endswith("major meter 100042 at the link -> 107350"), settled[3]
    estimate = settled[1].rsplit(" -> ", 1)[1]  # the old link's answer: the chapter's reseed amount, as before
    assert settled[1].startswith("major meter 107371 at the link -> ") and int(estimate) < 107_371, settled[1]
    recorded = next(e for e in t.events if e.type == "round.recorded").payload["record"]
    assert recorded["meters_after_turn"] == {"3:major": 107_350}
    rows, _ = settle_record(linked_rules(), MississippiStudRound.model_validate(recorded))
    again = {x.seat: x.note for x in rows if x.wager == "progressive"}
    assert again == settled, "the archive re-settles the round to the same meters"
