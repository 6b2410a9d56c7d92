"""What the console shows, built from what the floor archived (pure: no I/O, no clock but the one given).

`FloorView` keeps, beside each table's live model (floor/live.py), the little the tiles need that the live model
does not hold: the table's birth as published (software digest, devices' identities), the players at the last
lock-out, the dealing method, when its recent rounds completed (rounds per hour) and its last log lines. Everything
comes from the MQTT contract's messages, so nothing here holds a card before the round's settlement: the tables
publish none (docs/mqtt.md), and tests/console/test_no_cards.py scans every byte the console serves.

What a table's events tell its tile is floor/console/table_extra.py's; the alerts a tile raises are
floor/console/alerts.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from floor.console.alerts import sort_alerts, table_alerts
from floor.console.floor_alerts import SessionAck, link_alerts, session_alerts
from floor.console.table_extra import TableExtra, closing_text, log_line, note_event
from floor.gaps import open_gaps
from floor.links import LinkLive
from floor.live import TableLive
from floor.messages import Incoming, LinkIncoming


def _parse_ts(ts: str | None) -> datetime | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None


def stamp(now: datetime) -> str:
    """The server's now as the page reads it (`now` in the floor, each update and heartbeat): the page measures every
    age (a phase, an alert, a link's last word) on this clock, not on the browser's, which may be off the floor's."""
    return now.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass
class FloorView:
    pits: dict[str, str] = field(default_factory=dict)  # table_id -> pit
    grace_s: float = 30.0  # [gaps] grace_s: a seq gap open longer is stale (floor/gaps.py)
    live: dict[str, TableLive] = field(default_factory=dict)
    extra: dict[str, TableExtra] = field(default_factory=dict)
    links: dict[str, LinkLive] = field(default_factory=dict)
    # The messages the floor refused (rejected_messages, floor/refusals.py): how many, and the latest one's topic,
    # reason and time. The topic and reason are a publisher's text: the page shows them as text only.
    refused: dict[str, Any] = field(
        default_factory=lambda: {"count": 0, "last_topic": None, "last_reason": None, "last_at": None}
    )
    # While the floor cannot reach its broker: since when and aiomqtt's words. Every table's state is then only as
    # last heard (and the broker's wills may say lost for all of them): the page says so beside its own link.
    broker_lost: dict[str, str] | None = None
    # When the broker last kept no session for the floor (floor/console/floor_alerts.py), on the floor's clock; None
    # again once that loss's alert ended, so a later gap is its table's alone, not named as the loss's.
    session_lost: str | None = None
    session_ack: SessionAck | None = None  # a supervisor's acknowledgement of it (floor/console/session_ack.py)
    # A loss whose alert ended and is not yet recorded as ended (session_ack.py writes it): a restart restores no more.
    session_ended: str | None = None

    def note_refused(self, count: int, topic: str | None, reason: str | None, at: str | None) -> dict[str, Any]:
        self.refused = {
            "count": self.refused["count"] + count,
            "last_topic": topic if topic is not None else self.refused["last_topic"],
            "last_reason": reason[:300] if reason is not None else self.refused["last_reason"],
            "last_at": at if topic is not None else self.refused["last_at"],
        }
        return self.refused

    def table(self, table_id: str) -> TableExtra:
        return self.extra.setdefault(table_id, TableExtra())

    def observe_link(self, m: LinkIncoming, link: LinkLive) -> set[str]:
        """Take a link's message (its model after the batch); the tables whose tiles show it, before and after."""
        before = set(self.links[m.link_id].tables) if m.link_id in self.links else set()
        self.links[m.link_id] = link
        return before | set(link.tables)

    def links_of(self, table_id: str) -> list[LinkLive]:
        return [self.links[k] for k in sorted(self.links) if table_id in self.links[k].tables]

    def observe(self, m: Incoming, live: TableLive) -> dict[str, Any] | None:
        """Take one archived message (its table's live model after the batch); the log line it makes, if any."""
        self.live[m.table_id] = live
        x = self.table(m.table_id)
        if m.kind == "birth":
            x.birth = m.content
            x.dealing_method = x.dealing_method or str(m.content.get("game", {}).get("dealing_method"))
            return None
        if m.kind != "event":
            return None
        e = m.content
        note_event(x, str(e["type"]), str(e["ts"]), e.get("payload"), e.get("round_id"))
        line = log_line(e)
        x.lines.append(line)
        return line

    # -- what is shown -----------------------------------------------------------------------------------------

    def tile(self, table_id: str, now: datetime) -> dict[str, Any]:
        live = self.live.get(table_id) or TableLive(table_id)
        x = self.table(table_id)
        hour_ago = now - timedelta(hours=1)
        recent = [t for ts in x.completed_at if (t := _parse_ts(ts)) is not None and t >= hour_ago]
        since = _parse_ts(live.phase_since)
        links = self.links_of(table_id)
        # The block in the live model says it too (kept across a restart, however long ago its event was).
        usable = x.method_usable and "no_method" not in live.blocks
        return {
            "table_id": table_id,
            "pit": self.pits.get(table_id, "unassigned"),
            "game": live.game,
            "chapter": live.chapter,
            "state": live.state,
            "reason": live.reason,  # why degraded (or offline by a fault): the table's words, escaped (floor/live.py)
            "state_since": live.state_since,
            "phase": live.phase,
            "phase_since": live.phase_since,
            "in_phase_s": round((now - since).total_seconds()) if since else None,
            "round_id": live.round_id,
            "rounds_completed": live.rounds_completed,
            "rounds_per_hour": len(recent),
            "players": x.players,
            # Null while no method is usable, as the table says it; `no_method` is then the block's words, "" until
            # the table has said them (a block raised between rounds is said once the table stops to wait on it).
            "dealing_method": x.dealing_method if usable else None,
            "no_method": None if usable else live.blocks.get("no_method", ""),
            "shuffle": x.shuffle,
            "out_of_order": dict(x.out_of_order),
            "this_round": dict(x.this_round) or None,  # round_id, text
            # A close waiting for the round in play, also after the table's restart (its table.recovered says it).
            "closing": closing_text(x.closing),
            "tilts": dict(live.tilts),
            "blocks": dict(live.blocks),
            "devices": {k: dict(v) for k, v in live.devices.items()},
            "faults": live.faults,
            "meters": {k: dict(v) for k, v in live.meters.items()},
            "pending_jackpots": {k: dict(v) for k, v in live.pending_jackpots.items()},
            # Link health, and every hit pending on its links (the sign at each linked table shows them all).
            "links": [lk for link in links if (lk := link.link_of(table_id)) is not None],
            "linked_meters": {f"{link.link_id}/{lvl}": dict(m) for link in links for lvl, m in link.meters.items()},
            "linked_jackpots": [{**h, "link_id": link.link_id} for link in links for h in link.panel()["pending"]],
            "gaps": [list(g) for g in live.gaps],
            "gap_since": list(live.gap_since),
            # Open past the grace period: a person sends the table a resend (the console's button signs it here).
            "stale_gaps": [[g.first_seq, g.last_seq] for g in open_gaps([live], now, self.grace_s) if g.stale],
            "alarms": live.alarms,
            "last_seq": live.last_seq,
            "last_event_at": live.last_event_at,
            "last_round": x.rounds.last,  # shown once finished: its hands are those its settlement published
        }

    def session_alerts(self, now: datetime) -> list[dict[str, Any]]:
        """The lost session's alert while it lasts; once it has ended (every gap opened since closed, and grace_s
        past the loss) the loss is forgotten: a gap opening later is not named as its doing."""
        found = session_alerts(self.session_lost, self.live, now, self.grace_s, self.session_ack)
        if not found and self.session_lost is not None:
            self.session_ended, self.session_lost, self.session_ack = self.session_lost, None, None
        return found

    def floor(self, now: datetime) -> dict[str, Any]:
        tiles = [self.tile(t, now) for t in sorted(self.live)]
        found = [a for t in tiles for a in table_alerts(t)]
        found += [a for k in sorted(self.links) for a in link_alerts(self.links[k])]
        found += self.session_alerts(now)
        return {
            "tiles": tiles,
            "alerts": sort_alerts(found),
            "links": [self.links[k].panel() for k in sorted(self.links)],
            "refused": self.refused,
            "broker_lost": self.broker_lost,
            "now": stamp(now),
        }

    def detail(self, table_id: str, now: datetime) -> dict[str, Any]:
        x = self.table(table_id)
        birth = x.birth or {}
        software = dict(birth.get("software") or {})
        return {
            "now": stamp(now),
            "tile": self.tile(table_id, now),
            "software": software,
            # A verdict on the digest is published by tables that check their own code (absent: none published).
            "verdict": software.get("verdict") or birth.get("verdict"),
            "devices": list(birth.get("devices") or []),
            "paytables": list(birth.get("paytables") or []),
            "lines": list(x.lines),
        }
