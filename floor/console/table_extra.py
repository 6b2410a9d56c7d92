"""What a table's events tell its tile beyond the live model (floor/live.py), pure: the players at the last lock-out,
the dealing method and the shuffle, the devices marked out of order, what becomes of the round in play, when its
recent rounds completed, its last log lines and its last round's result. FloorView (floor/console/views.py) keeps one
TableExtra a table."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from floor.console.results import RoundTally
from floor.marks import note_marks, note_this_round
from floor.recall import summary_or_problem

LOG_LINES = 200  # per table, kept for a table view opened later


def log_line(e: dict[str, Any]) -> dict[str, Any]:
    """One line of a table's live log: the event's gist with amounts in dollars, and the rule it cites. A payload not
    shaped as its type's (a table's payload is outside text) is shown as such, with what is wrong (`bad`), and the
    stream goes on: summarize() raised here, and the whole batch's update was lost."""
    payload = e.get("payload")
    text, problem = summary_or_problem(str(e["type"]), payload if isinstance(payload, dict) else {})
    if problem is None and not isinstance(payload, dict | None):
        problem = f"a JSON object as payload (it is a {type(payload).__name__})"
    line = {
        "table_id": e["table_id"],
        "seq": e["seq"],
        "ts": e["ts"],
        "round_id": e.get("round_id"),
        "type": e["type"],
        "rule": e.get("rule"),
        "text": text if problem is None else f"(payload not as expected: {problem})",
    }
    if problem is not None:
        line["bad"] = problem
    return line


# The events whose `dealing_method` is what the table deals by now, null while none is usable (docs/events.md).
METHOD_SAID = ("table.opened", "device.out_of_order", "device.back_in_service")


@dataclass
class TableExtra:
    birth: dict[str, Any] | None = None
    players: int = 0
    dealing_method: str | None = None
    # False from a table.opened, device.out_of_order or device.back_in_service whose dealing_method is null (the
    # `no_method` block) until an event names a method again: the last method named is not one the table can deal
    # by meanwhile.
    method_usable: bool = True
    shuffle: str | None = None  # the shuffler, or what took over when it was covered (13(g))
    out_of_order: dict[str, str | None] = field(default_factory=dict)  # device -> what took over (floor/marks.py)
    this_round: dict[str, str] = field(default_factory=dict)  # what becomes of the round a mark was made in
    completed_at: deque[str] = field(default_factory=lambda: deque(maxlen=500))
    lines: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    rounds: RoundTally = field(default_factory=RoundTally)  # the last round's result, for the tile
    closing: dict[str, Any] | None = None  # a close pending after the round in play: after_round, by (note_closing)


def note_event(x: TableExtra, type_: str, ts: str, p: object, round_id: str | None = None) -> None:
    """What a table's event tells its tile beyond the live model: players at lock-out, rounds completed, the dealing
    method, the shuffle, the last round's result. A field not of its shape is left out (the log line says the payload
    is not as expected)."""
    if not isinstance(p, dict):
        return
    x.rounds.note(round_id, type_, p)
    players = p.get("players")
    if type_ == "no_more_bets" and isinstance(players, list):
        x.players = len(players)
    elif type_ == "round.completed":
        x.completed_at.append(ts)
    if isinstance(p.get("dealing_method"), str):
        x.dealing_method, x.method_usable = p["dealing_method"], True
    elif type_ in METHOD_SAID and "dealing_method" in p:
        x.method_usable = p["dealing_method"] is not None
    note_shuffle(x, type_, p)
    note_marks(x.out_of_order, type_, p)
    note_this_round(x.this_round, type_, p, round_id)
    note_closing(x, type_, p)


# The events that say whether a close waits for the round in play: asked (`table.closing`), still standing or no more
# after a restart (`table.recovered`, with or without `closing`), done (`table.closed`) or past (`table.opened`).
CLOSE_SAID = ("table.closing", "table.recovered", "table.closed", "table.opened")


def note_closing(x: TableExtra, type_: str, p: dict[str, Any]) -> None:
    """The close pending after the round in play, as the table last said it: its `table.closing`, or after a restart
    the `closing` its `table.recovered` carries (the first Ctrl-C's or a signed close_table's, stored across the
    stop); a `table.recovered` without it says the close no longer stands, and `table.closed` that it is done."""
    if type_ == "table.closing":
        x.closing = {"after_round": p.get("after_round"), "by": p.get("by")}
    elif type_ == "table.recovered":
        said = p.get("closing")
        x.closing = {"after_round": said.get("after_round"), "by": said.get("by")} if isinstance(said, dict) else None
    elif type_ in CLOSE_SAID:
        x.closing = None


def closing_text(closing: dict[str, Any] | None) -> str | None:
    """`closing after round 3 (asked by supervisor super-bob)`, as the tile and the table page say it; None while no
    close is pending. A close stored by older software names nobody (controller/store/snapshot.py)."""
    if closing is None:
        return None
    n, by = closing.get("after_round"), closing.get("by")
    when = f"after round {n}" if isinstance(n, int) and not isinstance(n, bool) else "after the round in play"
    who = f"asked by {by}" if isinstance(by, str) and by else "who asked is not recorded"
    return f"closing {when} ({who})"


def note_shuffle(x: TableExtra, type_: str, p: dict[str, Any]) -> None:
    """How the table shuffles now: its shuffle.started says which device, and a device covered or back says what
    took over (655a.13(g))."""
    if type_ == "shuffle.started" and p.get("device"):
        x.shuffle = "shuffler" if p["device"] == "shuffler" else f"{p['device']} shuffle"
    elif type_ == "device.out_of_order" and p.get("device") == "shuffler":
        x.shuffle = str(p.get("takes_over") or "no shuffler")
    elif type_ == "device.back_in_service" and p.get("device") == "shuffler":
        x.shuffle = "shuffler"
