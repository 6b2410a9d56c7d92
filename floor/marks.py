"""The devices a table has marked out of order (655a.13(g)) and what took over each, as its events say it: its
`table.opened` names every device still marked (`out_of_order`), a `device.out_of_order` adds one and a
`device.back_in_service` drops one (docs/events.md). The console's tile and the round recall read them alike."""

from __future__ import annotations

from typing import Any

MARK_EVENTS = ("table.opened", "device.out_of_order", "device.back_in_service")


def note_marks(marks: dict[str, str | None], type_: str, p: dict[str, Any]) -> None:
    """Update `marks` (device -> what took over, None when the table named nothing) from one event's payload. A
    field not of its shape is left out: the payload is a table's outside text (the log line says it is not as
    expected)."""
    device = p.get("device")
    if type_ == "table.opened" and isinstance(p.get("out_of_order"), dict):
        marks.clear()
        marks.update({str(k): v if isinstance(v, str) else None for k, v in p["out_of_order"].items()})
    elif type_ == "device.out_of_order" and isinstance(device, str):
        took = p.get("takes_over")
        marks[device] = took if isinstance(took, str) else None
    elif type_ == "device.back_in_service" and isinstance(device, str):
        marks.pop(device, None)


def marks_text(marks: dict[str, str | None]) -> str:
    """`shoe out of order (hand took over)`, one clause a device, in name order; "" when none is marked."""
    return "; ".join(f"{d} out of order" + (f" ({t} took over)" if t else "") for d, t in sorted(marks.items()))


def this_round_text(device: str, this_round: str, next_method: object) -> str:
    """What becomes of the round in play by a device marked in it (`device.out_of_order`'s `this_round`,
    docs/events.md): void, or dealt to its end by its own method while the next round is dealt by the table's
    `dealing_method`."""
    if this_round == "void":
        return f"void: the {device} was marked out of order before its last card (.13(f)), every wager returned"
    after = next_method if isinstance(next_method, str) else "no usable method"
    return f"dealt by {this_round} to its end ({device} marked out of order); the next round by {after}"


def mark_line(p: dict[str, Any]) -> str:
    """A `device.out_of_order`'s line (the round recall's, the console's live log): the device, why, what took over,
    what the table deals by now and, marked in a round past "no more bets", what becomes of that round."""
    device, took, now = p["device"], p.get("takes_over"), p.get("dealing_method")
    line = f"{device} out of order ({p.get('reason')})" + (f", {took} takes over" if took else "")
    line += f"; the table deals by {now if now else 'no usable method'}"
    if isinstance(p.get("this_round"), str):
        line += f"; the round in play: {this_round_text(str(device), p['this_round'], now)}"
    return line


def note_this_round(this: dict[str, str], type_: str, p: dict[str, Any], round_id: str | None) -> None:
    """`this` (round_id, text: this_round_text) from one event: set by a mark made in a round past "no more bets",
    kept until an event of another round (the console's table view shows it beside the marks)."""
    if round_id is not None and this.get("round_id") not in (None, round_id):
        this.clear()
    device, said = p.get("device"), p.get("this_round")
    if type_ == "device.out_of_order" and round_id is not None and isinstance(device, str) and isinstance(said, str):
        this.update(round_id=round_id, text=this_round_text(device, said, p.get("dealing_method")))
