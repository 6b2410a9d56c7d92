"""How to reach the broker: the URL (mqtt:// or mqtts://), credentials and TLS, as aiomqtt.Client arguments.

Shared by everything that opens a broker connection (the event publisher, the supervisor-command listener,
`tablectl command`) so that TLS and credentials are configured once.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Awaitable
from typing import Any, TypeVar

import aiomqtt

from controller.config.broker import parse_broker_address
from controller.config.files import PEM_MAX_BYTES, SECRET_MAX_BYTES, FileRefused, read_bounded
from controller.config.table import MqttSettings
from controller.core.spaces import first_line

T = TypeVar("T")

# Every broker connection sends small messages that wait on an answer (a reply, a PUBACK): with Nagle's algorithm
# on, each would sit until the broker's delayed ACK (40 ms), 25 commands a second at most.
NO_DELAY = ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),)


def parse_broker_url(url: str) -> tuple[str, int]:
    """Split `mqtt://host[:port]` (or mqtts://) into (host, port); ValueError saying what is wrong with it."""
    address = parse_broker_address(url)
    return address.host, address.port


def client_kwargs(settings: MqttSettings, broker_url: str | None = None) -> dict[str, Any]:
    """hostname, port, username, password, tls_context and socket_options (TCP_NODELAY) for aiomqtt.Client;
    `broker_url` overrides settings.broker (the --broker option). Raises ValueError naming the file when a
    secret cannot be read."""
    address = parse_broker_address(broker_url or settings.broker)
    kwargs: dict[str, Any] = {"hostname": address.host, "port": address.port, "socket_options": NO_DELAY}
    if settings.username is not None:
        kwargs["username"] = settings.username
        if settings.password_file is not None:
            kwargs["password"] = read_secret(settings.password_file)
    if address.tls:
        kwargs["tls_context"] = tls_context(settings.ca_file, settings.cert_file, settings.key_file)
    return kwargs


def tls_context(ca_file: str | None, cert_file: str | None, key_file: str | None) -> ssl.SSLContext:
    """Verifies the broker's certificate and host name (against ca_file, else the system's CAs)."""
    for field, path in (("ca_file", ca_file), ("cert_file", cert_file), ("key_file", key_file)):
        if path is not None:
            try:  # read once within bounds, so ssl (which reads by path, without a bound) never meets a FIFO
                read_bounded(path, PEM_MAX_BYTES)
            except FileRefused as err:
                raise ValueError(f"mqtt.{field} {err}; give the PEM file's path") from None
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


def broker_fix(error: str) -> str:
    """What an operator does about a broker that cannot be reached, from the connection error's text: the warning's
    `error` names the problem and this names the fix. The journal keeps every event meanwhile (docs/mqtt.md)."""
    text = error.lower()
    if "authori" in text or "password" in text or "bad user" in text:
        return (
            "the broker refused this table's credentials: check [mqtt] username and password_file against the "
            "broker's password file and ACL"
        )
    if "ssl" in text or "certificate" in text or "tls" in text:
        return "the TLS handshake failed: check [mqtt] ca_file, cert_file and key_file against the broker's certificate"
    if "refused" in text or "name or service" in text or "unreachable" in text or "timed out" in text:
        return (
            "no broker answers at that address: start it (systemctl start mosquitto) or point [mqtt] broker "
            "(or --broker) at the one that runs"
        )
    return "check [mqtt] broker (or --broker) and the broker's own log"


def read_secret(path: str) -> str:
    """The broker password: the first line of `path`. ValueError naming the file and the fix otherwise."""
    fix = "create it with the table's broker password on its first line, readable by the tablectl user only"
    try:
        # first_line, not splitlines(): that also ends a line at U+001C..U+001E, U+0085, U+2028 and U+2029, and cut a
        # password holding one there (the broker then refused it).
        line = first_line(read_bounded(path, SECRET_MAX_BYTES).decode("utf-8"))
    except FileRefused as err:
        raise ValueError(f"mqtt.password_file {err}; {fix}") from None
    except UnicodeDecodeError:
        raise ValueError(f"mqtt.password_file {path} is not UTF-8 text; {fix}") from None
    if not line:
        raise ValueError(f"mqtt.password_file {path}: its first line is empty; put the broker password there")
    return line


# -- a session's lost connection ------------------------------------------------------------------------------
# aiomqtt only reports a lost connection to pending operations or the message iterator. A session watches the
# iterator (`until_lost`) and races each operation against it (`guard`), so that an idle client notices the loss
# at once and an operation whose answer will never come fails immediately instead of waiting for its timeout.


async def until_lost(client: aiomqtt.Client) -> None:
    """Returns never; raises MqttError when the connection is lost (for a client subscribed to nothing, the
    message iterator only ever ends that way)."""
    async for _ in client.messages:
        pass
    raise aiomqtt.MqttError("disconnected")


async def guard(lost: asyncio.Future[None], op: Awaitable[T]) -> T:
    """`op`'s result, or the MqttError that ended the connection (`lost`, from until_lost) first."""
    task = asyncio.ensure_future(op)
    try:
        await asyncio.wait((task, lost), return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        task.cancel()
        raise
    if task.done():
        return task.result()
    task.cancel()
    lost.result()  # raises the MqttError that ended the connection
    raise aiomqtt.MqttError("disconnected")


# aiomqtt's wording of a SUBACK/UNSUBACK for a message ID no call awaits (aiomqtt 2.x client.py)
_LATE_ACKS = {
    'Unexpected message ID "%d" in on_subscribe callback': "SUBACK",
    'Unexpected message ID "%d" in on_unsubscribe callback': "UNSUBACK",
}


class _LateAcksAreNotErrors(logging.Filter):
    """aiomqtt logs a SUBACK (or UNSUBACK) whose subscribe is no longer awaited at error level, with a KeyError
    traceback (aiomqtt issue #356). That happens when the subscribe was given up, its timeout passed or its task
    cancelled, and the broker's answer came in the loop turns before the connection closed: the retained-anchor
    read at start, bounded by READ_WITHIN, is one such. Whoever gave up has logged why already; the answer itself
    changes nothing, so it is kept as one info line without the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        ack = _LATE_ACKS.get(str(record.msg))
        if ack is not None:
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg = f"a {ack} came for message ID %d, whose wait was given up (timed out or cancelled): ignored"
            record.exc_info, record.exc_text = None, None
        return True


def quiet_late_acks() -> None:
    """Install the filter on aiomqtt's logger (idempotent)."""
    mqtt = logging.getLogger("mqtt")
    if not any(isinstance(f, _LateAcksAreNotErrors) for f in mqtt.filters):
        mqtt.addFilter(_LateAcksAreNotErrors())
