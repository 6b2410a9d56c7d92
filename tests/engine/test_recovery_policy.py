"""The policy a table stopped at once tells its journal (`table.stopped`, controller/engine/recovery.py `stopped`)
is the one its restart applies (`table.recovered`), in every phase: the real engine is driven into each phase by the
devices and people of the pure table (on the games and dealing methods that reach it), stopped, restored from its
stored form and recovered with the stop; the two events must agree on the policy, its description and the stop."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from controller.core.events import DomainEvent
from controller.engine.commands import DeviceCommand
from controller.engine.inputs import CloseTable, CountEntered, Input, MarkOutOfOrder, OpenTable, Recover, StopRecord
from controller.engine.recovery import stopped
from controller.engine.round import RoundEngine
from controller.engine.state import Phase, TableState
from controller.games.registry import SPECS
from controller.store import snapshot
from tests.engine.chapter_faults import counting, on, table
from tests.engine.conftest import PureTable, arranged_deck, decide_all, example_rules
from tests.engine.held_faults import counted_643a, jam_after_the_deal, quiet_table
from tests.engine.linked_table import COMMUNITY, SEAT1, SEAT3, hits_round, linked_table

STOP = StopRecord(seq=4711, by="SIGTERM")


def silent(c: DeviceCommand) -> list[Input]:
    return []  # the device never answers: the table waits where it is


def no_more_bets(t: PureTable) -> PureTable:
    t.press("no_more_bets")
    return t


def parked(t: PureTable, verb: str) -> PureTable:
    """ "No more bets" with the next `verb` command never answered; the devices answer again from then on."""
    answer = t.answer
    on(t, verb, silent)
    no_more_bets(t)
    t.answer = answer
    return t


def shuffling() -> PureTable:
    t = PureTable(RoundEngine(SPECS["655a"], example_rules("655a"), "automated_shoe"), TableState("t1"))
    on(t, "shuffle", silent)
    t.feed(OpenTable())
    t.answer = t.perfect_devices
    return t


def opening() -> PureTable:
    """The cards not preinspected (.4(e)): the opening inspection is awaited before the first shuffle."""
    options = replace(counting("655a"), cards_preinspected=False)
    t = PureTable(RoundEngine(SPECS["655a"], example_rules("655a"), "automated_shoe", options), TableState("t1"))
    t.feed(OpenTable())
    return t


def mismatch(t: PureTable) -> PureTable:
    """The dealer's count is one more than accepted: the floorperson's decision is awaited (and stands)."""
    assert t.state.round is not None
    t.feed(CountEntered("chips", t.state.round.chips_accepted + 1))
    return t


def drawn(t: PureTable) -> PureTable:
    """A manual shoe's round: "no more bets" and every card drawn."""
    no_more_bets(t)
    t.draw()
    return t


def stub_count() -> PureTable:
    options = replace(counting("655a"), shuffler_counts=False, stub_count_every=1)
    return no_more_bets(table("655a", "automated_shoe", options))


def jackpot() -> PureTable:
    t = table("643a", "automated_shoe")  # the standard order hits a progressive, whose validation holds the round
    decide_all(t, t.press("no_more_bets"))
    return t


def claiming() -> PureTable:
    t = linked_table([arranged_deck([*SEAT1, *SEAT3, *COMMUNITY])])
    hits_round(t)
    return t


def blocked() -> PureTable:
    return jam_after_the_deal("655a")[0]


# (id, the phase it reaches, how): every phase a round or a block can rest in, by game and dealing method. DEALING is
# a shoe's (automated or manual: `void` either way, under .13(f) or .13(c)); a round dealt from the hand goes from "no
# more bets" straight to DEALT in one step (controller/engine/dealing.py `start_dealing`): no policy differs by method.
CASES: list[tuple[str, Phase, Callable[[], PureTable]]] = [
    ("opening", Phase.OPENING, opening),
    ("blocked-shoe-jam", Phase.BLOCKED, blocked),
    ("shuffling", Phase.SHUFFLING, shuffling),
    ("betting-655a", Phase.BETTING, lambda: quiet_table("655a", "automated_shoe")),
    ("locking-655a-hand", Phase.LOCKING, lambda: parked(quiet_table("655a", "hand"), "lock")),
    ("reconciling-643a", Phase.RECONCILING, counted_643a),
    ("reconciling-643a-mismatch", Phase.RECONCILING, lambda: mismatch(counted_643a())),
    ("dealing-655a-automated", Phase.DEALING, lambda: parked(quiet_table("655a", "automated_shoe"), "dispense_stack")),
    ("dealing-684a-automated", Phase.DEALING, lambda: parked(quiet_table("684a", "automated_shoe"), "dispense_stack")),
    ("dealing-655a-manual", Phase.DEALING, lambda: no_more_bets(quiet_table("655a", "manual_shoe"))),
    ("dealing-683a-manual", Phase.DEALING, lambda: no_more_bets(quiet_table("683a", "manual_shoe"))),
    ("dealt-655a-hand", Phase.DEALT, lambda: no_more_bets(quiet_table("655a", "hand"))),
    ("dealt-679a-hand", Phase.DEALT, lambda: no_more_bets(quiet_table("679a", "hand"))),
    ("stub-count-655a", Phase.STUB_COUNT, stub_count),
    ("decision-643a-manual", Phase.DECISION, lambda: drawn(quiet_table("643a", "manual_shoe"))),
    ("decision-655a-automated", Phase.DECISION, lambda: no_more_bets(quiet_table("655a", "automated_shoe"))),
    ("claiming-linked", Phase.CLAIMING, claiming),
    ("jackpot-643a", Phase.JACKPOT, jackpot),
]


