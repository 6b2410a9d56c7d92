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
import time
import tty
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from drivers.interfaces import DeviceFault, DeviceOffline, DeviceOnline, ShuffleCompleted, Shuffler
from drivers.registry import DriverConfigError, create_driver, installed_names
from drivers.skeleton import BadLine, SkeletonShuffler, SkeletonShufflerSettings, printable_line
from tests.drivers.loop_pauses import LoopPauses

FAST = {"heartbeat_interval": 0.2, "reply_timeout": 0.2}  # a silent device is found out within 0.4 s
# Heartbeats as often, the answer to ID? or PING given the driver's default second: the responder shares this process,
# so a stall of it (a loaded machine, tools/stall.py's SIGSTOP) past 0.2 s held its answer and took it offline where a
# test asserts it stayed online. Only the heartbeat's own test needs a silent device found out fast.
STEADY = {"heartbeat_interval": 0.2, "reply_timeout": 1.0}


def steady(pauses: LoopPauses) -> bool:
    """Whether the strict "never offline" holds: no pause of this process (where the responder answers too) reached
    half the 1 s reply timeout. Under tools/stall.py at load 10 a whole second with no loop turn was seen once (Part
    61): the PING's answer then rightly came too late, and the device went offline and came back."""
    return pauses.longest < STEADY["reply_timeout"] / 2


# Every character isdigit() takes but 0-9 (a superscript two: int() raises; an Arabic-Indic one: int() reads 1).
NON_ASCII_DIGITS = [c for c in map(chr, range(0x110000)) if c.isdigit() and not c.isascii()]
NOT_A_COUNT = "DONE without a card count in ASCII digits (e.g. DONE 52)"
ASCII_WHITESPACE = b" \t\n\r\x0b\x0c"  # what bytes.strip() takes from a line's ends
# Every byte a line may not carry: C0 controls (U+001C..U+001F, which str.split() took for spaces, among them), DEL
# and every byte of another encoding.
NOT_PRINTABLE = [b for b in range(256) if not 0x20 <= b <= 0x7E]


class Responder:
    """The made-up shuffler of drivers/skeleton.py: answers ID?, PING and SHUFFLE; says what a test tells it to."""

    def __init__(self, name: Path) -> None:
        self.name = name
        self.heard: list[str] = []
        self.deaf = False
        self.identity = b"ID SKEL-1 SN0042 2.1"
        self._fds: tuple[int, int] | None = None
        self._buffer = b""
        # Seconds this process stalls right after the next answer to `stall_after[0]` is on the line: the host's
        # stall (a GC pause, a loaded machine) while a real device's answer arrives. Each answer heard is counted.
        self.stall_after: tuple[str, float] | None = None
        self.answered: Counter[str] = Counter()
        self.answer_seen = asyncio.Event()

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
        self.say_bytes(line.encode("ascii"))

    def say_bytes(self, line: bytes) -> None:
        """A line as a faulty (or differently encoded) device puts it on the wire."""
        assert self._fds is not None
        os.write(self._fds[0], line + b"\r\n")

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
        answers = {"ID?": self.identity, "PING": b"PONG", "SHUFFLE": b"DONE 52"}
        if line in answers:
            self.say_bytes(answers[line])
            self.answered[line] += 1
            self.answer_seen.set()
            if self.stall_after is not None and self.stall_after[0] == line:
                time.sleep(self.stall_after[1])  # the whole process stalls, as a SIGSTOP would: not a wait
                self.stall_after = None


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
    pauses = LoopPauses()
    driver, events = await start_driver("shuffler", "skeleton-shuffler", str(responder.name), **STEADY)
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
    await pauses.stop()
    changes = [type(e) for e in events.seen if isinstance(e, DeviceOnline | DeviceOffline)]
    assert changes[::2] == [DeviceOnline] * len(changes[::2]) and DeviceOnline not in changes[1::2], changes
    # One offline for the one unplug, however many times the driver looked for the port meanwhile; more only if a
    # stall of this process (tools/stall.py's SIGSTOP at load 10) held the responder's answer near the reply timeout.
    if steady(pauses):
        assert changes == [DeviceOnline, DeviceOffline, DeviceOnline], pauses.longest


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


