"""The table's retained topics besides status: birth, device/<id> and progressive/<level>, with their latest
values and which of them are due to be published.

Pure bookkeeping for the publisher (controller.mqtt.publisher), which sends what this says and reports back
what went out. The rule it keeps: a retained value never runs ahead of the events that explain it. Device
statuses and the birth's device identities follow events as they are published; meters wait until the outbox
is drained; after every reconnect everything is published again with its latest value.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.core.events import JournaledEvent
from controller.mqtt.birth import with_identities
from controller.mqtt.contract import Birth, DeviceStatus, ProgressiveMeter, Topics
from controller.mqtt.device_status import DeviceTracker


@dataclass(frozen=True, slots=True)
class Retained:
    """One retained message to publish; `value` is the model it was made from (to tell whether it is still the
    latest when it has gone out)."""

    topic: str
    value: Birth | DeviceStatus | ProgressiveMeter

    @property
    def body(self) -> str:
        return self.value.model_dump_json()


class RetainedTopics:
    def __init__(self, topics: Topics, boot_id: str, birth: Birth | None, started: str) -> None:
        self.topics = topics
        self.birth = birth
        self._birth_due = False
        # `birth` names the devices whose device/<id> topics start as "unknown" until this boot's events say more.
        self._devices = DeviceTracker(
            topics.table_id, boot_id, [d.device_id for d in birth.devices] if birth else [], started=started
        )
        self._meters: dict[str, ProgressiveMeter] = {}
        self._meters_due: set[str] = set()

    def set_meter(self, meter: ProgressiveMeter) -> None:
        """Keep this meter's latest values; it is due until published. A value replaced before it went out
        is never published."""
        if meter.table_id != self.topics.table_id:
            raise ValueError(
                f"progressive meter {meter.level!r} is for table {meter.table_id!r}, not this table "
                f"{self.topics.table_id!r}"
            )
        self._meters[meter.level] = meter
        self._meters_due.add(meter.level)

    def on_connect(self) -> list[Retained]:
        """What to publish at once after each (re)connect: the birth and every device status. They only ever
        reflect events already published, so they can go before the backlog; the meters wait for it."""
        out = [] if self.birth is None else [Retained(self.topics.birth, self.birth)]
        out += [Retained(self.topics.device(s.device_id), s) for s in self._devices.statuses()]
        # Meters wait for the backlog: one set during the outage must not arrive before the events that moved it.
        self._meters_due = set(self._meters)
        return out

    def after_event(self, ev: JournaledEvent) -> list[Retained]:
        """What an event just published changes at once: its device's status. A device's identity also makes
        the birth due (published once the outbox is drained: at start every device identifies itself, and one
        birth with all of them beats one per device)."""
        status = self._devices.apply(ev)
        if status is None:
            return []
        if ev.type == "device.online" and self.birth is not None:
            birth = with_identities(self.birth, self._devices.identities)
            if birth != self.birth:
                self.birth = birth
                self._birth_due = True
        return [Retained(self.topics.device(status.device_id), status)]

    def due(self) -> list[Retained]:
        """What waited for the outbox to be drained: a changed birth, then the meters by level."""
        out = [Retained(self.topics.birth, self.birth)] if self._birth_due and self.birth is not None else []
        out += [Retained(self.topics.progressive(level), self._meters[level]) for level in sorted(self._meters_due)]
        return out

    def sent(self, msg: Retained) -> None:
        """`msg` went out: it is no longer due, unless a newer value replaced it meanwhile."""
        if isinstance(msg.value, Birth):
            self._birth_due = self.birth is not msg.value
        elif isinstance(msg.value, ProgressiveMeter) and self._meters.get(msg.value.level) is msg.value:
            self._meters_due.discard(msg.value.level)
