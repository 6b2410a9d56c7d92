"""What the console shows, built from what the floor archived (pure: no I/O, no clock but the one given).

`FloorView` keeps, beside each table's live model (floor/live.py), the little the tiles need that the live model
does not hold: the table's birth as published (software digest, devices' identities), the players at the last
lock-out, the dealing method, when its recent rounds completed (rounds per hour) and its last log lines. Everything
comes from the MQTT contract's messages, so nothing here holds a card before the round's settlement: the tables
publish none (docs/mqtt.md), and tests/console/test_no_cards.py scans every byte the console serves.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from floor.console.floor_alerts import SessionAck, link_alerts, session_alerts
from floor.console.results import RoundTally
from floor.gaps import MAX_SEQS, open_gaps
from floor.links import LinkLive
from floor.live import ALERT_STATES, JACKPOT_PENDING, TableLive, is_tilt
from floor.marks import note_marks, note_this_round
from floor.messages import Incoming, LinkIncoming
from floor.recall import money_text, summary_or_problem

LOG_LINES = 200  # per table, kept for a table view opened later
ALERT_BLOCKS = {  # blocks (table.blocked reasons) that need a person, besides tilts: what to call them
    "deck_change_due": "deck change due",
    "cards_inspection_due": "inspection due",
    "inspection_due": "inspection due",
    "deck_removed": "deck removed",
}


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


def note_shuffle(x: TableExtra, type_: str, p: dict[str, Any]) -> None:
    """How the table shuffles now: its shuffle.started says which device, and a device covered or back says what
    took over (655a.13(g))."""
    if type_ == "shuffle.started" and p.get("device"):
        x.shuffle = "shuffler" if p["device"] == "shuffler" else f"{p['device']} shuffle"
    elif type_ == "device.out_of_order" and p.get("device") == "shuffler":
        x.shuffle = str(p.get("takes_over") or "no shuffler")
    elif type_ == "device.back_in_service" and p.get("device") == "shuffler":
        x.shuffle = "shuffler"


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