@pytest.mark.parametrize("stalled", ["ID?", "PING"])
async def test_an_answer_that_came_while_the_host_stalled_is_read_not_taken_for_silence(
    skeleton_installed: None, responder: Responder, start_driver: Any, stalled: str
) -> None:
    """The device answers in time, then this process stalls past the reply timeout before the driver read the answer:
    the timer and the read are due in the same turn of the loop, the timer first. The answer is the driver's all the
    same (as the reference host reads its port before it resends, docs/protocol.md section 4): the device stays
    online. Before, it went offline ("no answer to PING within 0.2 s") and came back after the backoff."""
    responder.stall_after = (stalled, 0.4)  # twice the reply timeout, after the answer is on the line
    pauses = LoopPauses()
    driver, events = await start_driver("shuffler", "skeleton-shuffler", str(responder.name), **FAST)
    await events.next(DeviceOnline)
    async with asyncio.timeout(5):
        while responder.answered["PING"] < 2:  # past the stalled PING's answer and the one after it
            responder.answer_seen.clear()
            await responder.answer_seen.wait()
    await pauses.stop()
    assert responder.stall_after is None  # the stall happened
    while not events.queue.empty():
        events.seen.append(events.queue.get_nowait())
    kinds = [type(e) for e in events.seen]
    assert kinds[:1] == [DeviceOnline] and DeviceFault not in kinds
    # A stall of this process besides the test's own (tools/stall.py's SIGSTOP) holds the responder's next answer
    # too, which the driver rightly finds missing: only then may the device have gone offline and come back.
    if len([p for p in pauses.over_20ms if p >= FAST["reply_timeout"] / 2]) <= 1:
        assert driver.online and kinds == [DeviceOnline], pauses.over_20ms


async def test_stop_is_prompt_and_final(skeleton_installed: None, responder: Responder) -> None:
    driver = create_driver("shuffler", {"driver": "skeleton-shuffler", "port": str(responder.name), **STEADY})
    seen: list[Any] = []
    pauses = LoopPauses()
    await driver.start(seen.append)
    await pauses.stop()
    # start() returned once the device answered, or, after a stall of this process past the reply timeout (the
    # responder held with the driver: tools/stall.py on a loaded machine), once the first try found it silent.
    if steady(pauses):
        assert [type(e) for e in seen] == [DeviceOnline], pauses.longest
    kinds = [type(e) for e in seen]
    await asyncio.wait_for(driver.stop(), 1.0)
    responder.say("DONE 52")
    await asyncio.sleep(0.3)
    assert [type(e) for e in seen] == kinds and len(kinds) == 1  # nothing after stop(), not even the DONE
    await driver.stop()  # harmless twice


async def test_a_done_without_ascii_digits_is_logged_refused_and_the_driver_reads_on(
    skeleton_installed: None, responder: Responder, start_driver: Any
) -> None:
    """`DONE \\u00b2` (a superscript two) as UTF-8 and as latin-1, Arabic-Indic digits and a count in words, over
    the real pty: each is a logged bad_message fault naming the byte or the fix, no count is read from them, and the
    next good line is served."""
    pauses = LoopPauses()
    driver, events = await start_driver("shuffler", "skeleton-shuffler", str(responder.name), **STEADY)
    await events.next(DeviceOnline)
    bad = {
        "DONE \u00b2".encode(): "byte 0xc2 at offset 5 is not printable ASCII (0x20-0x7e): b'DONE \\xc2\\xb2'",
        "DONE \u00b2".encode("latin-1"): "byte 0xb2 at offset 5 is not printable ASCII (0x20-0x7e): b'DONE \\xb2'",
        "DONE \u0665\u0662".encode(): "byte 0xd9 at offset 5 is not printable ASCII (0x20-0x7e): b'DONE ",
        b"DONE fifty-two": f"{NOT_A_COUNT}: 'DONE fifty-two'",
    }
    with capture_logs() as logs:
        for line, detail in bad.items():
            responder.say_bytes(line)
            fault = await events.next(DeviceFault)
            assert (fault.code, fault.device_id) == ("bad_message", "shuffler")
            assert fault.detail.startswith(detail)
        responder.say("DONE 52")
        assert (await events.next(ShuffleCompleted)).card_count == 52
    refused = [e for e in logs if e["event"] == "refused a line from the device"]
    assert [(e["log_level"], e["device"]) for e in refused] == [("warning", "shuffler")] * len(bad)
    assert [e["detail"][:40] for e in refused] == [detail[:40] for detail in bad.values()]
    # No count was read from the bad lines, and the line stayed up throughout (no offline, no reconnect).
    assert [e.card_count for e in events.seen if isinstance(e, ShuffleCompleted)] == [52]
    await pauses.stop()
    if steady(pauses):  # else the responder's answer to a PING was held with the driver: see steady()
        assert driver.online and not [e for e in events.seen if isinstance(e, DeviceOffline)], pauses.longest


