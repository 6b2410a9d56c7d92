"""The floor listener's MQTT client (floor/intake.py, `Intake.listen`), built from the floor's configuration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiomqtt
import paho.mqtt.client as paho
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from floor.config import FloorConfig, read_secret


@dataclass
class Connack:
    """What the broker's last CONNACK said of the floor's session (aiomqtt keeps only its reason code)."""

    session_present: bool | None = None


def listener_client(config: FloorConfig, connack: Connack | None = None) -> aiomqtt.Client:
    """The listener's MQTT v5 client: a persistent session (fixed client id, no clean start, a long expiry) whose
    messages are acknowledged by hand, once archived (floor/writing.py). `connack` is given each CONNACK's
    session-present flag (floor/session_watch.py)."""
    m = config.mqtt
    address = m.address
    props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
    props.SessionExpiryInterval = m.session_expiry_s
    # How many unacknowledged messages the broker may have in flight to us: a whole batch.
    props.ReceiveMaximum = min(config.ingest.batch_max * 2, 65535)
    client = aiomqtt.Client(
        address.host,
        address.port,
        identifier=m.client_id,
        protocol=aiomqtt.ProtocolVersion.V5,
        clean_start=False,
        properties=props,
        username=m.username,
        password=read_secret(m.password_file, "mqtt.password_file"),
        tls_params=aiomqtt.TLSParameters(ca_certs=str(m.ca_file) if m.ca_file else None) if address.tls else None,
        keepalive=30,
    )
    # aiomqtt has no manual acknowledgement of its own; its paho client has. Set before connecting, since the
    # broker redelivers the session's queue right after CONNACK.
    client._client.manual_ack_set(True)
    if connack is not None:
        aiomqtt_on_connect = client._on_connect  # what aiomqtt set paho's on_connect to; it completes its connect

        def on_connect(
            c: paho.Client, userdata: Any, flags: paho.ConnectFlags, code: ReasonCode, props: Properties | None = None
        ) -> None:
            connack.session_present = flags.session_present
            aiomqtt_on_connect(c, userdata, flags, code, props)

        client._client.on_connect = on_connect
    return client


# MQTT v5 DISCONNECT reason 0x8E: the broker gave this client's session to another client with the same client id.
SESSION_TAKEN_OVER = 0x8E
UNSPECIFIED = 0x80  # paho's reason for a connection the broker closed without a DISCONNECT


def broker_lost(err: aiomqtt.MqttError, client_id: str) -> str:
    """Why the broker connection ended, for the log, the status line and the console: aiomqtt says only
    "Disconnected during message iteration", the broker's reason code is on its cause. A second floor service on
    this client id takes the session over (MQTT v5 reason 0x8E; mosquitto 2.0 closes the old connection without a
    reason, "Unspecified error"), and each takes it back from the other twice a second, for ever."""
    cause = err.__cause__
    rc = getattr(cause, "rc", None) if isinstance(cause, aiomqtt.MqttCodeError) else None
    value = getattr(rc, "value", rc)
    if value not in (SESSION_TAKEN_OVER, UNSPECIFIED):
        return f"{err} ({cause})" if cause is not None else str(err)
    said = "session taken over" if value == SESSION_TAKEN_OVER else "if this repeats every second"
    return (
        f"{err} ({cause}): {said}: another client connected with this [mqtt] client_id ({client_id!r}), as a "
        "second floor service on this config does; stop it (`systemctl status tablectl-floor` on each floor host, "
        "`pgrep -af 'tablectl.*floor'`): two floors on one session each archive part of it"
    )
