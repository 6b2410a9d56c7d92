"""FLOOR.toml: the floor service's config (configs/floor.toml is the annotated example).

Every problem is reported at once as `field: problem: fix`, as the table's config does (controller/config/errors.py,
which the floor cannot reuse: it knows the chapters' rules models, and the floor stays out of the games).
"""

from __future__ import annotations

import difflib
import tomllib
from datetime import time
from pathlib import Path
from typing import Annotated, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from controller.config.broker import BrokerAddress, parse_broker_address


class FloorConfigError(ValueError):
    """A FLOOR.toml that cannot be used; the message lists every problem with its fix."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


ClockTime = Annotated[str, Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$", description="HH:MM, 24-hour clock")]


def clock(text: str) -> time:
    hours, minutes = text.split(":")
    return time(int(hours), int(minutes))


class MqttSection(_Section):
    broker: str = "mqtt://127.0.0.1:1883"
    prefix: str = Field("tablectl", pattern=r"^[A-Za-z0-9_\-]+(/[A-Za-z0-9_\-]+)*$")
    # Fixed, so the broker keeps the floor's persistent session (and the messages queued in it) across restarts.
    client_id: str = Field("tablectl-floor", pattern=r"^[A-Za-z0-9_\-.]{1,64}$")
    username: str | None = None
    password_file: Path | None = None
    ca_file: Path | None = None
    # The broker's queue for the floor must outlast its longest stop; the floor acknowledges only after commit.
    session_expiry_s: int = Field(7 * 24 * 3600, ge=60)

    @field_validator("broker")
    @classmethod
    def _url(cls, value: str) -> str:
        parse_broker_address(value)
        return value

    @property
    def address(self) -> BrokerAddress:
        return parse_broker_address(self.broker)


class DatabaseSection(_Section):
    dsn: str = Field(description="libpq connection string or URL; a multi-host string follows the writable primary")
    password_file: Path | None = None


class GamingDaySection(_Section):
    starts_at: ClockTime = "06:00"
    timezone: str = "UTC"

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r}") from None
        return value

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


class Shift(_Section):
    name: str = Field(pattern=r"^[A-Za-z0-9_\-]{1,32}$")
    start: ClockTime
    end: ClockTime


class RetentionSection(_Section):
    days: int = Field(1830, ge=1)  # five years and a few days
    # A gaming day's partition is dropped only once its signed export exists (floor/retention.py).
    require_export: bool = True


class ExportSection(_Section):
    directory: Path = Path("/var/lib/tablectl-floor/exports")
    signing_key: Path | None = None


class IngestSection(_Section):
    batch_max: int = Field(5000, ge=1, le=30_000)
    flush_ms: int = Field(20, ge=1, le=10_000)


class FloorConfig(_Section):
    name: str = Field("floor", min_length=1)
    mqtt: MqttSection = MqttSection()
    database: DatabaseSection
    gaming_day: GamingDaySection = GamingDaySection()
    shifts: list[Shift] = Field(default_factory=list)
    retention: RetentionSection = RetentionSection()
    export: ExportSection = ExportSection()
    ingest: IngestSection = IngestSection()

    @model_validator(mode="after")
    def _shift_names(self) -> FloorConfig:
        names = [s.name for s in self.shifts]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"shift names must be unique; {', '.join(dupes)} appear more than once")
        return self

    def shift(self, name: str) -> Shift:
        for s in self.shifts:
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.shifts) or "none: add [[shifts]] entries to the floor config"
        raise KeyError(f"no shift named {name!r}; the config's shifts: {known}")


_FIXES = {
    "database": 'add a [database] section with dsn = "host=... port=5432 dbname=floor user=..."',
    "database.dsn": 'write the PostgreSQL connection string, e.g. dsn = "host=db1,db2 dbname=floor user=floor"',
    "mqtt.broker": "write mqtt://host[:port] or mqtts://host[:port]",
    "mqtt.prefix": "use letters, digits, -, _ and / only, as in the tables' [mqtt] prefix",
    "gaming_day.starts_at": 'write the hour the gaming day starts, e.g. "06:00"',
    "gaming_day.timezone": 'write an IANA zone name such as "America/New_York"',
    "start": 'write "HH:MM" on the 24-hour clock',
    "end": 'write "HH:MM" on the 24-hour clock',
}


def _field(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _problems(err: ValidationError) -> list[str]:
    lines = []
    for e in err.errors():
        where = _field(tuple(e["loc"]))
        key = where.split("]")[-1].lstrip(".") if where.startswith("shifts") else where
        fix = _FIXES.get(key, "")
        if e["type"] == "extra_forbidden":
            name = str(e["loc"][-1])
            known = _known_fields(tuple(e["loc"][:-1]))
            close = difflib.get_close_matches(name, known, n=1)
            fix = f"did you mean {close[0]!r}?" if close else f"remove it; known here: {', '.join(sorted(known))}"
            lines.append(f"{where}: unknown setting: {fix}")
            continue
        if e["type"] == "missing":
            lines.append(f"{where}: missing: {fix or 'add it'}")
            continue
        message = str(e["msg"]).removeprefix("Value error, ")
        lines.append(f"{where}: {message}" + (f": {fix}" if fix else ""))
    return lines


def _known_fields(loc: tuple[int | str, ...]) -> list[str]:
    model: type[BaseModel] = FloorConfig
    for part in loc:
        if isinstance(part, int):
            continue
        annotation = model.model_fields[str(part)].annotation
        inner = get_args(annotation)[0] if part == "shifts" else annotation
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            return []
        model = inner
    return list(model.model_fields)


def parse_floor_config(text: str, source: str = "FLOOR.toml") -> FloorConfig:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise FloorConfigError(f"{source}: not valid TOML: {err}") from None
    try:
        return FloorConfig.model_validate(raw)
    except ValidationError as err:
        problems = "\n  ".join(_problems(err))
        raise FloorConfigError(f"{source}: {len(err.errors())} problem(s):\n  {problems}") from None


def load_floor_config(path: Path) -> FloorConfig:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise FloorConfigError(f"{path}: cannot read the floor config: {err.strerror}") from None
    return parse_floor_config(text, str(path))


def read_secret(path: Path | None, what: str) -> str | None:
    """A password kept in its own file (never in the config: the config is world-readable in /etc)."""
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as err:
        raise FloorConfigError(f"{what}: cannot read {path}: {err.strerror}") from None
