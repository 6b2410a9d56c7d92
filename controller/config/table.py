"""Table configuration: TOML validated by pydantic, with errors that name the field and the fix."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from controller.config.broker import MAX_PACKET_SIZE, parse_broker_address
from controller.config.errors import ConfigError, describe_errors
from controller.config.files import CONFIG_MAX_BYTES, FileRefused, read_bounded
from controller.config.game import GameRules
from controller.config.keys import decode_public_key
from controller.config.software import SoftwareSettings


class _Strict(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)


class MqttSettings(_Strict):
    """The broker connection. Production brokers use TLS (`mqtts://`) and per-table credentials (see
    systemd/mosquitto/); the password lives in its own file so the config can be world-readable."""

    broker: str = "mqtt://127.0.0.1:1883"
    prefix: str = Field(
        "tablectl",
        max_length=100,
        description="the first levels of every topic, e.g. tablectl or casino-a/floor-2: MQTT topic levels of "
        "letters, digits, - and _, joined by single slashes (no wildcard, no empty level, no leading or trailing "
        "slash, which would make topics no ACL pattern matches)",
    )
    username: str | None = Field(None, description="this table's broker user (default: none, anonymous)")
    password_file: str | None = Field(None, description="file holding the broker password (first line)")
    ca_file: str | None = Field(None, description="CA bundle that signed the broker's certificate (mqtts://)")
    cert_file: str | None = Field(None, description="client certificate for TLS client authentication")
    key_file: str | None = Field(None, description="the client certificate's private key")
    keepalive_s: int = Field(
        15,
        ge=2,
        le=600,
        description="seconds: with nothing heard from the broker for this long the table pings it, and a broker that "
        "does not answer the ping within as long again is given up as an outage (events are kept in the journal and "
        "sent on reconnecting); lower it to notice a frozen broker or a dead link sooner, at one small ping each "
        "period on a quiet connection",
    )
    max_packet_size: int = Field(
        MAX_PACKET_SIZE,
        ge=4096,
        le=268_435_455,
        description="the broker's max_packet_size in bytes (mosquitto's option; the shipped broker config's "
        f"{MAX_PACKET_SIZE}): it bounds every message the table publishes, its events, its command replies and its "
        "retained status, birth, device/<id>, progressive/<level> and anchor; one larger than this is never sent, "
        'it raises the tilt:oversize tilt instead, and a birth over it stops the start (docs/mqtt.md, "Too large '
        'for the broker"); raise both together',
    )

    @field_validator("prefix")
    @classmethod
    def _topic_levels(cls, value: str) -> str:
        problem = prefix_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> MqttSettings:
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


_LEVEL = re.compile(r"[A-Za-z0-9_\-]+")


def prefix_problem(prefix: str) -> str | None:
    """What makes `prefix` unfit to start this table's MQTT topics (MQTT 3.1.1 section 4.7), or None."""
    if any(c in prefix for c in "+#"):
        return f"{prefix!r} has an MQTT wildcard (+ or #), which a topic to publish on cannot have"
    if prefix.startswith("$"):
        return f"{prefix!r} starts with $, which MQTT keeps for the broker's own topics ($SYS)"
    if prefix.startswith("/") or prefix.endswith("/"):
        return f"{prefix!r} starts or ends with /, which makes an empty topic level"
    if "//" in prefix or not prefix:
        return f"{prefix!r} has an empty topic level (//)"
    bad = [level for level in prefix.split("/") if not _LEVEL.fullmatch(level)]
    if bad:
        return f"the level {bad[0]!r} of {prefix!r} has characters other than letters, digits, - and _"
    return None


# Who may sign which supervisor commands: controller.supervisor.verbs.ROLE_VERBS, docs/commands.md.
Role = Literal["floorperson", "supervisor", "technician"]


class Supervisor(_Strict):
    """A key allowed to sign supervisor commands for this table (`tablectl command keygen` prints the entry)."""

    key_id: str = Field(pattern=r"^[A-Za-z0-9_.@\-]{1,64}$", description="the name commands give as key_id")
    role: Role = Field(description="floorperson, supervisor or technician: the verbs it may sign (docs/commands.md)")
    public_key: str = Field(description="base64 of the raw 32-byte Ed25519 public key")

    @field_validator("public_key")
    @classmethod
    def _is_a_key(cls, value: str) -> str:
        decode_public_key(value)
        return value


class CommandSettings(_Strict):
    """How fresh a signed command must be. Both clocks must be NTP-synchronised."""

    max_age_seconds: float = Field(30, gt=0, le=3600, description="older commands are refused as stale")
    max_clock_skew_seconds: float = Field(
        5, ge=0, le=300, description="commands from further in the future are refused"
    )


class ProgressiveSettings(_Strict):
    """A linked progressive (docs/linked-progressives.md): the table's progressive wagers feed the meters of the link
    controller `link` instead of meters of its own."""

    link: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_\-]{1,64}$",
        description="the link id (LINK.toml's [link] id); its topics are <mqtt.prefix>/link/<link>/...",
    )
    heartbeat_ms: int = Field(
        1000, ge=100, le=60_000, description="how often the table asks the link to renew its lease (at most half of it)"
    )
    resend_ms: int = Field(
        2000, ge=200, le=60_000, description="how long an unanswered request waits before it is sent again"
    )
    link_config: str | None = Field(
        None, description="the link's LINK.toml, for check-config to check the table against the link's levels"
    )

    @model_validator(mode="after")
    def _needs_link(self) -> ProgressiveSettings:
        if self.link is None and self.link_config is not None:
            raise ValueError("progressive.link_config is set without progressive.link: name the link")
        return self


