"""What befell a round besides its settlements, in words, for the console's recent rounds (floor/recall.py gathers
them with their seq, so the page puts them in order with the settlements): a stop at once and the restart after it
(or after a crash), the round voided, and "no more bets" refused. The recent rounds showed the settlements alone: a
round voided read `voided` with no reason, and one resumed after a restart read as if it had been played straight
through. A payload is a table's outside text: a field not of its shape is said as it came, never read as a number."""

from __future__ import annotations

from typing import Any

NOTED = ("table.stopped", "demo.stopped", "table.recovered", "round.voided", "no_more_bets.refused")


def _restart(p: dict[str, Any]) -> str:
    after = p.get("after_stop")
    if isinstance(after, dict):
        text = f"restarted after the stop at seq {after.get('seq')} ({after.get('by')})"
    else:  # a crash (kill -9, a power cut) journals no stop (docs/events.md)
        text = "restarted with no stop on record (a crash or a power cut)"
    text += f" in {p.get('phase')}: {p.get('what')}"
    closing = p.get("closing")
    if isinstance(closing, dict):
        by = closing.get("by")
        who = f"asked by {by}" if isinstance(by, str) and by else "who asked is not recorded"
        text += f"; still closing after round {closing.get('after_round')} ({who})"
    return text


def note_text(type_: str, p: dict[str, Any]) -> str:
    """One of NOTED's events as a supervisor reads it in the round's picture."""
    if type_ == "table.recovered":
        return _restart(p)
    if type_ in ("table.stopped", "demo.stopped"):
        what = f"; at the restart: {p['what']}" if isinstance(p.get("what"), str) else ""
        return f"stopped at once ({p.get('by')}) in {p.get('phase')}{what}"
    if type_ == "round.voided":
        remedy = f"; {p['remedy']}" if isinstance(p.get("remedy"), str) else ""
        return f"voided: {p.get('reason')}{remedy}"
    return f'"no more bets" refused: {p.get("reason")}'
