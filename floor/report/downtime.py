"""The report's device downtime (docs/floor.md): a device is down from the first event that says it is offline,
unusable or out of order until it is back online, says its last held fault cleared, or is back in service. Two
kinds of event say nothing new and must not move that clock: a covered device (.13(g)) that identifies is still out
of order until `device.back_in_service`; and a restart says every mark and hold again (`restored`, docs/recovery.md),
which continues the stretch the original began: the identification a restarted daemon's hold outlasts (a fault
kept, followed at once by the hold said again) was no return to service. A restored mark or hold whose original
came before the period (nothing of it said in the period first) continues a stretch the period began in: it counts
from the period's start, and its row says so (`BEFORE`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

Key = tuple[str, str]  # table, device
# The events that say a device down or up (`note`), and the archive's last of them on each device before the period,
# its mark (out of order, back in service) and its hold apart: a covered device that identified is still out of order.
# On events_type_ts (type, ts): device events alone, never the rounds' (tests/floor/test_report_down_before.py).
SAID = ["device.offline", "device.unusable", "device.out_of_order", "device.online", "device.back_in_service",
        "device.fault_cleared"]  # fmt: skip
LAST_BEFORE = """SELECT DISTINCT ON (table_id, device, mark) table_id, device, type, payload FROM (
    SELECT table_id, coalesce(payload->>'device_id', payload->>'device') AS device, ts, seq, type, payload,
           type IN ('device.out_of_order', 'device.back_in_service') AS mark
    FROM events e WHERE type = ANY(%s) AND ts < %s{tables}) said
ORDER BY table_id, device, mark, ts DESC, seq DESC"""
DOWN = ("device.offline", "device.unusable", "device.out_of_order")
# A row's note: a stretch of it began before the period (a restored mark or hold) and is counted from its start.
BEFORE = "down from before the period"
# A row's note: the device is still down at the report's now, in a period not yet over; counted to that now.
STILL = "still down"


@dataclass
class Downtime:
    end: datetime  # the period's end: a device still down then is counted to it
    start: datetime  # the period's start: a restored stretch begun before it is counted from it
    # The report's now (the archive's clock): in a period not yet over a device still down is counted to it, not to
    # the end, time that has not happened (a shoe marked at 08:31 showed 1288.2 min in a report run at 08:33).
    now: datetime | None = None
    down: dict[Key, float] = field(default_factory=lambda: defaultdict(float))
    faults: dict[Key, list[str]] = field(default_factory=lambda: defaultdict(list))
    since: dict[Key, datetime] = field(default_factory=dict)
    covered: set[Key] = field(default_factory=set)
    # The stretch a `device.online` ended last: (its start, the online's time), undone by a restored hold after it.
    ended: dict[Key, tuple[datetime, datetime]] = field(default_factory=dict)
    before: set[Key] = field(default_factory=set)  # a stretch counted from the period's start

    def note(self, table: str, ts: datetime, type_: str, p: dict[str, Any]) -> None:
        # device.fault, .online and .offline name it `device_id`; .unusable, .out_of_order and .back_in_service
        # (.13(g)) `device`: keyed by one alone, the other's downtime went to a device "None".
        key = (table, str(p.get("device_id", p.get("device"))))
        if type_ == "device.fault":
            self.faults[key].append(str(p.get("code")))
            self.down.setdefault(key, 0.0)
        elif type_ == "device.back_in_service":
            self.covered.discard(key)
            self._up(key, ts)
        elif type_ == "device.fault_cleared" and p.get("still_held"):
            pass  # another fault of the device is still held: it stays down
        elif type_ in ("device.online", "device.fault_cleared"):
            if key not in self.covered:  # covered, it is out of order until back in service, online or not
                self._up(key, ts)
        elif type_ in ("device.offline", "device.unusable", "device.out_of_order"):
            if type_ == "device.out_of_order":
                self.covered.add(key)
            if p.get("restored") is True and key not in self.since:
                self._restored(key)
            self.since.setdefault(key, ts)
            self.down.setdefault(key, 0.0)

    def before_start(self, rows: list[tuple[Any, ...]]) -> None:
        """The archive's last word on each device before the period (LAST_BEFORE): one marked out of order or held
        then is down from the period's start, though nothing in the period says it again (no restart). None in a
        period not begun at the report's now: nothing of it is down yet, and a row of 0 s "down from before the
        period; still down" beside the report's notice that it has not begun read as a fault of the report."""
        if self.now is not None and self.now < self.start:
            return
        for table, device, type_, p in rows:
            key = (str(table), str(device))
            if type_ == "device.out_of_order":
                self.covered.add(key)
            if type_ in DOWN or (type_ == "device.fault_cleared" and isinstance(p, dict) and p.get("still_held")):
                self.since[key] = self.start
                self.before.add(key)
                self.down.setdefault(key, 0.0)

    def _restored(self, key: Key) -> None:
        """A restart said again a mark or hold it kept, and no stretch of the device is open: the original's goes on."""
        if key in self.ended:
            start, at = self.ended.pop(key)  # the hold never lifted: the stretch goes on from its start
            self.down[key] -= (at - start).total_seconds()
            self.since[key] = start
        else:  # nothing of it said in the period before: the original was said before the period began
            self.since[key] = self.start
            self.before.add(key)

    def _up(self, key: Key, ts: datetime) -> None:
        if key in self.since:
            start = self.since.pop(key)
            self.down[key] += (ts - start).total_seconds()
            self.ended[key] = (start, ts)

    @property
    def going(self) -> bool:
        """Whether the period is not over at the report's now: a stretch still open is counted to now."""
        return self.now is not None and self.now < self.end

    def rows(self) -> list[tuple[str, str, float, int, str, str]]:
        down = dict(self.down)
        until = self.now if self.going and self.now is not None else self.end
        for key, since in self.since.items():
            down[key] += max(0.0, (until - since).total_seconds())  # still down at the period's end, or now
        found = [
            (t, d, s, len(self.faults[(t, d)]), ", ".join(sorted(set(self.faults[(t, d)]))), _note(self, (t, d)))
            for (t, d), s in down.items()
        ]
        return sorted(found)


def _note(downtime: Downtime, key: Key) -> str:
    notes = [BEFORE] if key in downtime.before else []
    if downtime.going and key in downtime.since:
        notes.append(STILL)
    return "; ".join(notes)
