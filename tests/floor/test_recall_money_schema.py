"""The recall's money fields follow the events' schema: every payload field an event carries is either an amount the
recall shows in dollars (floor/recall.py `is_money`: `MONEY_FIELDS` or a name ending `_cents`) or named below as not
one, and `MONEY_FIELDS` names no field that exists nowhere.

Event payloads have no typed model (controller/mqtt/contract.py's TableEvent holds `payload: dict`); their schema is
docs/events.md's payload columns and what the controller emits. Both are read here: the documented fields from the
doc, and the emitted ones from the source (every string key of a dict literal in a `ctx.emit(...)` call's payload,
nested ones too, and of the account ledger's payloads, controller/accounts/ledger.py). A new field in either fails
the first test until it is classified: added to MONEY_FIELDS (an amount in cents) or to NOT_MONEY here.
Before, `link.contribution_sent`'s `cents` (the contributions' sum) printed in raw cents.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from floor.recall import MONEY_FIELDS, is_money

ROOT = Path(__file__).resolve().parents[2]

# Payload fields that are not an amount in cents, by kind. The recall prints them as they are.
NOT_MONEY = frozenset(
    {
        # seats, players, counts, ordinals, sequence numbers
        *("seat", "seats", "player", "players", "round_no", "rounds_played", "rounds_since_count", "seq", "index"),
        "players_left",  # round.voided: the seats whose player left (.7(b))
        *("count", "counts", "card_count", "deck_total", "in_count", "hits", "order", "new", "duplicates", "multiple"),
        *("entered", "accepted", "expected", "recount", "idle_minutes", "hours", "cycle", "decks", "allowed"),
        *("attempt", "limit", "failed_shuffles_limit"),  # shuffle.failed: failures in a row, and the table's limit
        # a meter's counters in micro-cents (docs/progressive.md), inside a meter event's `delta`: not cents
        *("contributed_micro", "display_micro", "house_funded_micro", "overflow_micro", "removed_micro"),
        "reserve_micro",
        # containers: their own fields are classified by name
        *("wagers", "totals", "contributions", "delta", "record", "pending", "identity", "blocks", "remaining"),
        "after_stop",  # table.recovered: the stop on purpose it follows ({seq, by})
        "closing",  # table.recovered: a close asked before the restart that still stands ({by, after_round})
        "no_more_bets_refused",  # table.recovered: the refusal pending ({rule, reason, blocks, remedy})
        "out_of_order",  # table.opened: each device still marked out of order -> what took over (.13(g))
        *("bonuses", "reasons", "rules", "stations", "terminals", "terminals_unreachable", "wagers_offered"),
        "fault",  # device.unusable restored at a restart: the fault kept with the state (code, detail, since, round_no)
        "still_held",  # device.fault_cleared: the fault codes the device has not said cleared
        # input.refused of a back_in_service, device.out_of_order restored: a covered device's latest report (back26)
        *("status", "state", "faults", "restarted", "not_in_service_until"),
        "stored_fault",  # device.fault_cleared: the sign's fault stored by older software, lifted with this clear
        "meters_at_turn",  # round.recorded: the link's meter at each winner's turn, keyed "<seat>:<level>"
        "meters_after_turn",  # round.recorded: the link's meter after each winner's award, keyed "<seat>:<level>"
        # cards and hands
        *("cards", "community", "bonus_cards", "card", "hand", "deck", "deck_in", "cards_preinspected", "magic_card"),
        "lucky_seat",
        # names, ids, rules, words
        *("about", "after", "after_round", "asset_number", "authorised_by", "bet", "block", "by", "chapter", "code"),
        *("cleared", "command_id", "cut", "dealing_method", "decision", "decks_rule", "detail", "device", "device_id"),
        *("documentation", "documented_by", "error", "floorperson", "game", "hit", "input", "inspection_rule", "key"),
        *("key_id", "level", "light_rule", "link", "medium", "note", "odds", "outcome", "paid_by", "paid_from"),
        *("payout_limit_rule", "paytable", "percent", "phase", "published", "reason", "reissued", "remedy"),
        *("request", "role", "round", "since", "spot", "stand_in", "street", "table_id", "takes_over", "terminal"),
        *("then", "this_round", "tilt", "to", "verb", "wager", "was", "when"),
        # flags
        *("acknowledged", "awaiting", "closes", "on", "optional_wagers_pending", "payout_limited", "restored"),
        # values the doc quotes beside a field (a medium, a wager, a verb, a phase, a role): not fields
        *("attendant", "buy_in", "cash", "cash_out", "chips", "ticket", "five_card_hand_bonus", "magic_card_bonus"),
        *("lucky_bonus", "bind_player", "validate_jackpot", "cash_out_account", "claiming", "jackpot", "dealer"),
        *("proceed", "void", "chip_count"),
        *("acknowledge_tilt", "clear_tilt", "mark_out_of_order", "back_in_service", "dealt", "misdeal", "no_misdeal"),
        *("shoe", "shuffler", "house", "fault_cleared"),
        # table.recovered: the policy, what it does, the claims awaited; the rule a row names
        *("policy", "what", "claims", "rule"),
        "ledger_seq",
        # the controller's own events: software, supervision, the journal, resends
        *("digest", "manifest", "manifest_digest", "release", "files", "missing", "mismatched", "verdict", "refused"),
        *("require_verified", "required", "task", "escalated", "failures_in_window", "restart_in_seconds", "problem"),
        *("journal", "extra", "resend", "from_seq", "to_seq"),
    }
)

_FIELD = re.compile(r"`([a-z][a-z0-9_]*)`")


def documented() -> set[str]:
    """The field names in docs/events.md's payload columns, and the account events' balances and totals (given in
    the prose above their table)."""
    names: set[str] = set()
    text = (ROOT / "docs" / "events.md").read_text()
    for line in text.splitlines():
        cells = line.strip().strip("|").split("|")
        if line.startswith("| `") and len(cells) >= 2:
            names |= set(_FIELD.findall("|".join(cells[1:])))  # the type's cell names the event, not a field
    accounts = text[text.index("Every movement of a game account") :]
    names |= set(_FIELD.findall(accounts[: accounts.index("\n\n")]))
    return names - {"null"}


def _keys(node: ast.AST) -> set[str]:
    return {
        k.value
        for d in ast.walk(node)
        if isinstance(d, ast.Dict)
        for k in d.keys
        if isinstance(k, ast.Constant) and isinstance(k.value, str)
    }


@functools.cache
def _calls() -> tuple[ast.Call, ...]:
    """Every call in the controller's source, parsed once for the module's tests (some 0.5 s a parse of it all)."""
    return tuple(
        node
        for path in sorted((ROOT / "controller").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call)
    )


def emitted() -> set[str]:
    """Every string key of a dict literal in an `emit(...)` call's arguments past the type and rule, across the
    controller; and every key of the account ledger's payloads."""
    names: set[str] = set()
    for call in _calls():
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
        if name == "emit":
            for arg in [*call.args[2:], *(k.value for k in call.keywords)]:
                names |= _keys(arg)
    names |= _keys(ast.parse((ROOT / "controller" / "accounts" / "ledger.py").read_text()))
    return names


