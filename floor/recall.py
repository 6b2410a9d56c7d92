"""Round recall (GLI-11's game recall, for a table game): a round's whole story from the archive.

Every archived event of the round in seq order, each with its rule, and gathered from them: the wagers at lock-out,
the decisions, the cards (published only from settlement on, so they come from the settlement events), each
settlement with its rule, irregularities and voids, and the meters' values as the round left them.

An archived payload is outside text (it came over MQTT, checked only as far as the contract's schema): an amount is
read as a JSON integer or a string of ASCII digits and nothing else. int() read "\u0661\u0662" as 12 and raised on
"12 cents", ending the recall in a traceback, and dict() took whatever the wagers held. A field that is not what it
should be is left out of what is gathered and named in `problems` (seq, type, field, value); the rest of the round is
recalled as usual.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from controller.cli.shown import shown
from controller.core.digits import is_ascii_digits
from controller.core.money import fmt
from floor.journals import journal_span
from floor.marks import MARK_EVENTS, mark_line, marks_text, note_marks
from floor.payload_text import fields_text, refusal_text
from floor.round_notes import NOTED, note_text

Conn = psycopg.Connection[tuple[Any, ...]]

IRREGULAR = ("card.", "deck.", "shuffle.failed", "round.voided", "wager.rejected", "tilt.", "table.blocked")
DECISIONS = ("street_wager.placed", "seat.folded", "bet.rides", "bet.withdrawn", "raise.", "play.")


@dataclass(frozen=True, slots=True)
class Line:
    seq: int
    ts: str
    type: str
    rule: str | None
    text: str


@dataclass
class RoundStory:
    round_id: str
    table_id: str
    gaming_day: str
    outcome: str  # completed, voided, in progress
    started: str
    ended: str
    wagers: dict[str, dict[str, int]] = field(default_factory=dict)
    settlements: list[dict[str, Any]] = field(default_factory=list)  # each with its seq, for `notes`' order
    # What befell the round besides its settlements, in words (floor/round_notes.py): seq, type, rule, text.
    notes: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    irregularities: list[dict[str, Any]] = field(default_factory=list)
    meters: dict[str, int] = field(default_factory=dict)
    lines: list[Line] = field(default_factory=list)
    table_result: int | None = None
    problems: list[str] = field(default_factory=list)  # archived fields that are not what they should be
    # The method the round was dealt by and the devices out of order then (655a.13(g)), device -> what took over: as
    # the round's `deal.started` says them (`dealt_by_said` "deal"). A table older than that event: as it last said
    # them by the round's end ("round end"), a mark made after the deal counting, though the cards were dealt before
    # it. None when the archive holds no word on the method.
    dealing_method: str | None = None
    out_of_order: dict[str, str | None] = field(default_factory=dict)
    dealt_by_said: str | None = None
    # Events under the round's id from an earlier journal of the table (a replaced PC's fresh journal counts rounds
    # from 1 again, floor/journals.py): left out of this round's story.
    earlier_journal: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# The payload fields that hold an amount in integer cents (docs/events.md), besides every field named `*_cents`. The
# recall showed only `*_cents` in dollars, so a betting.opened read `ante_min=500, ante_max=10000` where docs/floor.md
# promises dollars; `--json` keeps them all in cents. tests/floor/test_recall_money_schema.py holds it to the events'
# schema: every field the doc or the controller's emits name is here, named *_cents, or listed there as not money.
MONEY_FIELDS = frozenset(
    {
        "amount",
        "cents",  # link.contribution_sent: the contributions' sum
        "ante_min",
        "ante_max",
        "paid",
        "collected",
        "returned",
        "table_result",
        "won",
        "wagered",
        "held",
        "bought_in",
        "cashed_out",
        "balance",
        "balance_before",
        "meter_before",
        "meter_after",
        "award",  # progressive.settled: the whole share of the meter, the wager included
        "paid_besides_wager",  # link.claim_answered: its amount less the wager
    }
)


def is_money(field_name: str) -> bool:
    """Whether a payload field holds an amount in cents (shown in dollars)."""
    return field_name in MONEY_FIELDS or field_name.endswith("_cents")


def money_text(cents: object) -> str:
    """Dollars for an amount in cents as archived (cents_of), by the one formatter the reports use
    (controller.core.money.fmt); anything else shown as it is, never read as a number."""
    amount = cents_of(cents)
    return fmt(amount) if amount is not None else str(cents)


def summarize(type_: str, p: dict[str, Any]) -> str:
    """One line an operator reads: the event's gist, with amounts in dollars."""
    seat = f"seat {p['seat']}: " if "seat" in p else ""
    if type_.endswith(".settled") and "wagers" in p:
        parts = [
            f"{w['wager']} {money_text(w['amount'])} {w['outcome']} paid {money_text(w['paid'])}" for w in p["wagers"]
        ]
        return (
            f"{seat}{' '.join(p.get('cards', []))} | {' '.join(p.get('community', []))} {p.get('hand')}: "
            + "; ".join(parts)
        )
    if type_.endswith(".settled"):
        amount, paid = money_text(p.get("amount")), money_text(p.get("paid"))
        return f"{seat}{p.get('hand', '')} {amount} {p.get('outcome')} paid {paid}"
    if type_ == "device.out_of_order":
        return mark_line(p)
    if type_ == "wager.accepted":
        return f"{seat}{p.get('spot')} {money_text(p.get('amount'))}"
    if type_ == "no_more_bets":
        return "players at seats " + ", ".join(str(s) for s in p.get("players", []))
    if type_ == "round.completed":
        result = money_text(p.get("table_result"))
        return f"collected {money_text(p.get('collected'))}, paid {money_text(p.get('paid'))}, result {result}"
    if type_.startswith("meter.") and "meter_after_cents" in p:  # meter.round_closed has no amounts: it read None
        return (
            f"{p.get('level')}: {money_text(p.get('meter_before_cents'))} -> {money_text(p.get('meter_after_cents'))}"
        )
    if (refused := refusal_text(type_, p)) is not None:
        return refused
    return seat + fields_text(p, is_money, money_text)


