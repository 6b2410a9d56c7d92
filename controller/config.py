"""Table configuration: TOML validated by pydantic, with errors that name the field and the fix."""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

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
    """The broker connection. Production brokers use TLS (`mqtts://`) and per-table credentials (see
    systemd/mosquitto/); the password lives in its own file so the config can be world-readable."""

    broker: str = "mqtt://127.0.0.1:1883"
    prefix: str = Field("tablectl", pattern=r"^[A-Za-z0-9_\-/]+$")
    username: str | None = Field(None, description="this table's broker user (default: none, anonymous)")
    password_file: str | None = Field(None, description="file holding the broker password (first line)")
    ca_file: str | None = Field(None, description="CA bundle that signed the broker's certificate (mqtts://)")
    cert_file: str | None = Field(None, description="client certificate for TLS client authentication")
    key_file: str | None = Field(None, description="the client certificate's private key")

    @model_validator(mode="after")
    def _consistent(self) -> MqttSettings:
        from controller.mqtt_connection import parse_broker_address

        address = parse_broker_address(self.broker)
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("mqtt.cert_file and mqtt.key_file go together: give both or neither")
        if not address.tls and (self.ca_file or self.cert_file):
            raise ValueError(
                f"mqtt.ca_file/cert_file are set but mqtt.broker {self.broker!r} is not TLS: use an mqtts:// URL"
            )
        if self.password_file is not None and self.username is None:
            raise ValueError("mqtt.password_file is set without mqtt.username: add the table's broker user")
        return self


# Who may sign which supervisor commands: controller.commands.ROLE_VERBS, docs/commands.md.
Role = Literal["floorperson", "supervisor", "technician"]


class Supervisor(_Strict):
    """A key allowed to sign supervisor commands for this table (`tablectl command keygen` prints the entry)."""

    key_id: str = Field(pattern=r"^[A-Za-z0-9_.@\-]{1,64}$", description="the name commands give as key_id")
    role: Role = Field(description="floorperson, supervisor or technician: the verbs it may sign (docs/commands.md)")
    public_key: str = Field(description="base64 of the raw 32-byte Ed25519 public key")

    @field_validator("public_key")
    @classmethod
    def _is_a_key(cls, value: str) -> str:
        from controller.commands import decode_public_key

        decode_public_key(value)
        return value


class CommandSettings(_Strict):
    """How fresh a signed command must be. Both clocks must be NTP-synchronised."""

    max_age_seconds: float = Field(30, gt=0, le=3600, description="older commands are refused as stale")
    max_clock_skew_seconds: float = Field(
        5, ge=0, le=300, description="commands from further in the future are refused"
    )


class JournalSettings(_Strict):
    path: str | None = Field(None, description="SQLite file; default: <state dir>/<table_id>.sqlite")


class Devices(_Strict):
    """Each device: {driver = "<entry point name>", ...its driver's settings}.

    Wager stations come one per seat (`wager_stations`, each on its own line), on one multi-drop line
    (`wager_bus`, whose `stations` = [{seat, address}] or `seats` = [...] name the seats it covers), or both.
    """

    shuffler: dict[str, Any]
    shoe: dict[str, Any]
    dealer_panel: dict[str, Any]
    wager_stations: list[dict[str, Any]] = []
    wager_bus: dict[str, Any] | None = None
    progressive_sign: dict[str, Any] | None = None
    wager_terminals: list[dict[str, Any]] = []  # one per seat with a Five Card Hand Bonus terminal

    def station_seats(self) -> list[tuple[int, str]]:
        """(seat, where it is configured) for every wager station, in config order."""
        found = [(_seat_of(s.get("seat")), f"devices.wager_stations[{i}]") for i, s in enumerate(self.wager_stations)]
        bus = self.wager_bus
        if bus is not None:
            stations = bus.get("stations", [])
            seats = bus.get("seats", [])
            if not isinstance(stations, list) or not isinstance(seats, list):
                raise ValueError(
                    "devices.wager_bus: `stations` must be a list of {seat, address} tables and "
                    "`seats` a list of seat numbers"
                )
            found += [
                (_seat_of(s.get("seat") if isinstance(s, dict) else None), f"devices.wager_bus.stations[{i}]")
                for i, s in enumerate(stations)
            ]
            found += [(_seat_of(seat), f"devices.wager_bus.seats[{i}]") for i, seat in enumerate(seats)]
        return found


