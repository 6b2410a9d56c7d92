"""The table's readable log renders every chapter's events, and a payload it does not know never stops it.

Events come from real journaled rounds: a Let It Ride table with both progressives played through the engine
(tests/engine harness is not needed: the demo's journal of one seeded round is replayed here).
"""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path

import pytest

from controller.core.events import JournaledEvent
from controller.shell.console import Console, describe
from controller.store.reader import JournalReader

REPO = Path(__file__).resolve().parents[2]


def _event(type_: str, payload: dict[str, object], sealed: dict[str, object] | None = None) -> JournaledEvent:
    return JournaledEvent(
        seq=1,
        event_id="e1",
        boot_id="b",
        ts="2026-11-21T08:00:00.000000Z",
        table_id="t",
        round_id="t-r000001",
        type=type_,
        rule="643a.11(b)",
        payload=payload,
        sealed=sealed,
    )


def test_let_it_ride_decisions_and_settlement_read_as_the_table_plays() -> None:
    assert (
        describe(
            _event(
                "decision.requested",
                {"decision": "bet_1", "kind": "ride_or_withdraw", "seat": 3, "spot": "bet_1", "street": "Bet Number 1"},
            )
        )
        == "seat 3  Bet Number 1: let it ride or take it back?"
    )
    assert (
        describe(_event("bet.withdrawn", {"amount": 5000, "bet": "bet_2", "decision": "bet_2", "seat": 6}))
        == "seat 6  Bet Number 2 $50.00 taken back"
    )
    settled = {
        "cards": ["As", "Js", "Ad"],
        "community": ["8h", "3s"],
        "hand": "pair_of_tens_or_better",
        "payout_limited": False,
        "seat": 7,
        "wagers": [
            {
                "amount": 5000,
                "collected": 0,
                "odds": None,
                "outcome": "withdrawn",
                "paid": 0,
                "returned": 5000,
                "wager": "bet_1",
            },
            {
                "amount": 5000,
                "collected": 0,
                "odds": "1 to 1",
                "outcome": "win",
                "paid": 5000,
                "returned": 5000,
                "wager": "bet_3",
            },
        ],
    }
    # The stake is what rode: the withdrawn bet is named, not counted.
    assert describe(_event("hand.settled", settled)) == (
        "seat 7  A♠ J♠ A♦ + 8♥ 3♠  pair of tens or better: wins $50.00 at 1 to 1 on $50.00 (Bet Number 1 taken back)"
    )


def test_a_payload_it_does_not_know_is_shown_plainly_and_the_log_goes_on() -> None:
    out = io.StringIO()
    console = Console(asyncio.Queue(), out)
    console.write(_event("decision.requested", {"seat": 2, "street": "Somewhere"}))  # no allowed amounts
    console.write(_event("round.completed", {"round_no": 1, "paid": 0, "collected": 100, "table_result": 100}))
    lines = out.getvalue().splitlines()
    assert "decision.requested" in lines[0] and "not shown in full: KeyError" in lines[0]
    assert "round 1 complete: paid $0.00, collected $1.00, table +$1.00" in lines[1]


def test_the_let_it_ride_progressive_demo_logs_every_round_to_its_end(tmp_path: Path) -> None:
    """The real demo on configs/let-it-ride-progressive.toml (both progressives), broker unreachable: the log
    reaches each round's end and the meters after it."""
    journal = tmp_path / "lir.sqlite"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "demo",
            "--config",
            str(REPO / "configs/let-it-ride-progressive.toml"),
            "--rounds",
            "2",
            "--pace",
            "0",
            "--seed",
            "5",
            "--journal",
            str(journal),
            "--broker",
            "mqtt://127.0.0.1:9",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    log = done.stdout
    assert log.count(" complete: paid ") == 2
    assert log.count("  meters: three_card_progressive $") == 2 and "five_card_progressive $" in log
    assert "let it ride or take it back?" in log
    with JournalReader(journal) as reader:
        assert reader.verify().ok


def test_a_blocked_table_says_why_and_who_cleared_it() -> None:
    """A table that plays no round must say so: the demo used to sit silent on a deck due for a change (.3(c))."""
    reasons = {"deck_change_due": "deck A in play 8 hours: a new deck must be verified"}
    assert describe(_event("table.blocked", {"reasons": reasons})) == (
        "TABLE BLOCKED: deck A in play 8 hours: a new deck must be verified"
    )
    assert describe(_event("deck.verified", {"decks": ["A"], "by": "floorperson", "note": None})) == (
        "new deck A verified by the floorperson"
    )
    cleared: dict[str, object] = {"block": "deck_change_due", "by": "floorperson", "remaining": {}}
    assert describe(_event("table.block_cleared", cleared)) == "block cleared (floorperson): deck change due"


