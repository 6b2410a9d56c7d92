"""A card found face up in the deck keyed on the USB HID dealer panel (.13(a), dealing from the hand): the report's
`face_up_byte` carries it (docs/usb-panel.md), the driver turns it into FaceUpCard as the serial panel's `face_up`
does, and the engine lays the round again without it. Through the pyusb backend double (tests/drivers/usb_double.py)
because CI has no USB panel; the engine is the real one, fed what the driver emitted."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest
from pydantic import ValidationError

from controller.engine.state import Phase
from drivers.interfaces import DeviceFault, DeviceOnline, FaceUpCard
from drivers.vendor.usb_panel import CARDS, UsbHidDealerPanel
from tests.drivers.usb_double import REPORT_SIZE, SETTINGS, FakeHidBackend, Recorder
from tests.engine.chapter_faults import cite, remedy, table

CARD_BYTE = 1  # byte 0 carries the buttons (SETTINGS: bits 0 and 1)

Start = Callable[[FakeHidBackend], Coroutine[Any, Any, Recorder]]


def keyed(value: int, buttons: int = 0) -> bytes:
    """A report with the buttons in byte 0 and `value` in the card's byte."""
    report = bytearray(REPORT_SIZE)
    report[0], report[CARD_BYTE] = buttons, value
    return bytes(report)


@pytest.fixture
async def started() -> AsyncIterator[Start]:
    panels: list[UsbHidDealerPanel] = []

    async def start(backend: FakeHidBackend) -> Recorder:
        settings = UsbHidDealerPanel.Settings.model_validate(SETTINGS | {"face_up_byte": CARD_BYTE})
        panel = UsbHidDealerPanel("dealer_panel", settings, backend=backend)
        panels.append(panel)
        events = Recorder()
        await panel.start(events)
        await events.next(DeviceOnline)
        return events

    yield start
    for panel in panels:
        await panel.stop()


def test_the_card_values_are_suit_by_suit_two_to_ace() -> None:
    assert (CARDS[0], CARDS[12], CARDS[13], CARDS[51], len(set(CARDS))) == ("2c", "Ac", "2d", "As", 52)


async def test_a_card_keyed_face_up_is_laid_out_of_the_deal_from_the_hand(started: Start) -> None:
    t = table("655a", "hand")
    t.press("no_more_bets")
    r = t.state.round
    assert t.state.phase is Phase.DEALT and r is not None
    order = list(t.state.deck_order)
    before = {n: list(st.cards) for n, st in r.seats.items()}
    backend = FakeHidBackend()
    events = await started(backend)
    backend.send(keyed(CARDS.index(order[1]) + 1))
    face_up = await events.next(FaceUpCard)
    assert face_up == FaceUpCard("dealer_panel", order[1])
    e = remedy(t.feed(face_up), "card.face_up_discarded")
    assert e.rule == cite("655a", "13(a)") and "one place earlier" in e.payload["remedy"]
    r = t.state.round
    assert r is not None and r.discarded == [order[1]] and order[1] not in r.dealt
    used = [c for c in order if c != order[1]]
    assert r.dealt == used[: len(r.dealt)]  # every later card one place earlier
    assert {n: list(st.cards) for n, st in r.seats.items()} != before


async def test_a_card_held_on_the_panel_is_keyed_once_and_buttons_still_work(started: Start) -> None:
    backend = FakeHidBackend()
    events = await started(backend)
    for _ in range(3):  # the panel repeats its report while the card is shown
        backend.send(keyed(52))
    backend.send(keyed(52, buttons=0b01))  # a button pressed while the card is still shown
    backend.send(keyed(0))
    backend.send(keyed(52))  # shown again after it was cleared: a second card
    backend.send(keyed(1))  # another card straight after
    assert await events.next(FaceUpCard) == FaceUpCard("dealer_panel", "As")
    assert [await events.next(FaceUpCard) for _ in range(2)] == [
        FaceUpCard("dealer_panel", "As"),
        FaceUpCard("dealer_panel", "2c"),
    ]
    assert sum(isinstance(e, FaceUpCard) for e in events.seen) == 3
    assert [e.button for e in events.seen if hasattr(e, "button")] == ["no_more_bets"]


async def test_a_value_that_is_no_card_is_a_bad_report_and_the_panel_goes_on(started: Start) -> None:
    backend = FakeHidBackend()
    events = await started(backend)
    backend.send(keyed(53))
    fault = await events.next(DeviceFault)
    assert fault.code == "bad_report" and "53 is no card" in fault.detail
    backend.send(keyed(13))
    assert await events.next(FaceUpCard) == FaceUpCard("dealer_panel", "Ac")


def test_the_card_byte_is_checked_against_the_report_and_the_buttons() -> None:
    with pytest.raises(ValidationError, match=r"face_up_byte = 8 lies outside a 8-byte report"):
        UsbHidDealerPanel.Settings.model_validate(SETTINGS | {"face_up_byte": 8})
    with pytest.raises(ValidationError, match=r"face_up_byte = 0 holds button bit\(s\) \[0, 1\]"):
        UsbHidDealerPanel.Settings.model_validate(SETTINGS | {"face_up_byte": 0})
    assert UsbHidDealerPanel.Settings.model_validate(SETTINGS).face_up_byte is None