def _seat_of(value: Any) -> int:
    # A seat that is missing or not a number counts as seat 0, which the per-seat check then reports.
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class TableConfig(_Strict):
    table_id: str = Field(pattern=r"^[A-Za-z0-9_\-]+$", description="unique per casino; used in topics")
    game: GameRules
    mqtt: MqttSettings = MqttSettings()
    journal: JournalSettings = JournalSettings()
    devices: Devices | None = Field(None, description="the table's devices; `tablectl settle` needs none")
    supervisors: list[Supervisor] = Field([], description="keys that may sign supervisor commands")
    commands: CommandSettings = CommandSettings()

    @model_validator(mode="after")
    def _distinct_supervisor_keys(self) -> TableConfig:
        seen_ids: dict[str, int] = {}
        seen_keys: dict[str, str] = {}
        for i, s in enumerate(self.supervisors):
            if s.key_id in seen_ids:
                raise ValueError(
                    f"supervisors[{i}].key_id {s.key_id!r} is also supervisors[{seen_ids[s.key_id]}]'s: "
                    "give every key its own key_id"
                )
            if s.public_key in seen_keys:
                raise ValueError(
                    f"supervisors[{i}] ({s.key_id}) has the same public_key as {seen_keys[s.public_key]}: "
                    "one key per person, so the journal can say who signed"
                )
            seen_ids[s.key_id] = i
            seen_keys[s.public_key] = s.key_id
        return self

    @model_validator(mode="after")
    def _one_station_per_seat(self) -> TableConfig:
        if self.devices is None:
            return self
        found = self.devices.station_seats()
        seats = sorted(seat for seat, _where in found)
        wanted = list(range(1, self.game.seats + 1))
        if seats != wanted:
            problems = [f"seat {n} has no station" for n in wanted if n not in seats]
            for n in sorted(set(seats)):
                places = [where for seat, where in found if seat == n]
                if n not in wanted:
                    problems.append(
                        f"{' and '.join(places)} {'name' if len(places) > 1 else 'names'} "
                        f"seat {n}, which the game does not have"
                    )
                elif len(places) > 1:
                    problems.append(f"seat {n} is doubled ({' and '.join(places)})")
            raise ValueError(
                f"devices.wager_stations and devices.wager_bus must have one station per seat {wanted} "
                f"(game.seats = {self.game.seats}); found seats {seats}: {'; '.join(problems)}. Give each seat "
                f"exactly one station, in wager_stations or on the wager_bus"
            )
        return self


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a config: where (a dotted field path), what, and how to fix it."""

    field: str
    problem: str
    fix: str = ""

    def __str__(self) -> str:
        return f"{self.field}: {self.problem}" + (f": {self.fix}" if self.fix else "")


# Fixes for pydantic's error types whose message says what is wrong but not what to write instead.
_TYPE_FIXES = {
    "int_parsing": "write a whole number without quotes",
    "int_type": "write a whole number without quotes",
    "int_from_float": "write a whole number (amounts are in cents)",
    "float_parsing": "write a number without quotes",
    "float_type": "write a number without quotes",
    "bool_parsing": "write true or false, without quotes",
    "bool_type": "write true or false, without quotes",
    "string_type": "write text in double quotes",
    "list_type": "write a list in square brackets, e.g. [1, 2, 3]",
    "dict_type": "write a table: a [section] or an inline { key = value }",
    "model_type": "write a table: a [section] or an inline { key = value }",
    "model_attributes_type": "write a table: a [section] or an inline { key = value }",
    "literal_error": "use one of those values",
    "enum": "use one of those values",
    "string_too_short": "give a value that is not empty",
}

_PATTERN_FIXES = {
    "table_id": "use letters, digits, - and _ only, e.g. ms-table-01 (it names the table's MQTT topics and journal)",
    "mqtt.prefix": "use letters, digits, -, _ and / only, e.g. tablectl",
}


def _path(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _models_in(tp: Any) -> list[type[BaseModel]]:
    """The pydantic models a field annotation can hold (through Optional, unions, Annotated and lists)."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    return [m for arg in get_args(tp) for m in _models_in(arg)]


