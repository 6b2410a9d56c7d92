"""The live model of every table, folded from what the tables publish (pure: no I/O, no clock).

Only what the MQTT contract carries goes in, so nothing here holds a card before settlement. The floor service
keeps one TableLive per table, stores it with each commit (floor_tables.live) and `tablectl floor status` and the
console (issue 17) read it from there: online, phase and since when, the round, open tilts and blocks, device
states and faults, meters, pending jackpots, the archive's gaps and alarms.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from controller.core.shown import shown
from controller.mqtt.contract import Birth, DeviceStatus, ProgressiveMeter, TableEvent, TableStatus
from floor.days import parse_ts

COUNTING_CHIPS = "counting chips"
# The phase a table is in after each event that moves the round on (docs/events.md); other events leave it.
PHASE_AFTER: dict[str, str] = {
    "table.opened": "opening",
    "shuffle.started": "shuffling",
    "shuffle.completed": "shuffled",
    "betting.opened": "betting",
    "no_more_bets": "locking",
    # Every lock confirmed: the deal follows at once, unless a counted wager's chips are to be counted first.
    "lockout.confirmed": "dealing",
    # The dealer's chip count of the counted wagers awaited before any card (.8(b); the engine's RECONCILING), again
    # after a floorperson's recount or a restart: the table is not dealing until its `deal.started`.
    "chip_count.requested": COUNTING_CHIPS,
    "deal.started": "dealing",
    # A table older than `deal.started` deals at once from a count that matches: the deal starts there.
    "chip_count.reconciled": "dealing",
    "decision.requested": "decision",
    "hand.settled": "settling",
    "round.completed": "complete",
    "round.voided": "void",
    "table.blocked": "blocked",
    "table.closing": "closing",
    "table.closed": "closed",
    # `tablectl demo` stopped on a block nobody in it clears: with a round held open, the last event of its journal
    "demo.stopped": "stopped",
    # stopped at once (SIGTERM, a second Ctrl-C): the journal's last event, its round left for the restart's recovery
    "table.stopped": "stopped",
}
# While a hit awaits validation the round is held (controller/engine/jackpot.py, 655a.11(i)(1)(iii)): whatever else
# the table publishes meanwhile (the other seats' settlements, meters), the tile says so, timed from the first hit.
JACKPOT_PENDING = "jackpot pending"
JACKPOT_BLOCK = "jackpot"
TILT_PREFIX = "tilt:"
TILT_KEYS = frozenset({"critical_state"})
# Why a table says degraded (or offline after a fault): the status's `reason`. The archive keeps it as received up to
# the table's own bound (controller/mqtt/messages.py, MAX_STATUS_REASON); the live model, which every tile, update
# and `floor status` line carries, keeps it escaped (a table's words, controller/core/shown.py) and cut shorter.
STATUS_REASON_KEPT = 4000
STATUS_REASON_SHOWN = 500
# The states that need a person (an alert on the console, a line among `floor status`'s alerts) until the table says
# it is back online: degraded (a task down, a tilt, a retained topic held back), offline (stopped), lost (the will).
ALERT_STATES = frozenset({"degraded", "offline", "lost"})


def status_reason(reason: str | None) -> str | None:
    """The status's reason as the floor shows it: escaped, at most STATUS_REASON_SHOWN characters, None when none."""
    if not reason:
        return None
    text = shown(reason)
    return text if len(text) <= STATUS_REASON_SHOWN else text[: STATUS_REASON_SHOWN - 1] + "\u2026"


def is_tilt(block: str) -> bool:
    """The blocks a supervisor must clear as tilts (controller/engine/tilts.py names them the same way)."""
    return block in TILT_KEYS or (block.startswith(TILT_PREFIX) and len(block) > len(TILT_PREFIX))


