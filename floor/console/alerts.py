"""The alerts a table's tile raises, for a person to see to (pure): pending jackpots, tilts, deck changes and
inspections due, devices faulted or out of order, the table degraded, offline or lost, and its seq gaps. The links'
and the lost session's alerts are floor/console/floor_alerts.py's."""

from __future__ import annotations

from typing import Any

from floor.gaps import MAX_SEQS
from floor.live import ALERT_STATES, JACKPOT_PENDING, is_tilt
from floor.recall import money_text

ALERT_BLOCKS = {  # blocks (table.blocked reasons) that need a person, besides tilts: what to call them
    "deck_change_due": "deck change due",
    "cards_inspection_due": "inspection due",
    "inspection_due": "inspection due",
    "deck_removed": "deck removed",
}


def sort_alerts(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What needs a person: pending jackpots first (linked and local), then tilts, devices faulted or out of order,
    deck changes and inspections due, links tilted or offline, tables degraded, offline or lost, seq gaps, each
    oldest first."""
    return sorted(found, key=lambda a: (a["rank"], str(a["since"]), a["table_id"], a["kind"], str(a["key"])))


def table_alerts(t: dict[str, Any]) -> list[dict[str, Any]]:
    """One table's alerts (group "table:<id>": the browser replaces a table's alerts as a whole)."""
    tid = t["table_id"]
    since = t["last_event_at"] or ""
    out = [*_jackpot_alerts(t, since), *_tilt_alerts(t), *_deck_alerts(t, since), *_device_alerts(t, since)]
    out.extend(_state_alerts(t, since))
    out.extend(_gap_alerts(t, since))
    # The same keys in the same order as ever: browsers are sent an alert group again only when its JSON differs.
    return [
        {"table_id": tid, **a, "group": f"table:{tid}", "rank": 0 if a["kind"] == "jackpot" else 1}
        | {"target": "table", "target_id": tid}
        for a in out
    ]


def _jackpot_alerts(t: dict[str, Any], since: str) -> list[dict[str, Any]]:
    held = t["phase_since"] if t["phase"] == JACKPOT_PENDING else None
    return [
        {
            "kind": "jackpot",
            "key": hit,
            "since": held or since,
            "text": f"jackpot pending: seat {j.get('seat')} {j.get('level')} {money_text(j.get('amount'))}",
            "verb": "validate_jackpot",
            "args": {"seat": j.get("seat"), "level": j.get("level"), "hit": hit},
        }
        for hit, j in t["pending_jackpots"].items()
    ]


def _tilt_alerts(t: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "kind": "tilt",
            "key": tilt,
            "since": at,
            "text": f"tilt {tilt}: {t['blocks'].get(tilt, '')}".rstrip(": "),
            "verb": "clear_tilt",
            "args": {"tilt": tilt},
        }
        for tilt, at in t["tilts"].items()
    ]


def _deck_alerts(t: dict[str, Any], since: str) -> list[dict[str, Any]]:
    return [
        {
            "kind": "deck",
            "key": block,
            "since": since,
            "text": f"{ALERT_BLOCKS[block]}: {why}",
            "verb": "verify_deck" if "deck" in block else "verify_inspection",
            "args": {},
        }
        for block, why in t["blocks"].items()
        if not is_tilt(block) and block in ALERT_BLOCKS
    ]


def _device_alerts(t: dict[str, Any], since: str) -> list[dict[str, Any]]:
    out = []
    for device, what in t["faults"].items():
        d = t["devices"].get(device, {})
        out.append(
            {
                "kind": "device",
                "key": device,
                "since": str(d.get("fault_at") or d.get("since") or since),
                "text": f"{device}: {what}",
                "verb": "back_in_service" if what == "out_of_order" else None,
                "args": {"device": device} if what == "out_of_order" else {},
            }
        )
    return out


def _state_alerts(t: dict[str, Any], since: str) -> list[dict[str, Any]]:
    """The table's own status when it needs a person: degraded (kind "degraded"), offline or lost (kind "offline"),
    with the status's reason; no verb (the table clears it itself: its next status, online, drops the alert)."""
    state = str(t["state"])
    if state not in ALERT_STATES:
        return []
    why = t.get("reason")
    return [
        {
            "kind": "degraded" if state == "degraded" else "offline",
            "key": state,
            # A live model stored before state_since was kept: the table's last event, as before.
            "since": t.get("state_since") or since,
            "text": f"{state}: {why}" if why else state,
        }
    ]


def _gap_alerts(t: dict[str, Any], since: str) -> list[dict[str, Any]]:
    """The gaps the table's own replay may still fill, as one alert; each stale one apart, with its resend."""
    out: list[dict[str, Any]] = []
    stale = [tuple(g) for g in t.get("stale_gaps", [])]
    young = [(a, b) for a, b in t["gaps"] if (a, b) not in stale]
    if young:
        gaps = ", ".join(f"{a}-{b}" for a, b in young)
        out.append({"kind": "gap", "key": gaps, "since": since, "text": f"seq gap {gaps}"})
    for i, (a, b) in enumerate(t["gaps"]):
        if (a, b) in stale:
            # The button asks for the gap's first command's worth (MAX_SEQS); what stays is asked for next.
            upto = min(b, a + MAX_SEQS - 1)
            out.append(
                {
                    "kind": "gap",
                    "key": f"{a}-{b}",
                    "since": t["gap_since"][i] if i < len(t["gap_since"]) and t["gap_since"][i] else since,
                    "text": f"seq gap {a}-{b} stale: the table's own replay has not filled it; ask it to send again",
                    "verb": "resend",
                    "args": {"from_seq": a, "to_seq": upto},
                }
            )
    return out
