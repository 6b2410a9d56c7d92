"""The dealer panel's confirmation keys and keyed counts reach the same handling as Confirm/CountEntered
(655a.4(a), .5(c)(2), .5(f), .8(b), .8(f)-(h), .13(g)), and a bad keyed count is refused, never a crash."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any, Unpack

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.engine.inputs import Confirm, CountEntered, Input, MarkOutOfOrder, Tick
from controller.engine.spec import DealingMethod, TableOptions
from controller.engine.state import Phase
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.spec import MississippiStudSpec
from drivers.interfaces import BUTTONS, ButtonPressed, CountKeyed, DeviceFault
from tests.engine.conftest import OptionChanges, PureTable, table_with

T0 = datetime(2025, 3, 1, 18, 0, tzinfo=UTC)
RULES = MississippiStudRules.model_validate({"chapter": "655a", "three_card_bonus_paytable": "A"})


class Counted(MississippiStudSpec):
    def counted_wagers(self, rules: MississippiStudRules) -> dict[str, str | None]:
        return {"three_card_bonus": "655a.8(b)"}


def make(
    method: DealingMethod = "automated_shoe",
    spec: MississippiStudSpec | None = None,
    **opts: Unpack[OptionChanges],
) -> PureTable:
    return table_with(spec or MississippiStudSpec(), RULES, method, options=TableOptions(**opts), start=Tick(T0))


def same_events(t: PureTable, key: Input, direct: Input) -> list[tuple[str, str | None, dict[str, Any]]]:
    """Feed `key` to the table and `direct` to a copy of it: both must journal the same events."""
    twin = copy.deepcopy(t)
    by_key = [(e.type, e.rule, dict(e.payload)) for e in t.feed(key)]
    by_direct = [(e.type, e.rule, dict(e.payload)) for e in twin.feed(direct)]
    assert by_key == by_direct
    assert t.state == twin.state
    return by_key


def test_the_new_buttons_are_on_the_panel() -> None:
    assert {"inspected", "shuffled", "misdeal", "no_misdeal"} <= set(BUTTONS)


def test_inspected_key_is_the_dealers_inspection_at_opening() -> None:
    t = make(cards_preinspected=False)
    assert t.state.phase is Phase.OPENING
    out = same_events(t, ButtonPressed("dealer_panel", "inspected"), Confirm("dealer", "cards_inspected"))
    assert out[0][:2] == ("cards.inspected", "655a.4(a)") and out[0][2]["by"] == "dealer"
    assert t.state.phase is Phase.OPENING  # the floorperson still verifies (signed command)
    t.feed(Confirm("floorperson", "cards_inspected"))
    # mypy keeps the phase narrowed by the assert above across the inputs fed since (python/mypy#17537)
    assert t.state.phase is Phase.BETTING  # type: ignore[comparison-overlap]


def test_shuffled_key_before_and_after_the_shuffler_is_marked_out_of_order() -> None:
    t = make("hand", fallback_dealing_method="manual_shoe")
    t.feed(DeviceFault("shuffler", code="malfunction"))
    refused = same_events(t, ButtonPressed("dealer_panel", "shuffled"), Confirm("dealer", "shuffled"))
    assert [(ty, rule) for ty, rule, _ in refused] == [("input.refused", "655a.13(g)")]
    t.feed(MarkOutOfOrder("shuffler"))
    assert t.events[-1].type == "shuffle.started" and t.events[-1].payload["device"] == "manual"
    done = same_events(t, ButtonPressed("dealer_panel", "shuffled"), Confirm("dealer", "shuffled"))
    assert done[0][:2] == ("shuffle.completed", "655a.5(c)(2)") and done[0][2]["cut"] == "655a.5(d)"
    assert t.state.phase is Phase.BETTING


def stub_count_due() -> PureTable:
    t = make(shuffler_counts=False, stub_count_every=1)
    t.wager(1, "ante", 500)
    t.press("no_more_bets")
    assert t.state.phase is Phase.STUB_COUNT
    return t


def test_keyed_stub_count_and_misdeal_keys() -> None:
    t = stub_count_due()
    twin = copy.deepcopy(t)
    ok = same_events(twin, CountKeyed("dealer_panel", "stub", 47), CountEntered("stub", 47))
    assert ok[0][:2] == ("stub.counted", "655a.10(e)")  # an automated shoe's stub (.10(e))
    for key in ("misdeal", "no_misdeal"):
        t2 = copy.deepcopy(t)
        miss = same_events(t2, CountKeyed("dealer_panel", "stub", 45), CountEntered("stub", 45))
        assert [(ty, rule) for ty, rule, _ in miss] == [("stub_count.mismatch", "655a.10(f)")]
        ruled = same_events(t2, ButtonPressed("dealer_panel", key), Confirm("dealer", key))
        voided = [p for ty, _, p in ruled if ty == "round.voided"]
        assert voided and voided[0]["returned"] == {"1": {"ante": 500}}
        assert ("deck.removed" in [ty for ty, _, _ in ruled]) is (key == "no_misdeal")


def test_misdeal_key_when_no_stub_count_awaits_is_ignored() -> None:
    t = make()
    assert t.types(t.press("misdeal")) == ["input.ignored"]


def test_keyed_chip_count_reconciles() -> None:
    t = make(spec=Counted())
    t.wager(1, "ante", 500)
    t.wager(1, "three_card_bonus", 100)
    t.press("no_more_bets")
    assert t.state.phase is Phase.RECONCILING
    out = same_events(t, CountKeyed("dealer_panel", "chips", 1), CountEntered("chips", 1))
    assert out[0][:2] == ("chip_count.reconciled", "655a.8(b)")


def test_bad_keyed_counts_are_refused_with_a_reason() -> None:
    t = stub_count_due()
    before = t.state
    for what, count, rule in (
        ("stub", -1, "655a.10(d)"),
        ("stub", 46.5, "655a.10(d)"),
        ("stub", True, "655a.10(d)"),
        ("chips", "7", "655a.8(b)"),
        ("cards", 47, None),
    ):
        out = t.feed(CountKeyed("dealer_panel", what, count))  # type: ignore[arg-type]  # bad on purpose
        assert [(e.type, e.rule) for e in out] == [("input.refused", rule)], (what, count)
        assert "dealer_panel" in out[0].payload["input"] and out[0].payload["reason"]
    assert t.state.phase is Phase.STUB_COUNT and t.state.round == before.round  # nothing counted
    assert t.types(t.feed(CountKeyed("dealer_panel", "stub", 47)))[0] == "stub.counted"


@settings(max_examples=150, deadline=None)
@given(
    what=st.one_of(st.sampled_from(["chips", "stub"]), st.text(max_size=8)),
    count=st.one_of(
        st.integers(-(10**6), 10**6), st.floats(allow_nan=True), st.booleans(), st.text(max_size=4), st.none()
    ),
)
def test_any_keyed_count_is_counted_or_refused(what: str, count: int | float | str | None) -> None:
    t = stub_count_due()
    # Any value on purpose, as a driver might report it: what is not a count is refused.
    out = t.feed(CountKeyed("dealer_panel", what, count))  # type: ignore[arg-type]
    valid = what in ("chips", "stub") and type(count) is int and count >= 0
    if not valid:
        assert [e.type for e in out] == ["input.refused"]
    elif what == "stub":
        assert out[0].type in ("stub.counted", "stub_count.mismatch")
        assert (out[0].type == "stub.counted") is (count == 47)
    else:
        assert [e.type for e in out] == ["input.ignored"]  # no chip count is awaited
