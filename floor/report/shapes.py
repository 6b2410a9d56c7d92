"""The payload shapes the report's SQL reads and casts (floor/report/figures.py), so the ingest can refuse an event
that would break every report of its period (pure).

The report sums `(payload->>'amount')::bigint`, walks `jsonb_array_elements(payload->'wagers')` of a settlement and
`jsonb_each_text` of a fold's `collected`: an archived `"amount": 1.5`, `"amount": "five"` or `wagers` that is not an
array stops the whole report with a cast error, for every table of the day. Each event type the report reads is
checked here for exactly what it reads; null stays allowed (SQL sums skip it), and other keys are free.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

MONEY = ("amount", "collected", "paid")


def _cents(value: object) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


def _money_at_top(p: Mapping[str, Any]) -> str | None:
    for key in MONEY:
        if key in p and not _cents(p[key]):
            return f"payload.{key} must be integer cents, not {type(p[key]).__name__}"
    return None


def _cents_by_key(p: Mapping[str, Any], key: str) -> str | None:
    if key not in p or p[key] is None:
        return None
    value = p[key]
    if not isinstance(value, dict):
        return f"payload.{key} must be an object of integer cents, not {type(value).__name__}"
    for k, v in value.items():
        if not _cents(v):
            return f"payload.{key}.{k} must be integer cents, not {type(v).__name__}"
    return None


def _settled(p: Mapping[str, Any]) -> str | None:
    if "wagers" not in p:
        return _money_at_top(p)
    wagers = p["wagers"]
    if not isinstance(wagers, list):
        return f"payload.wagers of a settlement must be an array, not {type(wagers).__name__}"
    for i, w in enumerate(wagers):
        if not isinstance(w, dict):
            return f"payload.wagers[{i}] must be an object"
        for key in MONEY:
            if key in w and not _cents(w[key]):
                return f"payload.wagers[{i}].{key} must be integer cents, not {type(w[key]).__name__}"
    return None


def _no_more_bets(p: Mapping[str, Any]) -> str | None:
    wagers = p.get("wagers")
    if wagers is None:
        return None
    if not isinstance(wagers, dict) or not all(isinstance(s, dict) for s in wagers.values()):
        return "payload.wagers of no_more_bets must be an object of seats, each an object of spots"
    return None


def _departed(p: Mapping[str, Any]) -> str | None:
    return _cents_by_key(p, "wagers") or _money_at_top(p)


def _meter_delta(p: Mapping[str, Any]) -> str | None:
    delta = p.get("delta")
    if not isinstance(delta, dict):  # ->'delta'->>'k' of anything but an object is null: summed as nothing
        return None
    for k in ("in_count", "in_cents", "contributed_micro"):
        if k in delta and not _cents(delta[k]):
            return f"payload.delta.{k} must be a whole number, not {type(delta[k]).__name__}"
    return None


CHECKS: dict[str, Callable[[Mapping[str, Any]], str | None]] = {
    "seat.folded": lambda p: _cents_by_key(p, "collected"),
    "wagers.abandoned": _departed,
    "held_wagers.released": _departed,
    "progressive.paid": _money_at_top,
    "no_more_bets": _no_more_bets,
    "meter.contributed": _meter_delta,
    "meter.contributions_reversed": _meter_delta,
}


def report_problem(event_type: str, payload: Mapping[str, Any]) -> str | None:
    """Why an event of this type with this payload would break a report, or None."""
    check = _settled if event_type.endswith(".settled") else CHECKS.get(event_type)
    return check(payload) if check else None