@dataclass
class TableLive:
    table_id: str
    state: str = "unknown"  # online, degraded, offline, lost (the status topic), unknown before any
    reason: str | None = None  # the status's reason (status_reason): why degraded, or offline after a fault
    # When the floor first heard the table in its current state (the floor's clock, as gap_since): a degraded table's
    # alert is timed from its first degraded status, not from the table's last event nor its own clock.
    state_since: str | None = None
    boot_id: str | None = None
    chapter: str | None = None
    game: str | None = None
    phase: str = "unknown"  # what the tile shows: the round's phase, or JACKPOT_PENDING while a hit is held
    phase_since: str | None = None
    round_phase: str = "unknown"  # the phase the last event moving the round on put it in
    round_phase_since: str | None = None
    held_since: str | None = None  # when the oldest hit still awaiting validation arrived
    round_id: str | None = None
    rounds_completed: int = 0
    # When the table last completed a round (its clock, as a fault's fault_at): a fault reported before it, by a device
    # still in service, has passed (faults).
    round_completed_at: str | None = None
    last_seq: int = 0
    last_event_at: str | None = None
    blocks: dict[str, str] = field(default_factory=dict)
    tilts: dict[str, str] = field(default_factory=dict)  # tilt -> since (ts)
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    meters: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending_jackpots: dict[str, dict[str, Any]] = field(default_factory=dict)
    gaps: list[list[int]] = field(default_factory=list)
    # When each of `gaps` was first seen missing (floor/gaps.py: a gap open past [gaps] grace_s is stale).
    gap_since: list[str] = field(default_factory=list)
    alarms: int = 0

    def apply_event(self, e: TableEvent) -> None:
        if e.seq > self.last_seq:
            self.last_seq, self.last_event_at = e.seq, e.ts
        elif e.seq <= self.last_seq:
            # An old event arriving late (a replay) says nothing about the table now; the last one delivered again
            # (at least once) must not count its round twice.
            return
        phase = PHASE_AFTER.get(e.type)
        if phase is not None and phase != self.round_phase:
            self.round_phase, self.round_phase_since = phase, e.ts
        if e.round_id is not None:
            self.round_id = e.round_id
        p = e.payload
        if e.type == "round.completed":
            self.rounds_completed += 1
            self.round_completed_at = e.ts
        elif e.type == "table.blocked":
            self.blocks = {str(k): str(v) for k, v in dict(p.get("reasons", {})).items()}
            for key in self.blocks:
                if is_tilt(key):
                    self.tilts.setdefault(key, e.ts)
        elif e.type == "table.block_cleared":
            self.blocks.pop(str(p.get("block")), None)
            self.tilts.pop(str(p.get("block")), None)
        elif e.type == "tilt.cleared":
            self.tilts.pop(str(p.get("tilt")), None)
        elif e.type == "progressive.hit":
            self.pending_jackpots[str(p.get("hit"))] = {k: p.get(k) for k in ("seat", "level", "amount", "wager")}
        elif e.type == "account.verification_requested":
            # A 500 for 1 credit held for a floorperson's verification, validated as a hit (655a.11(i)(3)(ii)).
            self.pending_jackpots[str(p.get("hit"))] = {
                "seat": p.get("seat"),
                "level": p.get("wager"),
                "amount": p.get("amount"),
                "wager": p.get("wager"),
            }
        elif e.type in ("progressive.paid", "account.verified"):
            self.pending_jackpots.pop(str(p.get("hit")), None)
        elif e.type == "table.opened":
            self.chapter = str(p.get("chapter", self.chapter))
            self.game = str(p.get("game", self.game))
        self._show_phase(e.ts)

    def _show_phase(self, ts: str) -> None:
        held = bool(self.pending_jackpots) or JACKPOT_BLOCK in self.blocks
        if held and self.held_since is None:
            self.held_since = ts
        elif not held:
            self.held_since = None
        # A block besides the jackpot's (a tilt, a deck change due) stops the table: that is the phase to show,
        # the hit stays on the tile beside it.
        blocked = self.round_phase == "blocked" and any(b != JACKPOT_BLOCK for b in self.blocks)
        if held and not blocked:
            self.phase, self.phase_since = JACKPOT_PENDING, self.held_since
        else:
            self.phase, self.phase_since = self.round_phase, self.round_phase_since

    def apply_status(self, s: TableStatus, now: str | None = None) -> None:
        # Each status says the whole of it: one without a reason (back online, the last will) clears the last one's.
        # A new reason in the same state (another task down) keeps the state's since: the alert stays the same one.
        if s.state != self.state or self.state_since is None:
            # A lost status's ts is when the connection was opened (the will is set then): the floor's clock, when
            # given, says when it was heard; the table's stamp stands in for callers with no clock (pure tests).
            self.state_since = now or s.ts
        self.state, self.boot_id, self.reason = s.state, s.boot_id, status_reason(s.reason)

    def apply_birth(self, b: Birth) -> None:
        self.boot_id, self.chapter, self.game = b.boot_id, b.game.chapter, b.game.name

    def apply_device(self, d: DeviceStatus) -> None:
        self.devices[d.device_id] = {
            "state": d.state,
            "online": d.online,
            "reason": d.reason,
            "fault_code": d.fault_code,
            "fault_at": d.fault_at,
            "since": d.since,
        }

    def apply_meter(self, m: ProgressiveMeter) -> None:
        self.meters[m.level] = {
            "display_cents": m.display_cents,
            "reserve_cents": m.reserve_cents,
            "hits": m.hits,
            "as_of_seq": m.as_of_seq,
        }

    @property
    def faults(self) -> dict[str, str]:
        """Devices not in service, or with a fault since they were last online that has not passed: id -> what is
        wrong. A device status keeps its fault until the device comes back online (controller/mqtt/device_status.py),
        and one that never went offline keeps it for good: a shoe that ran empty after a restart (the table voided
        the round, 13(f), reshuffled and dealt on) was an alert for as long as the table ran. A round the table
        completed after the fault, with the device still in service, says the fault has passed; a device the engine
        stopped using is not in service, and stays an alert by its state."""
        out = {}
        for device, d in self.devices.items():
            if d["state"] in ("offline", "unusable", "out_of_order"):
                out[device] = str(d.get("fault_code") or d["state"])
            elif d.get("fault_code") and not self._passed(d.get("fault_at")):
                out[device] = str(d["fault_code"])
        return out

    def _passed(self, fault_at: object) -> bool:
        done = self.round_completed_at
        return isinstance(fault_at, str) and done is not None and parse_ts(done) > parse_ts(fault_at)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableLive:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if "round_phase" not in known:  # stored before the held phase was told apart from the round's
            known["round_phase"] = known.get("phase", "unknown")
            known["round_phase_since"] = known.get("phase_since")
        return cls(**known)
