"""Every registered chapter (controller.games.registry.SPECS) at the pure table, as the fault matrix plays it: the
dealing methods its spec supports, the citation each step should carry (the partially published chapters' as their
specs give them), a table opened with two players, devices that answer one command otherwise, and a stub count
asked for. Shared by tests/engine/test_fault_matrix.py and test_cited_procedures.py, so that neither imports the
other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Unpack

from controller.core.events import DomainEvent
from controller.engine.commands import DeviceCommand
from controller.engine.inputs import Input, OpenTable
from controller.engine.round import RoundEngine
from controller.engine.spec import DealingMethod, TableOptions
from controller.engine.state import Phase, TableState
from controller.games.registry import SPECS
from tests.engine.conftest import OptionChanges, PureTable, enter_player, example_rules

ALL_METHODS: tuple[DealingMethod, ...] = ("automated_shoe", "manual_shoe", "hand")


def methods(chapter: str) -> tuple[DealingMethod, ...]:
    return tuple(getattr(SPECS[chapter], "supported_methods", ALL_METHODS))


def not_available(chapter: str, key: str) -> str:
    return f"{chapter} (not available: the step other chapters cite as .{key})"


# The citations of the partially published chapters, as their specs give them (three_card_prime_spec.py,
# chapter_684a_spec.py): a misdeal or a deck that is not whole voids the round under the dealing method's
# section; a step whose section is not published says so. Every other chapter cites <chapter>.<key>.
EXPECTED: dict[str, dict[str, str]] = {
    "679a": {
        "13(a)": not_available("679a", "13(a)"),
        "13(b)": not_available("679a", "13(b)"),
        "13(c)": "679a.9(f)",
        "13(e)": not_available("679a", "13(e)"),
        "13(g)": not_available("679a", "13(g)"),
        "5(b)": "679a.9(d)",
        "5(c)(2)": not_available("679a", "5(c)(2)"),
        "9(d)": "679a.9(d)",
        "9(e)": "679a.9(e)",
        "9(f)": "679a.9(f)",
    },
    "684a": {
        "13(a)": not_available("684a", "13(a)"),
        "13(c)": "684a.10(f)",
        "13(e)": not_available("684a", "13(e)"),
        "13(f)": not_available("684a", "13(f)"),
        "13(g)": not_available("684a", "13(g)"),
        "5(b)": "684a.10(d)",
        "5(c)(2)": not_available("684a", "5(c)(2)"),
        "10(d)": "684a.10(d)",
        "10(e)": "684a.10(e)",
        "10(f)": "684a.10(f)",
    },
}


# 683a letters its manual shoe's stub subsections one earlier than 643a and 655a (683a-cajun-stud.txt): the count is
# 683a.8(e), 52 present 683a.8(f), not 52 683a.8(g).
RENUMBERED: dict[str, dict[str, str]] = {"683a": {"8(f)": "683a.8(e)", "8(g)": "683a.8(f)", "8(h)": "683a.8(g)"}}


def cite(chapter: str, key: str) -> str:
    if chapter in EXPECTED:
        return EXPECTED[chapter][key]
    return RENUMBERED.get(chapter, {}).get(key, f"{chapter}.{key}")


def counting(chapter: str, **changes: Unpack[OptionChanges]) -> TableOptions:
    """The chapter's example table options with a shuffler that counts (unless `changes` say otherwise)."""
    options: OptionChanges = {"shuffler_counts": True, **changes}
    return replace(SPECS[chapter].options(example_rules(chapter)), **options)


def table(chapter: str, method: DealingMethod | None = None, options: TableOptions | None = None) -> PureTable:
    method = method or methods(chapter)[0]
    t = PureTable(
        RoundEngine(SPECS[chapter], example_rules(chapter), method, options or counting(chapter)), TableState("t1")
    )
    t.feed(OpenTable())
    enter_player(t, 1)
    enter_player(t, 2)
    return t


def on(t: PureTable, verb: str, answer: Callable[[DeviceCommand], list[Input]], times: int = 1) -> None:
    """Answer the next `times` commands with this verb differently; the rest as perfect devices do."""
    left = {"n": times}
    orig = t.answer

    def answer_(c: DeviceCommand) -> list[Input]:
        if c.verb == verb and left["n"] > 0:
            left["n"] -= 1
            return answer(c)
        return orig(c)

    t.answer = answer_


def remedy(events: list[DomainEvent], type_: str) -> DomainEvent:
    return next(e for e in events if e.type == type_)


def returned_everything(t: PureTable, void: DomainEvent) -> None:
    accepted: dict[str, dict[str, int]] = {}
    for e in t.events:
        if e.type == "wager.accepted" and e.round_id == void.round_id:
            accepted.setdefault(str(e.payload["seat"]), {})[e.payload["spot"]] = e.payload["amount"]
    assert void.payload["returned"] == accepted


STUB_SECTIONS = {
    "manual_shoe": ("8(f)", "8(g)", "8(h)"),
    "hand": ("9(d)", "9(e)", "9(f)"),
    "automated_shoe": ("10(d)", "10(e)", "10(f)"),
}


def stub_count_due(chapter: str, method: DealingMethod) -> PureTable:
    """A round dealt with a shuffler that does not count: the dealer is asked to count the stub."""
    t = table(chapter, method, counting(chapter, shuffler_counts=False, stub_count_every=1))
    t.press("no_more_bets")
    t.draw()
    if t.state.phase is Phase.DEALT:
        t.press("dealt")
    asked = remedy(t.events, "stub_count.requested")
    assert asked.rule == cite(chapter, STUB_SECTIONS[method][0]) and t.state.phase is Phase.STUB_COUNT
    return t
