"""The bus simulator's damaged slot confirmation (BusStationSim.damaged_slots) is line noise to the host and nothing
more, whatever the GROUP frame's SEQ (random on a real line and in BusLink): the next station's pair, right behind it on
the return pair, is still its confirmation. Tests that damage station 3's pair expect station 3 alone to fall back."""

from __future__ import annotations

from drivers.reference.framing import Kind
from drivers.reference.group import slot_check, slot_confirmation
from drivers.reference.parser import FrameParser
from drivers.sim.wager_bus import damaged_check

ADDRESSES = range(11, 18)


def test_a_damaged_pair_costs_no_other_stations_pair_at_any_seq() -> None:
    for seq in range(256):
        for address in ADDRESSES[:-1]:
            check = slot_check(address, seq)
            assert damaged_check(check) != check
            parser = FrameParser()
            parser.open_slots(seq, ADDRESSES, 0)
            frames = parser.feed(bytes((address, damaged_check(check))) + slot_confirmation(address + 1, seq))
            assert [(f.kind, f.address) for f in frames] == [(Kind.SLOT, address + 1)], (seq, address)
            assert parser.awaits(address)