_CENTS = re.compile(r"-?[0-9]{1,18}")  # 18 digits: more than any amount of a table, within a bigint


def cents_of(value: object) -> int | None:
    """An archived amount: a JSON integer, or a string of ASCII digits (a '-' first for a table's result); None for
    anything else (other scripts' digits, a float, a bool, spaces, words)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _CENTS.fullmatch(value):
        return int(value)
    return None


class _Reader:
    """Reads one row's payload for the story, noting each field that is not what it should be."""

    def __init__(self, story: RoundStory, seq: int, type_: str) -> None:
        self.story, self.where = story, f"seq {seq} {type_}"

    def bad(self, name: str, value: object, should: str) -> None:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
        self.story.problems.append(f"{self.where}: {name} {shown} is not {should}; left out")

    def cents(self, name: str, value: object) -> int | None:
        got = cents_of(value)
        if got is None:
            self.bad(name, value, "a whole number of cents (a JSON integer or ASCII digits)")
        return got

    def wagers(self, value: object) -> dict[str, dict[str, int]]:
        if not isinstance(value, dict):
            self.bad("wagers", value, "an object of seat to spots")
            return {}
        out: dict[str, dict[str, int]] = {}
        for seat, spots in value.items():
            if not isinstance(spots, dict):
                self.bad(f"wagers[{seat}]", spots, "an object of spot to cents")
                continue
            read = {str(spot): self.cents(f"wagers[{seat}][{spot}]", amount) for spot, amount in spots.items()}
            out[str(seat)] = {spot: amount for spot, amount in read.items() if amount is not None}
        return out


def summary_or_problem(type_: str, p: dict[str, Any]) -> tuple[str, str | None]:
    """summarize(), or None and what is wrong when the payload is not shaped as its type's: a table's payload is
    outside text, and the recall and the console's live log go on past one that is not."""
    try:
        return summarize(type_, p), None
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as err:
        return "", f"what a {type_} holds ({type(err).__name__}: {err})"


def _summary(reader: _Reader, type_: str, p: dict[str, Any]) -> str:
    text, problem = summary_or_problem(type_, p)
    if problem is None:
        return text
    reader.bad("payload", p, problem)
    return "(payload not as expected: see problems)"


