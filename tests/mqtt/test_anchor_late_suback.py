"""The retained-anchor read at start gives up after its bounded wait (docs/journal.md, "The anchor"; docs/mqtt.md,
`anchor`); a SUBACK the broker sends just after that must not put an error-level traceback in the operator's log
(aiomqtt's `Unexpected message ID "1" in on_subscribe callback`, aiomqtt issue #356).

A real mosquitto on loopback behind a tiny TCP proxy that holds the broker's SUBACK past the read's timeout. The
client's socket is closed once its DISCONNECT is written, so a late SUBACK is read only when it lands in the loop
turns between the timeout and that write: a window a busy start hits by chance. The test puts it there on purpose:
the client registers the DISCONNECT's writer through `loop.add_writer`, and the hook there lets the held SUBACK go
and waits until the client's socket can read it. Nothing is faked: the broker, the client and the sockets are real.
"""

from __future__ import annotations

import asyncio
import logging
import select
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from controller.config.table import MqttSettings
from controller.mqtt.anchor import read_retained_anchor
from tests.broker import Mosquitto
from tests.mqtt.suback_proxy import SubackHoldingProxy


@pytest.fixture
def proxy(mosquitto: Mosquitto) -> Iterator[SubackHoldingProxy]:
    p = SubackHoldingProxy(mosquitto.port)
    try:
        yield p
    finally:
        p.close()


def _late_suback_hook(loop: asyncio.AbstractEventLoop, proxy: SubackHoldingProxy) -> Callable[..., Any]:
    """loop.add_writer, but the writer registered once the SUBACK is held (the DISCONNECT's: the read has timed
    out) first lets the SUBACK go and waits until the client's socket has it to read."""
    add_writer = loop.add_writer

    def hooked(fd: int, callback: Callable[..., object], *args: object) -> None:
        if proxy.held.is_set() and not proxy.release.is_set():
            proxy.release.set()
            readable, _, _ = select.select([fd], [], [], 10.0)
            assert readable, "the released SUBACK never reached the client's socket"
        add_writer(fd, callback, *args)

    return hooked


async def test_a_suback_after_the_reads_timeout_leaves_no_traceback(
    proxy: SubackHoldingProxy, unique_id: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = asyncio.get_running_loop()
    monkeypatch.setattr(loop, "add_writer", _late_suback_hook(loop, proxy))
    caplog.set_level(logging.DEBUG)
    settings = MqttSettings(broker=f"mqtt://127.0.0.1:{proxy.port}", prefix="an")

    # The bounded wait as documented: no anchor read, the start goes on against the anchor file alone.
    assert await read_retained_anchor(settings, unique_id, within=2.0) is None

    assert proxy.held.is_set() and proxy.release.is_set(), "the broker's SUBACK was never held past the timeout"
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("mqtt")]
    assert not loud, [f"{r.levelname} {r.name}: {r.getMessage()}" for r in loud]
    assert not [r for r in caplog.records if r.exc_info], "a traceback reached the log"
    late = [r for r in caplog.records if "SUBACK" in r.getMessage() and r.name.startswith("mqtt")]
    assert late, "the late SUBACK did not reach the client: the race this test stages did not happen"