@pytest.mark.parametrize(("played", "line"), [(1, "1 round so far"), (3, "3 rounds so far"), (0, "0 rounds so far")])
def test_the_closing_line_counts_its_rounds_in_words(played: int, line: str) -> None:
    assert describe(_event("table.closed", {"rounds_played": played})) == f"table closed ({line} at this table)"


def test_a_linked_hit_reads_with_the_meter_the_link_left() -> None:
    """A linked table's progressive.hit says the link's meter after the award and its reseed (`meter_after`); one from
    a link older than the field has none and read as a KeyError line ("not shown in full") instead of the jackpot."""
    hit: dict[str, object] = {"hit": "t-r000001-h1", "seat": 3, "level": "mega", "percent": 100, "amount": 5_000_385}
    hit |= {"meter_before": 5_000_385, "link": "mega", "order": 7}
    assert describe(_event("progressive.hit", {**hit, "meter_after": 350})) == (
        "JACKPOT seat 3  100% of the mega meter = $50,003.85 (meter $50,003.85 -> $3.50); awaiting a floorperson's "
        "validation (t-r000001-h1)"
    )
    assert describe(_event("progressive.hit", hit)) == (
        "JACKPOT seat 3  100% of the mega meter = $50,003.85 (meter $50,003.85 -> reseeded at the link); awaiting a "
        "floorperson's validation (t-r000001-h1)"
    )


def test_a_close_says_who_asked_and_a_stop_at_once_what_the_next_start_does() -> None:
    closing = describe(_event("table.closing", {"after_round": 4, "by": "interrupt"}))
    assert closing == "table closing after round 4, asked by interrupt"
    stop = {"by": "SIGTERM", "phase": "betting", "round_no": 4, "policy": "reopen_betting", "what": "betting reopens"}
    assert describe(_event("table.stopped", stop)) == (
        "TABLE STOPPED at once (SIGTERM) in betting, round 4 left in play; at the next start: betting reopens"
    )


def test_a_table_reopened_with_a_device_out_of_order_says_what_it_deals_by() -> None:
    base = {"game": "Mississippi Stud", "chapter": "655a", "seats": 6}
    assert describe(_event("table.opened", {**base, "dealing_method": "hand", "out_of_order": {}})) == (
        "table open: Mississippi Stud (chapter 655a), 6 seats"
    )
    covered = {"shuffler": "manual shuffle and cut, dealing by manual_shoe"}
    fallback = describe(_event("table.opened", {**base, "dealing_method": "manual_shoe", "out_of_order": covered}))
    assert fallback == (
        "table open: Mississippi Stud (chapter 655a), 6 seats; out of order: shuffler; dealing by manual_shoe"
    )
    both = {**covered, "shoe": "no other dealing method"}
    none = describe(_event("table.opened", {**base, "dealing_method": None, "out_of_order": both}))
    assert none == (
        "table open: Mississippi Stud (chapter 655a), 6 seats; out of order: shoe, shuffler; NO DEALING METHOD "
        "usable (no_method)"
    )


async def test_a_stop_at_once_is_shown_though_the_log_is_stopped_right_after_it() -> None:
    """The runner journals `table.stopped` and cancels the display in the same turn of the loop (`tablectl run
    --live-log`, the demo): the line still queued is written as the log stops; before, the terminal never showed it."""
    out = io.StringIO()
    queue: asyncio.Queue[JournaledEvent] = asyncio.Queue()
    task = asyncio.create_task(Console(queue, out).run())
    await asyncio.sleep(0)  # the log waits for its next event, as it does between a table's steps
    stop = {"by": "SIGTERM", "phase": "decision", "round_no": 4, "policy": "resume_decisions", "what": "asked again"}
    queue.put_nowait(_event("table.stopped", stop))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert "TABLE STOPPED at once (SIGTERM) in decision, round 4 left in play; at the next start: asked again" in (
        out.getvalue()
    )


def test_a_restart_says_what_it_recovered_and_which_stop_it_follows() -> None:
    """The terminal of a table started again said nothing of the recovery: the journal's `table.recovered` (and the
    stop it follows, `after_stop`) is the first thing the operator who restarted it needs to read."""
    what = "every card is recorded: the seat whose turn it was is asked again"
    base: dict[str, object] = {"phase": "decision", "policy": "resume_decisions", "round_no": 4, "what": what}
    assert describe(_event("table.recovered", {**base, "after_stop": {"seq": 281, "by": "SIGTERM"}})) == (
        f"table recovered in decision, round 4 (resume_decisions) after the stop at seq 281 (SIGTERM): {what}"
    )
    closed: dict[str, object] = {
        "phase": "closed",
        "policy": "open_as_usual",
        "round_no": None,
        "what": "opens as usual",
    }
    assert describe(_event("table.recovered", closed)) == "table recovered in closed (open_as_usual): opens as usual"


