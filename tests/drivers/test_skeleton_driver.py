"""The skeleton driver (drivers/skeleton.py, docs/new-driver.md), loaded as a third-party driver is and driven over
a real pseudo-terminal against a tiny responder that speaks its line protocol.

tablectl does not register the skeleton itself; the test installs a package that does (entry point
`skeleton-shuffler`), so the driver is found and built exactly as a manufacturer's would be. The responder sits on
the master side of an os.openpty() pair, reachable under a stable name (a symlink, as a udev rule gives), so a
replug is a new pty under the same name.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tty
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from drivers.interfaces import DeviceFault, DeviceOffline, DeviceOnline, ShuffleCompleted, Shuffler
from drivers.registry import DriverConfigError, create_driver, installed_names

FAST = {"heartbeat_interval": 0.2, "reply_timeout": 0.2}  # a silent device is found out within 0.4 s


class Responder:
    """The made-up shuffler of drivers/skeleton.py: answers ID?, PING and SHUFFLE; says what a test tells it to."""

    def __init__(self, name: Path) -> None:
        self.name = name
        self.heard: list[str] = []
        self.deaf = False
        self._fds: tuple[int, int] | None = None
        self._buffer = b""

    def plug(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no CR/LF translation: the bytes as sent
        os.set_blocking(master, False)
        self._fds = master, slave  # the slave stays open here, so the master reads nothing but data
        self._buffer = b""
        asyncio.get_running_loop().add_reader(master, self._readable, master)
        self.name.unlink(missing_ok=True)
        self.name.symlink_to(os.ttyname(slave))

    def unplug(self) -> None:
        """Pull the cable: the pty closes and the stable name goes away."""
        if self._fds is None:
            return
        asyncio.get_running_loop().remove_reader(self._fds[0])
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = None
        self.name.unlink(missing_ok=True)

    def say(self, line: str) -> None:
        assert self._fds is not None
        os.write(self._fds[0], line.encode("ascii") + b"\r\n")

    def _readable(self, master: int) -> None:
        try:
            self._buffer += os.read(master, 4096)
        except OSError:
            return
        while b"\r\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\r\n", 1)
            self._answer(line.decode("ascii"))

    def _answer(self, line: str) -> None:
        self.heard.append(line)
        if self.deaf:
            return
        answers = {"ID?": "ID SKEL-1 SN0042 2.1", "PING": "PONG", "SHUFFLE": "DONE 52"}
        if line in answers:
            self.say(answers[line])


@pytest.fixture
async def responder(tmp_path: Path) -> AsyncIterator[Responder]:
    device = Responder(tmp_path / "ttyShuffler")
    device.plug()
    yield device
    device.unplug()


@pytest.fixture
def skeleton_installed(install_distribution: Callable[..., Path]) -> None:
    install_distribution("acme-shuffler", {"skeleton-shuffler": "drivers.skeleton:SkeletonShuffler"}, {})


def test_tablectl_itself_does_not_offer_the_skeleton() -> None:
    assert "skeleton-shuffler" not in installed_names()
    with pytest.raises(DriverConfigError, match="unknown driver 'skeleton-shuffler'"):
        create_driver("shuffler", {"driver": "skeleton-shuffler", "port": "/dev/ttyShuffler"})


async def test_skeleton_online_shuffle_fault_unplug_replug(
    skeleton_installed: None, responder: Responder, start_driver: Any
) -> None:
    assert "skeleton-shuffler" in installed_names()
    driver, events = await start_driver("shuffler", "skeleton-shuffler", str(responder.name), **FAST)
    assert isinstance(driver, Shuffler)
    online = await events.next(DeviceOnline)
    assert online.identity == {"model": "SKEL-1", "serial": "SN0042", "firmware": "2.1"}

    await driver.shuffle()
    assert (await events.next(ShuffleCompleted)).card_count == 52
    assert "SHUFFLE" in responder.heard

    responder.say("ERR jam card jam at the elevator")
    fault = await events.next(DeviceFault)
    assert (fault.code, fault.detail) == ("jam", "card jam at the elevator")
    responder.say("HELLO")
    assert (await events.next(DeviceFault)).code == "bad_message"

    responder.unplug()
    offline = await events.next(DeviceOffline)
    assert offline.device_id == "shuffler" and offline.reason
    await driver.shuffle()
    assert (await events.next(DeviceFault)).code == "offline"

    responder.plug()  # a new pty under the same stable name: the driver's backoff finds it
    assert (await events.next(DeviceOnline)).identity["serial"] == "SN0042"
    await driver.shuffle()
    assert (await events.next(ShuffleCompleted)).card_count == 52
    # One offline for the one unplug, however many times the driver looked for the port meanwhile.
    assert [type(e) for e in events.seen if isinstance(e, DeviceOnline | DeviceOffline)] == [
        DeviceOnline,
        DeviceOffline,
        DeviceOnline,
    ]


async def test_a_silent_device_goes_offline_by_heartbeat(
    skeleton_installed: None, responder: Responder, start_driver: Any
) -> None:
    _driver, events = await start_driver("shuffler", "skeleton-shuffler", str(responder.name), **FAST)
    await events.next(DeviceOnline)
    responder.deaf = True  # still plugged in: only the heartbeat can tell
    offline = await events.next(DeviceOffline)
    assert "PING" in offline.reason and "PING" in responder.heard
    responder.deaf = False
    await events.next(DeviceOnline)


async def test_stop_is_prompt_and_final(skeleton_installed: None, responder: Responder) -> None:
    driver = create_driver("shuffler", {"driver": "skeleton-shuffler", "port": str(responder.name), **FAST})
    seen: list[Any] = []
    await driver.start(seen.append)
    assert [type(e) for e in seen] == [DeviceOnline]  # start() returned once the device answered
    await asyncio.wait_for(driver.stop(), 1.0)
    responder.say("DONE 52")
    await asyncio.sleep(0.3)
    assert [type(e) for e in seen] == [DeviceOnline]
    await driver.stop()  # harmless twice
