"""The console's alerts that are not one table's: a link's (its pending hits, the link down) and the floor's own
broker session lost (floor/intake.py), which names the tables whose seq gaps opened since (docs/console.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from floor.days import parse_ts
from floor.links import RULE as LINK_RULE
from floor.links import LinkLive
from floor.live import TableLive
from floor.recall import money_text

SESSION_GROUP = "floor:session"


@dataclass(frozen=True, slots=True)
class SessionAck:
    """A supervisor's acknowledgement of the lost session's alert (console_audit, action `acknowledge`): which loss
    (`since`, the alert's key), who (`by`, the key id) and when (`at`, the floor's clock)."""

    since: str
    by: str
    at: str


def gaps_since(lost: str, live: Mapping[str, TableLive]) -> list[str]:
    """The tables with an open seq gap first seen at or after `lost` (the floor's clock, as gap_since)."""
    at = parse_ts(lost)
    return sorted(t for t, x in live.items() if any(s and parse_ts(s) >= at for s in x.gap_since[: len(x.gaps)]))


def acknowledged(lost: str, live: Mapping[str, TableLive], ack: SessionAck | None) -> SessionAck | None:
    """`ack` while it stands: it is of this loss and no gap opened after it (a gap shrunk or split by a resend keeps
    its first time, floor/gaps.py carry_since, so only a new one raises the alert again)."""
    if ack is None or ack.since != lost:
        return None
    return None if gaps_since(ack.at, live) else ack


def session_alerts(
    lost: str | None, live: Mapping[str, TableLive], now: datetime, grace_s: float, ack: SessionAck | None = None
) -> list[dict[str, Any]]:
    """The floor's session lost at `lost` (None: never this run), as one alert: the events the tables published
    between the broker's return and the floor's new subscription reached no one, so the gaps opened since may be its
    doing. Shown while such a gap is open, and for [gaps] grace_s after the loss even with none seen yet; [] once
    neither holds, and the view then forgets the loss (FloorView.session_alerts): a gap that opens later, minutes or
    hours on, is its table's own alert, not named as the loss's doing."""
    if lost is None:
        return []
    tables = gaps_since(lost, live)
    if not tables and (now - parse_ts(lost)).total_seconds() > grace_s:
        return []
    named = f"seq gaps since at {', '.join(tables)}: resend every gap" if tables else "no seq gap seen since yet"
    seen = acknowledged(lost, live, ack)
    said = f"; acknowledged by {seen.by} at {seen.at}" if seen else ""
    return [
        {
            "table_id": "floor",
            "kind": "session",
            "key": lost,
            "since": lost,
            "text": "the broker kept no session for the floor (restarted without persistence, or the session expired):"
            f" what the tables published before the floor subscribed again never reached it; {named}{said}",
            "verb": None,
            "args": {"tables": tables},
            # Who acknowledged it and when, while no gap opened since: the page shows it and offers no button.
            "ack": None if seen is None else {"by": seen.by, "at": seen.at},
            "group": SESSION_GROUP,
            "rank": 1,
            "target": "floor",
            "target_id": "floor",
        }
    ]


def link_alerts(link: LinkLive) -> list[dict[str, Any]]:
    """A link's alerts (group "link:<id>"): each hit awaiting the link's validation, at the top; the link down."""
    out: list[dict[str, Any]] = []
    for key, h in sorted(link.pending.items(), key=lambda kv: int(kv[1]["order"])):
        # Said only by a link with [link] jackpot_meter_after (docs/mqtt.md's upgrade order); absent, nothing shown.
        after = h.get("meter_after_cents")
        out.append(
            {
                "table_id": str(h["table_id"]),
                "kind": "link_jackpot",
                "key": f"{link.link_id}:{key}",
                "since": h.get("since") or "",
                "text": f"linked jackpot pending on {link.link_id}: table {h['table_id']} (asset {h['asset_number']})"
                f" seat {h['seat']} {h['level']} {money_text(h['amount_cents'])}, win #{h['order']}"
                + (f"; the meter after it {money_text(after)}" if after is not None else ""),
                "verb": "validate_jackpot",
                "args": {"table_id": h["table_id"], "round_id": h["round_id"], "seat": h["seat"], "level": h["level"]},
                "rank": 0,
            }
        )
    if link.status in ("tilted", "offline") or link.database == "down":
        what = link.status if link.status != "open" else "database down"
        out.append(
            {
                "table_id": link.link_id,
                "kind": "link",
                "key": what,
                "since": link.status_since or "",
                "text": f"link {link.link_id} {what}"
                + (f": {link.tilt}" if link.tilt else "")
                + f"; its tables take no linked wagers ({LINK_RULE})",
                "verb": "clear_tilt" if link.status == "tilted" else None,
                "args": {"note": "cleared from the floor console"} if link.status == "tilted" else {},
                "rank": 1,
            }
        )
    for a in out:
        a.update(group=f"link:{link.link_id}", target="link", target_id=link.link_id)
    return out
