"""The broker's packet limit, and what a message costs against it: one number for everything the project ships or
starts (the example broker config in systemd/mosquitto/, the demo's and the tests' private brokers, the table's own
check before it publishes), so tests and demos meet what production meets.

mosquitto refuses a packet whose size passes `max_packet_size` by disconnecting the client before it reads the rest
(systemd/mosquitto/mosquitto.conf says why this limit and not message_size_limit). A table that published such a
message would reconnect and send it again for ever, and nothing after it would go out: so the table measures every
event, reply and retained message against the limit first, and its birth at start (controller.cli.check_files)
(docs/mqtt.md, "Too large for the broker").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import structlog

from controller.config.broker import MAX_PACKET_SIZE
from controller.core.events import JournaledEvent
from controller.mqtt.messages import event_body

__all__ = [
    "MAX_PACKET_SIZE",
    "OVERSIZE_TILT",
    "Withheld",
    "fits",
    "oversize_tilt",
    "publish_size",
    "retained_oversize_tilt",
    "stale_reason",
    "within",
]

# The tilt of an event too large for the broker's packet limit (docs/mqtt.md, "Too large for the broker").
OVERSIZE_TILT = "tilt:oversize"


def publish_size(topic: str, payload_bytes: int) -> int:
    """A QoS 1 PUBLISH (MQTT 3.1.1 section 3.3, what aiomqtt sends by default) as mosquitto 2.0 holds it to
    max_packet_size: its first byte and its remaining length (topic length, topic, packet id, payload), read from
    the header before the rest is (tests/mqtt/test_broker_acl.py shows one of exactly this size passing and one byte
    more refused)."""
    return 1 + 2 + len(topic.encode()) + 2 + payload_bytes


def fits(topic: str, body: str, limit: int) -> tuple[bool, int]:
    """Whether `body` published on `topic` stays within `limit`, and its size as the broker counts it. A body of
    fewer characters than a quarter of the limit fits whatever its characters (UTF-8 takes at most four bytes each):
    the common case costs no encoding."""
    if 4 * len(body) + publish_size(topic, 0) <= limit:
        return True, publish_size(topic, len(body))  # an underestimate for non-ASCII text; it fits either way
    size = publish_size(topic, len(body.encode()))
    return size <= limit, size


def oversize_tilt(seq: int, type_: str, size: int, limit: int) -> tuple[str, str, str]:
    """The tilt an event too large for the broker raises: its name, the reason (which event, its size, the limit)
    and the remedy."""
    reason = (
        f"event seq {seq} ({type_}) is {size:,} bytes as published, over the broker's {limit:,}-byte packet limit "
        "([mqtt] max_packet_size): it is kept in the journal and not published, and the events after it go on"
    )
    remedy = (
        f"raise max_packet_size above {size:,} in the broker's config (systemd/mosquitto/mosquitto.conf) and [mqtt] "
        "max_packet_size in the table's, restart the table (the event is then published, flagged replayed), report "
        "the event's size to the developers, then a supervisor clears the tilt"
    )
    return OVERSIZE_TILT, reason, remedy


def retained_oversize_tilt(topic: str, size: int, limit: int, grown_by: str | None = None) -> tuple[str, str, str]:
    """The tilt a retained message too large for the broker raises (a birth grown by what the devices reported of
    themselves, a device status, a meter): not published, so the broker keeps the topic's last value, which is stale
    (the retained status says so while it is: stale_reason). `grown_by`: what grew it (a birth's: birth.growth)."""
    reason = (
        f"the retained message on {topic} is {size:,} bytes as published, over the broker's {limit:,}-byte packet "
        "limit ([mqtt] max_packet_size): it is not published, the topic keeps its last value, which is stale (the "
        "table's status says degraded while it is), and the events go on"
    )
    if grown_by:
        reason += f"; grown by {grown_by}"
    remedy = (
        f"raise max_packet_size above {size:,} in the broker's config (systemd/mosquitto/mosquitto.conf) and [mqtt] "
        "max_packet_size in the table's, restart the table, report the message's size to the developers"
        + (" (and the device whose identity grew it to its maker)" if grown_by else "")
        + ", then a supervisor clears the tilt"
    )
    return OVERSIZE_TILT, reason, remedy


def stale_reason(name: str, size: int, limit: int) -> str:
    """What the retained status says of a retained topic (`name`: birth, device/<id> ...) whose latest value is held
    back as too large: the value subscribers hold is not the table's, and why (docs/mqtt.md, "Too large for the
    broker")."""
    return (
        f"{name} stale: the broker keeps an earlier {name}, the table's latest ({size:,} bytes) is over the broker's "
        f"{limit:,}-byte packet limit and held back ({OVERSIZE_TILT})"
    )


class Withheld:
    """What a table held back this boot as too large for the broker: events by seq (they stay in the outbox, met
    again at each reconnect) and retained messages by topic (each reconnect republishes them); each tilts once."""

    def __init__(self, tilt: Callable[[str, str, str], object], log: structlog.typing.FilteringBoundLogger) -> None:
        self._tilt = tilt
        self._log = log
        self.seqs: set[int] = set()
        self.topics: set[str] = set()

    def event(self, ev: JournaledEvent, size: int, limit: int) -> None:
        """An event larger than the broker takes: kept in the journal and its outbox, unpublished (sent at a reconnect
        once the limit allows it), and the table tilts (oversize_tilt)."""
        if ev.seq not in self.seqs:
            self.seqs.add(ev.seq)
            self._log.error(
                "event too large for the broker: withheld", seq=ev.seq, type=ev.type, size=size, limit=limit
            )
            self._tilt(*oversize_tilt(ev.seq, ev.type, size, limit))

    def retained(self, topic: str, size: int, limit: int, grown_by: str | None = None) -> None:
        """A retained message larger than the broker takes (controller.mqtt.retainer held it back): the table tilts
        (retained_oversize_tilt); a later value that fits goes out as ever."""
        if topic not in self.topics:
            self.topics.add(topic)
            self._log.error(
                "retained message too large for the broker: withheld",
                topic=topic,
                size=size,
                limit=limit,
                grown_by=grown_by,
            )
            self._tilt(*retained_oversize_tilt(topic, size, limit, grown_by))


def within(
    batch: list[JournaledEvent],
    flags: list[bool],
    topic: str,
    limit: int,
    withheld: set[int],
    withhold: Callable[[JournaledEvent, int, int], None],
) -> Iterator[str]:
    """Each event's JSON (`flags`: replayed), built as it is taken: the first leaves before the last is built. One the
    broker would refuse (it would cost the connection, and again at every reconnect, with every event after it) is not
    given: its seq goes in `withheld` and `withhold(event, size, limit)` is told."""
    for ev, replayed in zip(batch, flags, strict=True):
        body = event_body(ev, replayed)
        ok, size = fits(topic, body, limit)
        if ok:
            yield body
        else:
            withheld.add(ev.seq)
            withhold(ev, size, limit)