def _story(round_id: str, rows: list[tuple[Any, ...]]) -> RoundStory:
    first, last = rows[0], rows[-1]
    story = RoundStory(round_id, first[1], str(first[0]), "in progress", first[3], last[3])
    for _day, _table, seq, ts, type_, rule, payload in rows:
        reader = _Reader(story, seq, type_)
        if not isinstance(payload, dict):
            reader.bad("payload", payload, "a JSON object")
            payload = {}
        p: dict[str, Any] = payload
        story.lines.append(Line(seq, ts, type_, rule, _summary(reader, type_, p)))
        _gather(story, reader, type_, rule, p)
        if type_ in NOTED:
            story.notes.append({"seq": seq, "type": type_, "rule": rule, "text": note_text(type_, p)})
        elif type_.endswith(".settled"):
            story.settlements[-1]["seq"] = seq
    return story


def _gather(story: RoundStory, reader: _Reader, type_: str, rule: str | None, p: dict[str, Any]) -> None:
    if type_ == "no_more_bets":
        story.wagers = reader.wagers(p.get("wagers", {}))
    elif type_.endswith(".settled"):
        story.settlements.append({"type": type_, "rule": rule, **p})
    elif type_.startswith(DECISIONS):
        story.decisions.append({"type": type_, "rule": rule, **p})
    elif type_.startswith(IRREGULAR):
        story.irregularities.append({"type": type_, "rule": rule, **p})
    if type_.startswith("meter.") and "meter_after_cents" in p:
        after = reader.cents("meter_after_cents", p["meter_after_cents"])
        if after is not None:
            story.meters[str(p.get("level"))] = after
    if type_ == "round.completed":
        story.outcome = "completed"
        if "table_result" in p:
            story.table_result = reader.cents("table_result", p["table_result"])
    elif type_ == "round.voided":
        story.outcome = "voided"
    elif type_ == "deal.started" and story.dealt_by_said is None:
        _deal_started(story, reader, p)


def _deal_started(story: RoundStory, reader: _Reader, p: dict[str, Any]) -> None:
    """The method and marks the round's cards were dealt under, as the table said them where the deal started."""
    method, marks = p.get("dealing_method"), p.get("out_of_order", {})
    if not isinstance(method, str):
        reader.bad("dealing_method", method, "a dealing method")
        return
    story.dealing_method, story.dealt_by_said = method, "deal"
    if isinstance(marks, dict):
        note_marks(story.out_of_order, "table.opened", {"out_of_order": marks})
    else:
        reader.bad("out_of_order", marks, "an object of device to what took over")


_SELECT = (
    "SELECT gaming_day, table_id, seq, ts_text, type, rule, payload, ts FROM events WHERE round_id = %s ORDER BY seq"
)


def recall_round(conn: Conn, round_id: str) -> RoundStory | None:
    rows = conn.execute(_SELECT, (round_id,)).fetchall()
    if not rows:
        return None
    # The round of that id in the latest journal holding one (by time: seq order mixes a fresh journal's with an old).
    start, end = journal_span(conn, str(rows[0][1]), max(r[-1] for r in rows))
    mine = [r[:-1] for r in rows if start is None or r[-1] >= start]
    story = _story(round_id, mine)
    story.earlier_journal = len(rows) - len(mine)
    if story.dealt_by_said is None:  # a table older than `deal.started`, or a round voided before its deal
        _dealt_by(conn, story, (mine[0][2], mine[-1][2]), (start, end))
    return story


# The table's words on its method and marks up to the round's end, from its last opening before the round on, in
# the round's journal (floor/journals.py): by seq alone, another journal's opening and marks were read as its own.
_IN_JOURNAL = (
    "ts >= coalesce(%(since)s, '-infinity'::timestamptz) AND ts < coalesce(%(until)s, 'infinity'::timestamptz)"
)
_SAID = (
    f"SELECT type, payload FROM events WHERE table_id = %(t)s AND seq <= %(last)s AND type IN {MARK_EVENTS!r} "
    f"AND {_IN_JOURNAL} AND seq >= coalesce((SELECT max(seq) FROM events WHERE table_id = %(t)s "
    f"AND type = 'table.opened' AND seq <= %(first)s AND {_IN_JOURNAL}), 0) ORDER BY seq"
)


