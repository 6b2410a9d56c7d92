"""Table configuration: TOML validated by pydantic, with errors that name the field and the fix."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from controller.games.cajun_stud import CajunStudRules
from controller.games.chapter_684a import Chapter684aRules
from controller.games.let_it_ride import LetItRideRules
from controller.games.mississippi_stud import MississippiStudRules
from controller.games.three_card_prime import ThreeCardPrimeRules

# The [game] table: the chapter's options, chosen by `chapter`. Each chapter module declares its own.
GameRules = Annotated[
    MississippiStudRules | LetItRideRules | CajunStudRules | ThreeCardPrimeRules | Chapter684aRules,
    Field(discriminator="chapter"),
]
CHAPTERS = ("643a", "655a", "679a", "683a", "684a")


class ConfigError(ValueError):
    """A configuration that cannot be used, with every problem named."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
    game: GameRules
    mqtt: MqttSettings = MqttSettings()
    journal: JournalSettings = JournalSettings()
    devices: Devices | None = Field(None, description="the table's devices; `tablectl settle` needs none")

    @model_validator(mode="after")
    def _one_station_per_seat(self) -> TableConfig:
        if self.devices is None:
            return self
        seats = sorted(int(s.get("seat", 0)) for s in self.devices.wager_stations)
        wanted = list(range(1, self.game.seats + 1))
        if seats != wanted:
            raise ValueError(
                f"devices.wager_stations must have one station per seat {wanted} (game.seats = "
                f"{self.game.seats}); found seats {seats}: give each station a distinct `seat`")
        return self


def describe_errors(err: ValidationError) -> str:
    """One line per problem: where, what is wrong, and the fix when there is an obvious one."""
    lines = []
    for e in err.errors():
        loc = list(e["loc"])
        if len(loc) > 1 and loc[0] == "game" and isinstance(loc[1], str) and re.fullmatch(r"\d{3}a", loc[1]):
            del loc[1]  # the union's tag (the chapter) says nothing the operator wrote
        where = ".".join(str(p) for p in loc) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] in ("union_tag_not_found", "union_tag_invalid"):
            where = f"{where}.chapter"
            msg = f"must name the game's chapter, one of {', '.join(CHAPTERS)}: add e.g. chapter = \"655a\""
        elif e["type"] == "missing":
            msg = "is required but missing: add it"
        elif e["type"] == "extra_forbidden":
            msg = "is not a known setting: remove it or check its spelling"
        lines.append(f"  {where}: {msg}")
    return "\n".join(lines)


def parse_config(data: dict[str, Any], source: str = "config") -> TableConfig:
    try:
        return TableConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(f"{source} is not a valid table configuration:\n{describe_errors(err)}") from None


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
        "game": {"chapter": "655a", "seats": seats, "three_card_bonus_paytable": "A", "six_card_bonus_paytable": "C"},
        "devices": {
            "shuffler": sim("reference-shuffler"),
            "shoe": sim("reference-shoe"),
            "dealer_panel": sim("reference-dealer-panel"),
            "wager_stations": [sim("reference-wager-station", seat=n) for n in range(1, seats + 1)],
        },
    }, "demo config")
