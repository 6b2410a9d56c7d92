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
