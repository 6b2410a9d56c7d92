"""How to reach the broker: the URL (mqtt:// or mqtts://), credentials and TLS, as aiomqtt.Client arguments.

Shared by everything that opens a broker connection (the event publisher, the supervisor-command listener,
`tablectl command`) so that TLS and credentials are configured once.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from controller.config import MqttSettings

_URL_EXAMPLE = "mqtt://127.0.0.1:1883 or mqtts://broker.casino.example:8883"


@dataclass(frozen=True, slots=True)
class BrokerAddress:
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


def client_kwargs(settings: MqttSettings, broker_url: str | None = None) -> dict[str, Any]:
    """hostname, port, username, password and tls_context for aiomqtt.Client; `broker_url` overrides
    settings.broker (the --broker option). Raises ValueError naming the file when a secret cannot be read."""
    address = parse_broker_address(broker_url or settings.broker)
    kwargs: dict[str, Any] = {"hostname": address.host, "port": address.port}
    if settings.username is not None:
        kwargs["username"] = settings.username
        if settings.password_file is not None:
            kwargs["password"] = _read_secret(settings.password_file)
    if address.tls:
        kwargs["tls_context"] = tls_context(settings.ca_file, settings.cert_file, settings.key_file)
    return kwargs


def tls_context(ca_file: str | None, cert_file: str | None, key_file: str | None) -> ssl.SSLContext:
    """Verifies the broker's certificate and host name (against ca_file, else the system's CAs)."""
    try:
        ctx = ssl.create_default_context(cafile=ca_file)
        if cert_file is not None:
            ctx.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as err:
        raise ValueError(
            f"mqtt TLS files (ca_file={ca_file}, cert_file={cert_file}, key_file={key_file}) "
            f"cannot be used: {err}; check the paths and that they are PEM files"
        ) from None
    return ctx


def _read_secret(path: str) -> str:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise ValueError(
            f"mqtt.password_file {path}: {err.strerror}; create it with the table's broker "
            "password on its first line, readable by the tablectl user only"
        ) from None
    if not lines or not lines[0]:
        raise ValueError(f"mqtt.password_file {path} is empty: put the broker password on its first line")
    return lines[0]
