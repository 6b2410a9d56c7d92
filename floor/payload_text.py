"""An event's payload fields as an operator reads them, for the line of an event the recall has no summary of its own
(floor/recall.py summarize: the round recall, `tablectl floor round`, and the console's live log).

The line was `key=value` of the scalars alone, so what a field nests was left out: a `table.recovered` that follows a
stop on purpose (`after_stop` {seq, by}) read exactly like a crash's, and the devices a deal started with out of order
were not said. The two are said in words; any other object or list by its fields' names, one level deep, amounts in
dollars by the field's own name (tests/floor/test_recall_money_schema.py classifies a container's fields too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from floor.marks import marks_text

SHOWN = 8  # fields a line shows at most: past that the line is too long to read at a glance (the recall has all)
NESTED = 4  # fields of a nested object or items of a list shown, then "..."


def after_stop_text(v: object) -> str | None:
    """`table.recovered`'s `after_stop`: the stop on purpose the restart follows (a crash's restart has none)."""
    if not isinstance(v, dict):
        return None
    return f"after the stop at seq {v.get('seq')} ({v.get('by')})"


def out_of_order_text(v: object) -> str | None:
    """Each device marked out of order and what took over (`table.opened`, `deal.started`: floor/marks.py)."""
    if not isinstance(v, dict):
        return None
    return marks_text({str(d): None if t is None else str(t) for d, t in v.items()}) or "no device out of order"


def refused_text(v: object) -> str | None:
    """`table.recovered`'s `no_more_bets_refused`: the refusal pending at the restart, its rule and what lifts it."""
    if not isinstance(v, dict):
        return None
    return f'"no more bets" refused ({v.get("rule")}) until: {v.get("remedy")}'


WORDED: dict[str, Callable[[object], str | None]] = {
    "after_stop": after_stop_text,
    "out_of_order": out_of_order_text,
    "no_more_bets_refused": refused_text,
}


def _scalar(k: str, v: object, money: Callable[[str], bool], text: Callable[[object], str]) -> str | None:
    if isinstance(v, str | int | bool):
        return text(v) if money(k) else str(v)
    return None


def field_text(k: str, v: object, money: Callable[[str], bool], text: Callable[[object], str]) -> str | None:
    """One field as shown: `k=v`, an amount in dollars; words for the fields WORDED names; `k {a=1, b=2}` or
    `k [x, y]` for an object or list of scalars; None for what is not shown (null, a float, deeper nesting)."""
    if k in WORDED and (worded := WORDED[k](v)) is not None:
        return worded
    if (plain := _scalar(k, v, money, text)) is not None:
        return f"{k}={plain}"
    if isinstance(v, dict) and v:
        inner = [f"{a}={s}" for a, b in v.items() if (s := _scalar(str(a), b, money, text)) is not None]
        return f"{k} {{{_few(inner, len(v))}}}" if inner else None
    if isinstance(v, list) and v:
        items = [s for b in v if (s := _scalar(k, b, money, text)) is not None]
        return f"{k} [{_few(items, len(v))}]" if items else None
    return None


def _few(parts: list[str], total: int) -> str:
    return ", ".join(parts[:NESTED]) + (", ..." if total > NESTED else "")


def fields_text(p: dict[str, Any], money: Callable[[str], bool], text: Callable[[object], str]) -> str:
    """The payload's fields but the seat (said first by the caller), in the payload's order."""
    parts = [s for k, v in p.items() if k != "seat" and (s := field_text(k, v, money, text)) is not None]
    return ", ".join(parts[:SHOWN])


def refusal_text(type_: str, p: dict[str, Any]) -> str | None:
    """Why a command or an input did nothing, briefly: `command.rejected` (docs/commands.md: the check that failed)
    and `input.ignored` / `input.refused` (the engine's reason in the phase it came in)."""
    if type_ == "command.rejected":
        return f"{p.get('verb') or 'a command'} rejected ({p.get('code')}): {p.get('reason')}"
    if type_ in ("input.ignored", "input.refused"):
        return f"{p.get('input')} {type_.split('.')[1]} in {p.get('phase')}: {p.get('reason')}"
    return None
