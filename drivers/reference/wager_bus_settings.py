"""The settings of a reference wager bus (`reference-wager-bus`): the line, its stations and how they are locked."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class BusStationSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    seat: int = Field(ge=1, description="Seat (betting position) this station senses")
    address: int | None = Field(default=None, ge=1, le=254, description="Address on the line; default: the seat")

    @property
    def bus_address(self) -> int:
        return self.seat if self.address is None else self.address


class ReferenceWagerBusSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    driver: Literal["reference-wager-bus"] = "reference-wager-bus"
    port: str = Field(min_length=1, description="Serial port path of the line, ideally a stable udev name")
    baudrate: int = Field(default=115200, gt=0)
    stations: list[BusStationSettings] = Field(
        default_factory=list, description="The stations on the line: {seat, address}; address defaults to the seat"
    )
    seats: list[int] = Field(default_factory=list, description="Shorthand for stations whose address is their seat")
    ack_timeout: float = Field(default=0.1, gt=0, description="Seconds to wait for an ACK before resending")
    retries: int = Field(default=3, ge=0, le=10)
    heartbeat_interval: float = Field(
        default=2.0, ge=0, description="Seconds between pings to each station while idle; 0 disables the heartbeat"
    )
    debounce_ms: int = Field(default=30, ge=0, le=1000, description="As for reference-wager-station")
    protocol: int = Field(default=4, ge=1, le=4, description="As for reference-wager-station")
    broadcast_lock: bool = Field(
        default=True,
        description="Lock the stations with one frame: a v3 GROUP frame, each station confirming with two bytes in "
        "its time slot, when every station on the line speaks v3; else a v2 broadcast lock for the v2 and v3 stations, "
        "each confirming with its `locked` frame; false: a lock frame to each station",
    )

    @model_validator(mode="after")
    def _distinct(self) -> ReferenceWagerBusSettings:
        entries = self.all_stations()
        if not entries:
            raise ValueError("a wager bus needs `stations` (or `seats`): name the seats on the line")
        for what, values in (("seat", [e.seat for e in entries]), ("address", [e.bus_address for e in entries])):
            doubled = sorted({v for v in values if values.count(v) > 1})
            if doubled:
                raise ValueError(f"each station on the line needs its own {what}; doubled: {doubled}")
        return self

    def all_stations(self) -> list[BusStationSettings]:
        return [*self.stations, *(BusStationSettings(seat=seat) for seat in self.seats)]
