"""How to reach the broker: the URL (mqtt:// or mqtts://), credentials and TLS, as aiomqtt.Client arguments.

Shared by everything that opens a broker connection (the event publisher, the supervisor-command listener,
`tablectl command`) so that TLS and credentials are configured once.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

from controller.config.broker import parse_broker_address
from controller.config.table import MqttSettings


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