async def test_a_separator_byte_is_refused_not_read_as_a_space(
    skeleton_installed: None, responder: Responder, start_driver: Any
) -> None:
    """U+001C..U+001F are spaces to str.split() and str.strip(): `\\x1cDONE 52` was a count of 52 and
    `ERR jam\\x1fdetail` a fault with code 'jam\\x1fdetail'. Each is now a bad_message naming the byte."""
    pauses = LoopPauses()
    driver, events = await start_driver("shuffler", "skeleton-shuffler", str(responder.name), **STEADY)
    await events.next(DeviceOnline)
    bad = {
        b"\x1cDONE 52": "byte 0x1c at offset 0",
        b"DONE\x1d52": "byte 0x1d at offset 4",
        b"DONE 5\x1e2": "byte 0x1e at offset 6",
        b"ERR jam\x1fcard jam": "byte 0x1f at offset 7",
        b"DONE 52\x7f": "byte 0x7f at offset 7",
    }
    for line, where in bad.items():
        responder.say_bytes(line)
        fault = await events.next(DeviceFault)
        assert fault.code == "bad_message"
        assert fault.detail == f"{where} is not printable ASCII (0x20-0x7e): {line!r}"
    responder.say("DONE 52")
    assert (await events.next(ShuffleCompleted)).card_count == 52
    assert [e.card_count for e in events.seen if isinstance(e, ShuffleCompleted)] == [52]
    await pauses.stop()
    if steady(pauses):  # else the responder's answer to a PING was held with the driver: see steady()
        assert driver.online and not [e for e in events.seen if isinstance(e, DeviceOffline)], pauses.longest


async def test_an_identity_with_a_separator_byte_is_no_identity(
    skeleton_installed: None, responder: Responder, start_driver: Any
) -> None:
    """`ID\\x1cSKEL-1 SN0042 2.1` split into four words and put the device online; now it is offline, saying why."""
    responder.identity = b"ID\x1cSKEL-1 SN0042 2.1"
    driver, events = await start_driver("shuffler", "skeleton-shuffler", str(responder.name), **STEADY)
    offline = await events.next(DeviceOffline)
    assert offline.reason == (
        "not an identity: byte 0x1c at offset 2 is not printable ASCII (0x20-0x7e): b'ID\\x1cSKEL-1 SN0042 2.1'"
    )
    assert not driver.online and not [e for e in events.seen if isinstance(e, DeviceOnline)]
    responder.identity = b"ID SKEL-1 SN0042 2.1"  # the device fixed: the backoff finds it
    assert (await events.next(DeviceOnline)).identity["model"] == "SKEL-1"


_WORD = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=8)


@given(
    st.lists(_WORD, min_size=1, max_size=5),
    st.sampled_from(NOT_PRINTABLE),
    st.data(),
    st.text(st.sampled_from(" \t"), max_size=2),
)
def test_a_line_is_printable_ascii_words(words: list[str], byte: int, data: st.DataObject, pad: str) -> None:
    """Printable ASCII with ASCII whitespace around it reads as itself; one byte outside 0x20-0x7e anywhere inside it
    (at its ends too, unless bytes.strip() takes it as whitespace) is refused, naming the byte and where it is."""
    text = " ".join(words)
    assert printable_line(f"{pad}{text}{pad}\r\n".encode()) == text
    inner = byte in ASCII_WHITESPACE  # stripped at an end: inside the line only
    if inner and len(text) < 2:
        return
    offset = data.draw(st.integers(1, len(text) - 1) if inner else st.integers(0, len(text)))
    line = text.encode()[:offset] + bytes([byte]) + text.encode()[offset:]
    with pytest.raises(BadLine) as err:
        printable_line(pad.encode() + line + b"\r\n")
    assert str(err.value) == f"byte 0x{byte:02x} at offset {offset} is not printable ASCII (0x20-0x7e): {line!r}"
    assert err.value.line == line


@given(st.lists(st.sampled_from([*NON_ASCII_DIGITS, *"0123456789"]), min_size=1, max_size=6))
def test_done_takes_a_count_in_ascii_digits_only(digits: list[str]) -> None:
    """_handle on its own, for text a copy of the skeleton that decodes latin-1 or UTF-8 would pass it (the real
    _read_line turns non-ASCII bytes into U+FFFD first): never raises, and reads a count only from 0-9."""
    driver = SkeletonShuffler("shuffler", SkeletonShufflerSettings(port="/dev/ttyShuffler"))
    seen: list[Any] = []
    driver._sink = seen.append  # what start() sets; no port is opened for a single line
    rest = "".join(digits)
    driver._handle(f"DONE {rest}")
    if rest.isascii():
        assert seen == [ShuffleCompleted("shuffler", card_count=int(rest))]
    else:
        assert [(type(e), e.code) for e in seen] == [(DeviceFault, "bad_message")]
        assert seen[0].detail == f"{NOT_A_COUNT}: {'DONE ' + rest!r}"