def _model_at(model: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model whose fields are at `loc` (a pydantic error location below `model`), if one can tell."""
    candidates = [model]
    for part in loc:
        if isinstance(part, int):
            continue  # a list index: the item models were already taken
        tagged = [
            m
            for m in candidates
            if "chapter" in m.model_fields and part in get_args(m.model_fields["chapter"].annotation)
        ]
        if tagged:  # the discriminated union puts its tag (the chapter) in the location
            candidates = tagged
            continue
        owner = next((m for m in candidates if part in m.model_fields), None)
        if owner is None:
            return None
        candidates = _models_in(owner.model_fields[part].annotation)
    return candidates[0] if len(candidates) == 1 else None


def _got(value: Any) -> str:
    return "" if isinstance(value, dict | list) else f" (got {value!r})"


def config_problems(
    err: ValidationError, *, prefix: Sequence[str | int] = (), model: type[BaseModel] | None = None
) -> list[Problem]:
    """Every validation error as field, problem and fix. `model` (the validated model) lets a misspelt key
    be matched to the setting it was probably meant to be; `prefix` is where the validated data sits."""
    problems = []
    for e in err.errors():
        loc = list(e["loc"])
        known: list[str] = []
        if e["type"] == "extra_forbidden" and model is not None:
            parent = _model_at(model, loc[:-1])
            known = list(parent.model_fields) if parent is not None else []
        if len(loc) > 1 and loc[0] == "game" and isinstance(loc[1], str) and re.fullmatch(r"\d{3}a", loc[1]):
            del loc[1]  # the union's tag (the chapter) says nothing the operator wrote
        where = _path([*prefix, *loc])
        msg = e["msg"].removeprefix("Value error, ")
        ctx = e.get("ctx") or {}
        fix = _TYPE_FIXES.get(e["type"], "")
        if e["type"] in ("union_tag_not_found", "union_tag_invalid"):
            where = f"{where}.chapter"
            got = _got(ctx["tag"]) if e["type"] == "union_tag_invalid" and "tag" in ctx else ""
            msg = f"must name the game's chapter, one of {', '.join(CHAPTERS)}{got}"
            fix = 'add e.g. chapter = "655a" to [game]'
        elif e["type"] == "missing":
            msg, fix = "is required but missing", "add it"
        elif e["type"] == "extra_forbidden":
            msg, fix = "is not a known setting", "remove it or check its spelling"
            name = str(loc[-1])
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            if close:
                fix += f" (did you mean {close[0]}?)"
        elif e["type"] in ("less_than_equal", "less_than", "greater_than_equal", "greater_than"):
            msg += _got(e["input"])
            fix = {
                "less_than_equal": "give at most {le}",
                "less_than": "give less than {lt}",
                "greater_than_equal": "give at least {ge}",
                "greater_than": "give more than {gt}",
            }[e["type"]]
            fix = fix.format(**ctx)
        elif e["type"] == "string_pattern_mismatch":
            msg += _got(e["input"])
            fix = _PATTERN_FIXES.get(where, f"use only the characters the pattern allows: {ctx.get('pattern')}")
        elif fix:
            msg += _got(e["input"])
        elif e["type"] == "value_error":
            # A check across fields reports at the model; its message names the field it is about.
            named = re.match(r"[a-z_]+(?:\.[a-z_]+)+", msg)
            if named and (not loc or named.group().startswith(f"{where}.")):
                where = named.group()
        problems.append(Problem(where, msg, fix))
    return problems


def describe_errors(err: ValidationError, model: type[BaseModel] | None = None) -> str:
    """One line per problem: where, what is wrong, and the fix when there is an obvious one."""
    return "\n".join(f"  {p}" for p in config_problems(err, model=model))


def parse_config(data: dict[str, Any], source: str = "config") -> TableConfig:
    try:
        return TableConfig.model_validate(data)
    except ValidationError as err:
        problems = describe_errors(err, TableConfig)
        raise ConfigError(f"{source} is not a valid table configuration:\n{problems}") from None


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

    return parse_config(
        {
            "table_id": "demo-ms-1",
            # 655a.12(c) paytable C: the Progressive Payout Wager with mega, major and minor meters on the sign.
            "game": {
                "chapter": "655a",
                "seats": seats,
                "three_card_bonus_paytable": "A",
                "six_card_bonus_paytable": "C",
                "progressive_paytable": "C",
                "progressive_wager_cents": 100,
            },
            "devices": {
                "shuffler": sim("reference-shuffler"),
                "shoe": sim("reference-shoe"),
                "dealer_panel": sim("reference-dealer-panel"),
                "wager_stations": [sim("reference-wager-station", seat=n) for n in range(1, seats + 1)],
                "progressive_sign": sim("reference-progressive-sign"),
            },
        },
        "demo config",
    )