def documented_by_type() -> dict[str, set[str]]:
    """docs/events.md's rows: every type named in a row's first cell -> the fields its other cells name."""
    rows: dict[str, set[str]] = {}
    for line in (ROOT / "docs" / "events.md").read_text().splitlines():
        cells = line.strip().strip("|").split("|")
        if line.startswith("| `") and len(cells) >= 2:
            for type_ in re.findall(r"`([a-z_]+\.[a-z_.]+)`", cells[0]):
                rows.setdefault(type_, set()).update(_FIELD.findall("|".join(cells[1:])))
    return rows


def emitted_by(type_: str) -> set[str]:
    """Every string key of the payloads the controller emits as `type_` (a literal type)."""
    names: set[str] = set()
    for call in _calls():
        if isinstance(call.func, ast.Attribute) and call.func.attr == "emit" and call.args:
            first = call.args[0]
            if isinstance(first, ast.Constant) and first.value == type_:
                for arg in [*call.args[2:], *(k.value for k in call.keywords)]:
                    names |= _keys(arg)
    return names


# Events whose fields were once only in prose (docs/engine.md, docs/scenarios.md) or left out of their row: every
# field they carry is named in their own row now, so a field added to them fails here until documented.
@pytest.mark.parametrize(
    "type_",
    [
        *("chip_count.requested", "chip_count.reconciled", "chip_count.mismatch", "chip_count.resolved"),
        "link.contribution_sent",
        *("device.unusable", "device.fault_cleared"),
    ],
)
def test_these_events_rows_name_every_field_they_carry(type_: str) -> None:
    carried = emitted_by(type_)
    assert carried, f"no emit of {type_} found: the reader above is looking in the wrong place"
    row = documented_by_type().get(type_)
    assert row is not None, f"{type_} has no row in docs/events.md"
    assert sorted(carried - row) == [], f"{type_}'s row in docs/events.md does not name these fields it carries"


def test_every_payload_field_is_money_or_named_as_not() -> None:
    fields = documented() | emitted()
    unclassified = sorted(f for f in fields if not is_money(f) and f not in NOT_MONEY)
    assert unclassified == [], (
        f"payload fields neither in floor/recall.py MONEY_FIELDS (or named *_cents) nor in NOT_MONEY here: "
        f"{unclassified}; an amount in cents goes in MONEY_FIELDS (the recall shows it in dollars), anything else "
        "in NOT_MONEY"
    )
    both = sorted(f for f in NOT_MONEY if is_money(f))
    assert both == [], f"named both money and not: {both}"


def test_money_fields_name_only_fields_that_exist() -> None:
    fields = documented() | emitted()
    assert sorted(MONEY_FIELDS - fields) == [], "MONEY_FIELDS names fields no event carries or documents"
    assert sorted(NOT_MONEY - fields) == [], "NOT_MONEY names fields no event carries or documents"


def test_the_schema_is_read_at_all() -> None:
    # The readers above must find the fields they are about, or the tests above pass on nothing.
    assert {"ante_min", "balance_before", "bought_in", "meter_before_cents", "paid_by"} <= documented()
    assert {"amount", "balance", "cents", "collected", "meter_before"} <= emitted()


def test_a_link_contributions_sum_reads_in_dollars() -> None:
    from controller.core.money import fmt
    from floor.recall import summarize

    line = summarize("link.contribution_sent", {"key": "contribute:t1-r4", "cents": 1_234, "contributions": []})
    assert f"cents={fmt(1_234)}" in line and "cents=1234" not in line, line
