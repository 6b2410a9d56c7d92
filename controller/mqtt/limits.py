"""The broker's packet limit, and what a message costs against it: one number for everything the project ships or
starts (the example broker config in systemd/mosquitto/, the demo's and the tests' private brokers, the table's own
check before it publishes), so tests and demos meet what production meets.

mosquitto refuses a packet whose size passes `max_packet_size` by disconnecting the client before it reads the rest
(systemd/mosquitto/mosquitto.conf says why this limit and not message_size_limit). A table that published such a
message would reconnect and send it again for ever, and nothing after it would go out: so the table measures every
event and reply against the limit first (docs/mqtt.md, "Too large for the broker").
"""

from __future__ import annotations

from controller.config.broker import MAX_PACKET_SIZE

__all__ = ["MAX_PACKET_SIZE", "fits", "publish_size"]


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
