"""Broker drops, stalls and a SIGSTOPped broker: one warning each, never an error-level traceback.

The publisher and the listener already log a lost connection as a warning and reconnect. What reached the log at
error level besides came from asyncio's default exception handler: a paho socket callback run after the socket
was closed ("add_writer: bad file descriptor", as aiomqtt re-registers a writer for a dead socket) and a future's
exception that the connection's end left unretrieved. Those are the connection's end told again, harmless to the
data (the outbox keeps every event until its PUBACK), but they trip anyone who alerts on error-level logs. This
handler turns exactly those into one warning per kind and minute, and leaves everything else to asyncio's own
handler (docs/supervision.md, "Logs").
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import aiomqtt
import structlog

from controller.mqtt.connection import quiet_late_acks

log = structlog.get_logger("tablectl.mqtt")

REPEAT_SECONDS = 60.0  # the same kind of noise is logged at most once per this long


def _connection_noise(context: dict[str, Any]) -> str | None:
    """What kind of connection noise `context` is, or None when it is something else (a real error)."""
    err = context.get("exception")
    message = str(context.get("message", ""))
    if isinstance(err, aiomqtt.MqttError):
        return "an MQTT operation failed as its connection ended"
    if isinstance(err, OSError | ValueError) and "file descriptor" in f"{err} {message}".lower():
        return "a socket callback ran after its socket was closed"
    if isinstance(err, ConnectionError | TimeoutError) and "never retrieved" in message:
        return "a connection's last operation failed unobserved"
    return None


def quiet_connection_noise(loop: asyncio.AbstractEventLoop) -> None:
    """Install the handler on `loop` (the daemon's), in front of whatever handler it had."""
    previous = loop.get_exception_handler()
    last: dict[str, float] = {}

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        kind = _connection_noise(context)
        if kind is None:
            if previous is not None:
                previous(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        now = time.monotonic()
        if now - last.get(kind, float("-inf")) >= REPEAT_SECONDS:
            last[kind] = now
            log.warning("mqtt connection noise after a broker drop", what=kind, detail=str(context.get("exception")))

    loop.set_exception_handler(handler)
    quiet_mqtt_library_logs()


class _SocketDropsAreWarnings(logging.Filter):
    """paho (through aiomqtt's "mqtt" logger) reports a connection reset by the broker at error level; the
    publisher and the listener report the same drop as a warning and reconnect, so this is a warning too."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and str(record.msg).startswith(
            ("failed to receive on socket", "failed to send")
        ):
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def quiet_mqtt_library_logs() -> None:
    mqtt = logging.getLogger("mqtt")
    if not any(isinstance(f, _SocketDropsAreWarnings) for f in mqtt.filters):
        mqtt.addFilter(_SocketDropsAreWarnings())
    quiet_late_acks()  # the command listener's subscribe given up at a broker drop, as the anchor read's
