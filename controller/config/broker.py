"""The broker's URL as a config or --broker gives it: `mqtt://host[:port]` or `mqtts://host[:port]`; and the broker's
packet limit, which every broker the project ships or starts uses."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

# mosquitto's `max_packet_size` in systemd/mosquitto/mosquitto.conf (tests/mqtt/test_broker_acl.py holds that file to
# this number), in the brokers the demo, dev.py, bench and the tests start, and the default of a table's
# `[mqtt] max_packet_size`: eight times the largest message a table sends (its birth, 8.3 KB; tools/message_sizes.py).
# A table checks every event and reply against it before publishing (controller.mqtt.limits).
MAX_PACKET_SIZE = 65536

_URL_EXAMPLE = "mqtt://127.0.0.1:1883 or mqtts://broker.casino.example:8883"


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    """The MQTT broker a table publishes to, from an mqtt:// or (TLS) mqtts:// URL."""

    host: str
    port: int
    tls: bool

    def __str__(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"


def parse_broker_address(url: str) -> BrokerAddress:
    """`mqtt://host[:port]` (port 1883) or `mqtts://host[:port]` (TLS, port 8883)."""

    def bad(problem: str) -> ValueError:
        return ValueError(f"bad MQTT broker URL {url!r}: {problem}; expected something like {_URL_EXAMPLE}")

    if "://" not in url:
        raise bad("missing the mqtt:// or mqtts:// scheme")
    parts = urlsplit(url)
    if parts.scheme not in ("mqtt", "mqtts"):
        raise bad(f"unsupported scheme {parts.scheme!r} (mqtt:// or, with TLS, mqtts://)")
    if parts.username is not None or parts.password is not None:
        # Credentials in a URL end up in logs and process listings; they belong in the config file.
        raise bad("credentials must not be embedded in the URL (use mqtt.username and mqtt.password_file)")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise bad("unexpected path, query or fragment")
    host = parts.hostname
    if not host:
        raise bad("missing host")
    try:
        port = parts.port
    except ValueError:
        raise bad("port is not a number between 1 and 65535") from None
    tls = parts.scheme == "mqtts"
    if port is None:
        port = 8883 if tls else 1883
    if not 1 <= port <= 65535:
        raise bad("port is not a number between 1 and 65535")
    return BrokerAddress(host, port, tls)