def test_a_device_marked_out_of_order_or_held_says_what_the_table_deals_by() -> None:
    """A signed mark, a mark said again at a restart, its end, and a device held unusable each changed how the
    table deals, yet the terminal showed none of them."""
    mark: dict[str, object] = {"device": "shuffler", "reason": "covered", "takes_over": "manual shuffle and cut"}
    assert describe(_event("device.out_of_order", {**mark, "dealing_method": "automated_shoe", "decks": None})) == (
        "DEVICE OUT OF ORDER: shuffler (covered); manual shuffle and cut takes over, dealing by automated_shoe"
    )
    again = {**mark, "dealing_method": None, "restored": True}
    assert describe(_event("device.out_of_order", again)) == (
        "DEVICE OUT OF ORDER: shuffler (covered; said again at the restart); manual shuffle and cut takes over, "
        "NO DEALING METHOD usable (no_method)"
    )
    back = describe(_event("device.back_in_service", {"device": "shuffler", "dealing_method": "automated_shoe"}))
    assert back == "device shuffler back in service; dealing by automated_shoe"
    held: dict[str, object] = {
        "device": "shoe",
        "reason": "jam",
        "phase": "betting",
        "remedy": "clear the shoe and restart it",
    }
    assert describe(_event("device.unusable", held)) == "DEVICE UNUSABLE: shoe (jam); clear the shoe and restart it"


def test_a_restart_of_a_table_closing_after_its_round_says_the_close_stands() -> None:
    """Found by user25: a table stopped while closing after its round stays closing at the restart, and the live log's
    line said nothing of it: the operator did not know the table would close after the round."""
    what = "every card is recorded: the seat whose turn it was is asked again"
    base: dict[str, object] = {"phase": "decision", "policy": "resume_decisions", "round_no": 4, "what": what}
    closing = {**base, "closing": {"by": "interrupt", "after_round": 4}, "after_stop": {"seq": 281, "by": "SIGTERM"}}
    assert describe(_event("table.recovered", closing)) == (
        f"table recovered in decision, round 4 (resume_decisions) after the stop at seq 281 (SIGTERM): {what}; "
        "STILL CLOSING after round 4 (asked by interrupt): the table closes when the round is complete"
    )
    unnamed = {**base, "closing": {"by": None, "after_round": 4}}
    assert describe(_event("table.recovered", unnamed)) == (
        f"table recovered in decision, round 4 (resume_decisions): {what}; "
        "STILL CLOSING after round 4: the table closes when the round is complete"
    )


def test_a_restart_with_no_more_bets_refused_says_the_refusal_and_what_lifts_it() -> None:
    """Found by remedy26: restarted in betting with "no more bets" refused (the shoe covered, no card order to deal
    from the hand), the live log said the policy and nothing of the refusal until the dealer pressed again."""
    what = "the wagers accepted stand; the stations are unlocked again and betting opens when they confirm"
    lifts = (
        "put the shoe back in service (655a.13(g); the deck is in it), or a floorperson directs a reshuffle (655a.5(a))"
    )
    pending = {"rule": "655a.9(a)(1)", "reason": "the cards cannot be dealt", "blocks": ["shuffle_order"]}
    p = {"phase": "betting", "policy": "reopen_betting", "round_no": 3, "what": what}
    refused = {**p, "no_more_bets_refused": {**pending, "remedy": lifts}}
    assert describe(_event("table.recovered", refused)) == (
        f'table recovered in betting, round 3 (reopen_betting): {what}; "NO MORE BETS" REFUSED (655a.9(a)(1)) until: '
        f"{lifts}"
    )
    assert describe(_event("table.recovered", p)) == f"table recovered in betting, round 3 (reopen_betting): {what}"


def test_a_back_in_service_refused_for_a_device_not_answering_says_why_since_when_and_what_to_do() -> None:
    """Found by remedy26: a covered shoe offline (or jammed) was put back in service and its round voided at the first
    dispense; now refused, the terminal says the reason, since when and the fix, and the restart says it too."""
    why = (
        "the shoe is offline (port gone) since 2026-11-28 10:41:07 UTC: reconnect it so that it identifies again, or "
        "leave it covered"
    )
    status = {"state": "offline", "reason": "offline (port gone)", "since": "2026-11-28T10:41:07+00:00"}
    refused: dict[str, object] = {
        "input": "back in service shoe",
        "reason": why,
        "phase": "betting",
        "device": "shoe",
        "status": status,
    }
    assert describe(_event("input.refused", refused)) == f"back in service shoe REFUSED in betting: {why}"
    mark: dict[str, object] = {"device": "shoe", "reason": "covered", "takes_over": "hand", "dealing_method": "hand"}
    again = {**mark, "restored": True, "not_in_service_until": why, "status": status}
    assert describe(_event("device.out_of_order", again)) == (
        f"DEVICE OUT OF ORDER: shoe (covered; said again at the restart; NOT BACK IN SERVICE until it answers: {why}); "
        "hand takes over, dealing by hand"
    )