class JournalSettings(_Strict):
    path: str | None = Field(None, description="SQLite file; default: <state dir>/<table_id>.sqlite")
    keep_rounds: int | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="archive the completed rounds older than the last N into segment files, between rounds and "
        "when the table closes (docs/journal.md, Archiving); default: never (tablectl journal archive by hand)",
    )
    archive_dir: str | None = Field(
        None, description="where the daemon's archive segments go; default: <journal>.archive beside the journal"
    )

    @model_validator(mode="after")
    def _archive_needs_rounds(self) -> JournalSettings:
        if self.archive_dir is not None and self.keep_rounds is None:
            raise ValueError(
                "journal.archive_dir is set without journal.keep_rounds: say how many rounds the journal keeps "
                "(e.g. keep_rounds = 5000), or leave archive_dir out"
            )
        return self


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


# Long enough for any naming scheme; short enough that "<table_id>.sqlite" stays a valid file name (255 bytes).
MAX_TABLE_ID = 64


class TableConfig(_Strict):
    table_id: str = Field(
        pattern=r"^[A-Za-z0-9_\-]+$",
        max_length=MAX_TABLE_ID,
        description="unique per casino; names the table's MQTT topics, client ids and journal file (at most 64 "
        "characters: the journal's file name must stay under the 255 bytes a file name may have)",
    )
    game: GameRules
    mqtt: MqttSettings = MqttSettings()
    journal: JournalSettings = JournalSettings()
    devices: Devices | None = Field(None, description="the table's devices; `tablectl settle` needs none")
    supervisors: list[Supervisor] = Field([], description="keys that may sign supervisor commands")
    commands: CommandSettings = CommandSettings()
    software: SoftwareSettings = SoftwareSettings()
    progressive: ProgressiveSettings = ProgressiveSettings()

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


def parse_config(data: dict[str, Any], source: str = "config") -> TableConfig:
    try:
        return TableConfig.model_validate(data)
    except ValidationError as err:
        problems = describe_errors(err, TableConfig)
        raise ConfigError(f"{source} is not a valid table configuration:\n{problems}") from None


class ConfigFileError(ConfigError):
    """A config file that cannot be read as a TOML table: `field` is where (the file, or "(TOML syntax)"),
    `problem` what is wrong and `fix` what to do, as check-config reports them."""

    def __init__(self, message: str, field: str, problem: str, fix: str) -> None:
        super().__init__(message)
        self.field, self.problem, self.fix = field, problem, fix


# TOML nesting a table config uses: [devices.wager_bus] stations = [{...}] is four levels; driver settings add a
# few. Far deeper data is no config, and refusing it keeps the validators below Python's recursion limit.
MAX_DEPTH = 16


def read_config(path: str | Path) -> dict[str, Any]:
    """The TOML table in the file at `path`; ConfigFileError for a file that is missing, not a regular file (a
    FIFO, /dev/zero), too big, not UTF-8, not TOML, or nested deeper than any config."""
    p = Path(path)
    fix = "pass the path of the table's TOML config, e.g. /etc/tablectl/table.toml"
    try:
        text = read_bounded(p, CONFIG_MAX_BYTES).decode("utf-8")
    except FileRefused as err:
        raise ConfigFileError(f"cannot read config {p}: {err.problem}; {fix}", str(p), err.problem, fix) from None
    except UnicodeDecodeError as err:
        problem = f"is not UTF-8 text (byte {err.object[err.start]:#04x} at offset {err.start})"
        fix = "save the config as UTF-8 (TOML files are UTF-8)"
        raise ConfigFileError(f"{p} {problem}: {fix}", str(p), problem, fix) from None
    syntax_fix = "correct the line it names: a key = value, a [section], quoted text"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigFileError(f"{p} is not valid TOML: {err}", "(TOML syntax)", str(err), syntax_fix) from None
    except RecursionError:
        problem = "arrays or inline tables are nested too deeply to be parsed"
        fix = "a table config nests a few levels: remove the extra brackets"
        raise ConfigFileError(f"{p} is not valid TOML: {problem}: {fix}", "(TOML syntax)", problem, fix) from None
    where = _too_deep(data)
    if where is not None:
        problem = f"is nested more than {MAX_DEPTH} levels deep"
        fix = "a table config nests a few levels: remove the extra brackets"
        raise ConfigFileError(f"{p}: {where} {problem}: {fix}", where, problem, fix) from None
    return data


def _too_deep(data: dict[str, Any]) -> str | None:
    """The field path where `data` first goes deeper than MAX_DEPTH, if it does (walked without recursion)."""
    stack: list[tuple[object, str, int]] = [(data, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            return where
        if isinstance(value, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k), depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value))
    return None


def load_config(path: str | Path) -> TableConfig:
    return parse_config(read_config(path), str(path))


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


def station_id(seat: int) -> str:
    return f"wager_station_{seat}"


def configured_devices(config: TableConfig) -> dict[str, Mapping[str, Any]]:
    """Device id -> raw driver settings for every device configured one per entry (a wager bus's per-seat
    stations are expanded by build_devices)."""
    d = config.devices
    if d is None:
        return {}
    raw: dict[str, Mapping[str, Any]] = {"shuffler": d.shuffler, "shoe": d.shoe, "dealer_panel": d.dealer_panel}
    raw.update({station_id(int(s["seat"])): s for s in d.wager_stations})
    if d.progressive_sign is not None:
        raw["progressive_sign"] = d.progressive_sign
    raw.update({f"wager_terminal_{int(t['seat'])}": t for t in d.wager_terminals})
    return raw