def stop_and_restart(t: PureTable) -> tuple[DomainEvent, list[DomainEvent]]:
    """SIGTERM: `table.stopped` from the state as it is; the restart restores the stored form and recovers it."""
    stop = stopped(t.state, STOP.by)
    t.state = snapshot.decode(snapshot.encode(t.state))
    return stop, t.feed(Recover(STOP))


@pytest.mark.parametrize(("phase", "build"), [(p, b) for _, p, b in CASES], ids=[i for i, _, _ in CASES])
def test_the_stopped_tables_policy_is_the_one_its_restart_applies(phase: Phase, build: Callable[[], PureTable]) -> None:
    t = build()
    assert t.state.phase is phase
    stop, out = stop_and_restart(t)
    recovered = [e for e in out if e.type == "table.recovered"]
    assert [
        (e.payload["phase"], e.payload["policy"], e.payload["what"], e.payload["after_stop"]) for e in recovered
    ] == [(str(phase), stop.payload["policy"], stop.payload["what"], {"seq": STOP.seq, "by": STOP.by})]
    assert out[0] is recovered[0]  # the first event of the start, whatever the policy does next


def test_the_cases_reach_every_phase_but_closed() -> None:
    assert {p for _, p, _ in CASES} == set(Phase) - {Phase.CLOSED}


def test_a_table_stopped_on_a_chip_count_mismatch_says_the_floorpersons_decision_is_awaited() -> None:
    """Found here: a table stopped while the floorperson's decision on a mismatched chip count (.8(b)) was awaited
    told its journal `recount` ("the dealer's chip count is asked again"), but the restart asks no count: the decision
    stands and is still awaited. The stop and the restart now name what the restart does."""
    t = mismatch(counted_643a())
    stop, out = stop_and_restart(t)
    assert (stop.payload["policy"], stop.payload["what"]) == (
        "await_chip_decision",
        "no card is out: the stations are locked again; the floorperson's decision on the chip count mismatch "
        "stands and is awaited",
    )
    assert "chip_count.requested" not in [e.type for e in out]
    assert t.state.blocks.keys() >= {"chip_count"} and t.state.phase is Phase.RECONCILING


def closed(mark: str | None) -> PureTable:
    """A table closed between rounds (a close at once), the device `mark` covered first (.13(g))."""
    t = quiet_table("655a", "automated_shoe")
    if mark is not None:
        t.feed(MarkOutOfOrder(mark))
    t.feed(CloseTable(by="supervisor super-bob"))
    assert t.state.phase is Phase.CLOSED and (mark is None or mark in t.state.out_of_order)
    return t


@pytest.mark.parametrize("mark", ["shoe", None], ids=["marked", "plain"])
def test_a_closed_table_started_after_a_stop_names_it_then_opens_as_usual(mark: str | None) -> None:
    """A closed table's start used to say nothing of the stop it followed (the stop was lost for a table recovered for
    its marks, and a plain closed table was not recovered at all): it now begins with `table.recovered` naming the
    stop and the `table.stopped`'s policy, then says its marks again, and opens as usual."""
    t = closed(mark)
    stop, out = stop_and_restart(t)
    assert [(e.type, e.payload.get("policy"), e.payload.get("after_stop")) for e in out[:1]] == [
        ("table.recovered", "open_as_usual", {"seq": STOP.seq, "by": STOP.by})
    ]
    assert stop.payload["policy"] == "open_as_usual" and out[0].payload["what"] == stop.payload["what"]
    assert [e.payload["device"] for e in out if e.type == "device.out_of_order"] == ([mark] if mark else [])
    assert "table.opened" in t.types(t.feed(OpenTable())) and t.state.phase is not Phase.CLOSED


def test_a_closed_table_started_after_a_crash_is_not_said_recovered() -> None:
    """Without a stop (a kill -9) a closed table is recovered only for its marks, as before: no `table.recovered`."""
    t = closed("shoe")
    t.state = snapshot.decode(snapshot.encode(t.state))
    out = t.feed(Recover())
    assert [e.type for e in out] == ["device.out_of_order"]


# Every phase where a close waits for the round: a close asked in one is kept across a restart (docs/recovery.md).
ROUND_PHASES = {
    *(Phase.LOCKING, Phase.RECONCILING, Phase.DEALING, Phase.DEALT, Phase.STUB_COUNT, Phase.DECISION),
    *(Phase.CLAIMING, Phase.JACKPOT),
}


@pytest.mark.parametrize(("phase", "build"), [(p, b) for _, p, b in CASES], ids=[i for i, _, _ in CASES])
def test_a_close_pending_at_the_stop_is_said_by_the_restart(phase: Phase, build: Callable[[], PureTable]) -> None:
    """Found by user25: a table closing after its round (a first Ctrl-C), stopped and started again, stays closing, but
    its `table.recovered` did not say so; the operator learnt it only from a close_table reply. It now names the close
    (`closing`: who asked, after which round); a table that closed at once between rounds has none to name."""
    t = build()
    t.feed(CloseTable(by="interrupt"))
    assert t.state.closing is (phase in ROUND_PHASES)
    pending = t.state.closing
    number = t.state.round.number if t.state.round is not None else None
    _, out = stop_and_restart(t)
    recovered = [e.payload for e in out if e.type == "table.recovered"]
    assert [p.get("closing") for p in recovered] == [{"by": "interrupt", "after_round": number} if pending else None]


def test_a_close_without_a_name_is_said_pending_all_the_same() -> None:
    """The demo's people ask without a name, and older software stored none: the close is pending all the same."""
    t = no_more_bets(quiet_table("655a", "automated_shoe"))
    t.feed(CloseTable())
    assert t.state.round is not None
    _, out = stop_and_restart(t)
    assert out[0].payload["closing"] == {"by": None, "after_round": t.state.round.number}
