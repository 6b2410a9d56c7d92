"""A sim script's clear `when = "ping n"` counts the heartbeats since the device's own fault report, the point a
script writer sees (docs/protocol.md, "Sim scripts"); a fault's `ping n` still counts from the simulator's start.
Before, a clear's count ran from the start too: here the clear at "ping 2" went out before the jam it was for (the jam
is reported at ping 3), was ignored, and the jam was never cleared. Real pty and the reference shoe driver, its
heartbeat every 20 ms so the pings come quickly; the events it reports pace the test."""

from __future__ import annotations

from drivers.interfaces import DeviceFault, DeviceFaultCleared, DeviceOnline
from drivers.registry import create_driver
from drivers.sim.faults import Fault, FaultKind
from drivers.sim.shoe import ShoeSim
from tests.drivers.conftest import Recorder


async def test_a_clears_ping_count_starts_at_the_devices_fault_report() -> None:
    sim = ShoeSim("shoe")
    await sim.start()
    shoe = create_driver("shoe", {"driver": "reference-shoe", "port": sim.port, "heartbeat_interval": 0.02})
    heard = Recorder()
    try:
        await sim.inject(Fault(FaultKind.JAM, report=True), "ping 3")
        await sim.clear_at("jam", "ping 2", "taken out by hand")
        await shoe.start(heard)
        await heard.next(DeviceOnline)
        fault = await heard.next(DeviceFault)
        pings_at_fault = sim._counts["ping"]
        cleared = await heard.next(DeviceFaultCleared)
        pings_at_clear = sim._counts["ping"]
    finally:
        await shoe.stop()
        await sim.stop()
    assert fault.code == "jam" and cleared.code == "jam" and cleared.detail == "taken out by hand"
    assert [type(e) for e in heard.seen if isinstance(e, (DeviceFault, DeviceFaultCleared))] == [
        DeviceFault,
        DeviceFaultCleared,
    ]
    assert pings_at_fault == 3 and pings_at_clear == 5, (pings_at_fault, pings_at_clear)