def _dealt_by(conn: Conn, story: RoundStory, seqs: tuple[int, int], span: tuple[datetime | None, ...]) -> None:
    said = {"t": story.table_id, "first": seqs[0], "last": seqs[1], "since": span[0], "until": span[1]}
    for type_, payload in conn.execute(_SAID, said).fetchall():
        if not isinstance(payload, dict):
            continue
        if isinstance(payload.get("dealing_method"), str):
            story.dealing_method = payload["dealing_method"]
        note_marks(story.out_of_order, str(type_), payload)
    if story.dealing_method is not None or story.out_of_order:
        story.dealt_by_said = "round end"


def last_rounds(conn: Conn, table_id: str, n: int) -> list[RoundStory]:
    """The table's last n rounds, newest first."""
    ids = conn.execute(
        # By time: a fresh journal's rounds may have lower seqs than what the archive holds of an old one's.
        "SELECT round_id FROM events WHERE table_id = %s AND round_id IS NOT NULL GROUP BY round_id"
        " ORDER BY max(ts) DESC, max(seq) DESC LIMIT %s",
        (table_id, n),
    ).fetchall()
    return [s for (rid,) in ids if (s := recall_round(conn, str(rid))) is not None]


def _seat_order(key: str) -> tuple[int, int, str]:
    """Seats in number order, then any key that is not a seat in ASCII digits, as archived: a table's payload is
    outside text here, and int() raised on "\u00b2" (the recall ended in a traceback) and read "\u0661" as seat 1."""
    return (0, int(key), "") if is_ascii_digits(key) else (1, 0, key)


def render_round(s: RoundStory) -> str:
    out = [
        f"round {shown(s.round_id)}  table {shown(s.table_id)}  gaming day {s.gaming_day}  {shown(s.outcome)}",
        f"  from {shown(s.started)} to {shown(s.ended)}"
        + (f"; table result {money_text(s.table_result)}" if s.table_result is not None else ""),
    ]
    if s.dealing_method is not None or s.out_of_order:
        method = shown(s.dealing_method or "a method not on record")
        out.append(f"  dealt by {method}{said_when(s)}; out of order: {dealt_marks(s)}")
    if s.wagers:
        out.append("  wagers at lock-out:")
        for seat, spots in sorted(s.wagers.items(), key=lambda kv: _seat_order(kv[0])):
            out.append(f"    seat {shown(seat)}: " + ", ".join(f"{shown(k)} {money_text(v)}" for k, v in spots.items()))
    if s.irregularities:
        out.append(f"  irregularities: {len(s.irregularities)}")
    if s.earlier_journal:
        out.append(f"  {s.earlier_journal} events under this round id from an earlier journal of the table: left out")
    if s.problems:
        out.append(f"  archived fields not as they should be: {len(s.problems)}")
        out += [f"    {shown(problem)}" for problem in s.problems]
    if s.meters:
        out.append("  meters after the round: " + ", ".join(f"{shown(k)} {money_text(v)}" for k, v in s.meters.items()))
    out.append("  events:")
    for line in s.lines:
        rule = f" [{shown(line.rule)}]" if line.rule else ""
        out.append(f"    {line.seq:>7} {shown(line.ts)} {shown(line.type)}{rule} {shown(line.text)}")
    return "\n".join(out)


def said_when(s: RoundStory) -> str:
    """Nothing for a method the round's deal said; which word it is for one read from the round's end."""
    return (
        " (as the table said it by the round's end: no deal.started on record)"
        if s.dealt_by_said == "round end"
        else ""
    )


def dealt_marks(s: RoundStory) -> str:
    return shown(marks_text(s.out_of_order)) or "none"


def render_rounds(stories: list[RoundStory]) -> str:
    if not stories:
        return "no rounds of that table in the archive"
    out = []
    for s in stories:
        result = money_text(s.table_result) if s.table_result is not None else "-"
        seats = len(s.wagers)
        out.append(f"{shown(s.round_id)}  {shown(s.started)}  {shown(s.outcome):<11} seats {seats}  result {result}")
    return "\n".join(out)
