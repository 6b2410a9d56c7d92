"""Each device's retained status (<prefix>/<table_id>/device/<id>), derived from the journaled device events.

The status is computed from the events as they are published, so it never runs ahead of the event stream: a
supervisor who sees `device/shoe` offline has already been sent the `device.offline` event that says why. Only
this boot's events count: an event replayed from before a restart describes a device the daemon has since
restarted, and it says nothing about the device now.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from controller.core.events import JournaledEvent
from controller.mqtt.contract import DeviceState, DeviceStatus

_TOPIC_LEVEL = re.compile(r"^[A-Za-z0-9_\-]+$")

# Event type -> the payload key naming the device: the driver-level events say device_id, the engine's
# 13(g) events say device.
DEVICE_EVENTS = {
    "device.online": "device_id",
    "device.offline": "device_id",
    "device.fault": "device_id",
    "device.unusable": "device",
    "device.fault_cleared": "device",
    "device.out_of_order": "device",
    "device.back_in_service": "device",
}


# A status's texts (reason, fault code and detail) are cut to this many characters: a status stays far under the
# broker's packet limit whatever a device or an event says (the event carries the whole text).
MAX_TEXT = 1000


def _text(value: object) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "\u2026"


class DeviceTracker:
    """Pure bookkeeping: feed it published events in seq order, read back the statuses they changed."""

    def __init__(self, table_id: str, boot_id: str, device_ids: Iterable[str], started: str) -> None:
        self._table_id = table_id
        self._boot_id = boot_id
        self._started = started
        self._status: dict[str, DeviceStatus] = {}
        self.identities: dict[str, dict[str, str]] = {}
        for dev in device_ids:
            if _TOPIC_LEVEL.fullmatch(dev):
                self._status[dev] = self._unknown(dev)

    def _unknown(self, device_id: str) -> DeviceStatus:
        return DeviceStatus(
            table_id=self._table_id,
            boot_id=self._boot_id,
            device_id=device_id,
            online=None,
            state="unknown",
            since=self._started,
        )

    def statuses(self) -> list[DeviceStatus]:
        return list(self._status.values())

    def apply(self, ev: JournaledEvent) -> DeviceStatus | None:
        """The device status this event changed, or None when it is not about a device of this boot."""
        key = DEVICE_EVENTS.get(ev.type)
        if key is None or ev.boot_id != self._boot_id:
            return None
        p: Mapping[str, Any] = ev.payload
        dev = p.get(key)
        if not isinstance(dev, str) or not _TOPIC_LEVEL.fullmatch(dev):
            return None  # an id that cannot be a topic level is not published as one (the event still is)
        old = self._status.get(dev) or self._unknown(dev)
        if old.seq is not None and ev.seq <= old.seq:
            return None  # met again (an event withheld as too large, read again at a reconnect): never goes back
        new = self._next(old, ev, p)
        self._status[dev] = new
        return new

    def _next(self, old: DeviceStatus, ev: JournaledEvent, p: Mapping[str, Any]) -> DeviceStatus:
        changes: dict[str, Any] = {"seq": ev.seq}
        state: DeviceState = old.state
        kept = old.state == "out_of_order"  # covered by another method until it is back in service
        match ev.type:
            case "device.online":
                identity = p.get("identity")
                if isinstance(identity, Mapping):
                    self.identities[old.device_id] = {str(k): str(v) for k, v in identity.items()}
                changes |= {"online": True, "fault_code": None, "fault_detail": None, "fault_at": None}
                if not kept:
                    state = "online"
                    changes |= {"reason": None, "rule": None}
            case "device.offline":
                changes["online"] = False
                if not kept:
                    state = "offline"
                    changes |= {"reason": _text(p.get("reason")) or None, "rule": None}
            case "device.fault":
                changes |= {
                    "fault_code": _text(p.get("code")),
                    "fault_detail": _text(p.get("detail")) or None,
                    "fault_at": ev.ts,
                }
            case "device.unusable":
                if not kept:
                    state = "unusable"
                    changes |= {"reason": _text(p.get("reason")), "rule": ev.rule}
            case "device.fault_cleared" if not kept and not p.get("still_held"):
                # The device said its last held fault is cleared: usable again, as at its identification.
                state = "unknown" if old.online is None else "online" if old.online else "offline"
                changes |= {"reason": None, "rule": ev.rule, "fault_code": None, "fault_detail": None, "fault_at": None}
            case "device.out_of_order":
                state = "out_of_order"
                changes |= {"reason": _text(p.get("reason")), "rule": ev.rule}
            case "device.back_in_service":
                state = "unknown" if old.online is None else "online" if old.online else "offline"
                changes |= {"reason": None, "rule": ev.rule, "fault_code": None, "fault_detail": None, "fault_at": None}
        if state != old.state:
            changes |= {"state": state, "since": ev.ts}
        # Validated (not model_copy): a status is only ever published in a form the contract accepts.
        return DeviceStatus.model_validate(old.model_dump() | changes)
