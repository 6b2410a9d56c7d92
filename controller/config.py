"""Table configuration: TOML validated by pydantic, with errors that name the field and the fix."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class ConfigError(ValueError):
    """A configuration that cannot be used, with every problem named."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MississippiStudRules(_Strict):
    """Chapter 655a options from the certificate holder's Rules Submission."""

    chapter: Literal["655a"] = "655a"
    seats: int = Field(6, ge=1, le=6, description="betting positions, at most six (655a.2(a))")
    dealing_method: Literal["automated_shoe"] = Field(
        "automated_shoe", description="655a.10; manual shoe and hand dealing come with the round engine issue")
    ante_min_cents: int = Field(500, gt=0)
    ante_max_cents: int = Field(10_000, gt=0)
    three_card_bonus_paytable: Literal["A", "B", "C", "D"] | None = Field(
        None, description="655a.12(d) paytable letter; leave out to not offer the wager")
    three_card_bonus_min_cents: int = Field(100, gt=0)
    three_card_bonus_max_cents: int = Field(2_500, gt=0)
    six_card_bonus_paytable: Literal["A", "B", "C", "D", "E"] | None = Field(
        None, description="655a.12(f) paytable letter; leave out to not offer the wager")
    six_card_bonus_min_cents: int = Field(100, gt=0)
    six_card_bonus_max_cents: int = Field(2_500, gt=0)

    @model_validator(mode="after")
    def _ranges(self) -> MississippiStudRules:
        for name in ("ante", "three_card_bonus", "six_card_bonus"):
            lo, hi = getattr(self, f"{name}_min_cents"), getattr(self, f"{name}_max_cents")
            if lo > hi:
                raise ValueError(f"{name}_min_cents ({lo}) is above {name}_max_cents ({hi}): swap them")
        return self


class MqttSettings(_Strict):
    broker: str = "mqtt://127.0.0.1:1883"
    prefix: str = Field("tablectl", pattern=r"^[A-Za-z0-9_\-/]+$")


class JournalSettings(_Strict):
    path: str | None = Field(None, description="SQLite file; default: <state dir>/<table_id>.sqlite")


class Devices(_Strict):
    """Each device: {driver = "<entry point name>", ...its driver's settings}."""

    shuffler: dict[str, Any]
    shoe: dict[str, Any]
    dealer_panel: dict[str, Any]
    wager_stations: list[dict[str, Any]]


class TableConfig(_Strict):
    table_id: str = Field(pattern=r"^[A-Za-z0-9_\-]+$", description="unique per casino; used in topics")
    game: MississippiStudRules
    mqtt: MqttSettings = MqttSettings()
    journal: JournalSettings = JournalSettings()
    devices: Devices

    @model_validator(mode="after")
    def _one_station_per_seat(self) -> TableConfig:
        seats = sorted(int(s.get("seat", 0)) for s in self.devices.wager_stations)
        wanted = list(range(1, self.game.seats + 1))
        if seats != wanted:
            raise ValueError(
                f"devices.wager_stations must have one station per seat {wanted} (game.seats = "
                f"{self.game.seats}); found seats {seats}: give each station a distinct `seat`")
        return self


def _describe(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "missing":
            msg = "is required but missing: add it"
        elif e["type"] == "extra_forbidden":
            msg = "is not a known setting: remove it or check its spelling"
        lines.append(f"  {where}: {msg}")
    return "\n".join(lines)


def parse_config(data: dict[str, Any], source: str = "config") -> TableConfig:
    try:
        return TableConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(f"{source} is not a valid table configuration:\n{_describe(err)}") from None


def load_config(path: str | Path) -> TableConfig:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot read config {p}: {err.strerror}; pass an existing TOML file") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{p} is not valid TOML: {err}") from None
    return parse_config(data, str(p))


def demo_config(seats: int = 6) -> TableConfig:
    """The table `tablectl demo` plays when no --config is given (configs/demo.toml is the same)."""
    def sim(driver: str, **extra: Any) -> dict[str, Any]:
        return {"driver": driver, "port": "simulated", **extra}

    return parse_config({
        "table_id": "demo-ms-1",
        "game": {"seats": seats, "three_card_bonus_paytable": "A", "six_card_bonus_paytable": "C"},
        "devices": {
            "shuffler": sim("reference-shuffler"),
            "shoe": sim("reference-shoe"),
            "dealer_panel": sim("reference-dealer-panel"),
            "wager_stations": [sim("reference-wager-station", seat=n) for n in range(1, seats + 1)],
        },
    }, "demo config")
