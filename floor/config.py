"""FLOOR.toml: the floor service's config (configs/floor.toml is the annotated example).

Every problem is reported at once as `field: problem: fix`, as the table's config does (controller/config/errors.py,
which the floor cannot reuse: it knows the chapters' rules models, and the floor stays out of the games).
"""

from __future__ import annotations

import ipaddress
import re
from datetime import time
from pathlib import Path
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import psycopg
from psycopg.conninfo import conninfo_to_dict
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from controller.config.broker import BrokerAddress, parse_broker_address
from controller.config.files import SECRET_MAX_BYTES, FileRefused, read_bounded
from controller.config.keys import decode_public_key, public_key_b64
from controller.core.spaces import first_line
from floor.config_files import parse_config, read_config


class FloorConfigError(ValueError):
    """A FLOOR.toml that cannot be used; the message lists every problem with its fix."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


ClockTime = Annotated[str, Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$", description="HH:MM, 24-hour clock")]


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


# libpq waits for ever on a connect that a host takes and never answers (a database host gone dark, a firewall that
# drops the reply) unless connect_timeout bounds it: a command then hangs saying nothing, and a service's worker
# thread in that connect holds its exit. The default of [database] connect_timeout_s.
CONNECT_TIMEOUT_S = 10


class DatabaseSection(_Section):
    dsn: str = Field(description="libpq connection string or URL; a multi-host string follows the writable primary")
    password_file: Path | None = None
    # strict: "5" or 2.5 is refused (libpq takes whole seconds), not read as 5 or 2.
    connect_timeout_s: int = Field(CONNECT_TIMEOUT_S, ge=1, le=300, strict=True)

    @model_validator(mode="after")
    def _one_timeout(self) -> DatabaseSection:
        if "connect_timeout_s" in self.model_fields_set and "connect_timeout" in conninfo_to_dict(self.dsn):
            raise ValueError(
                "connect_timeout is set twice, in dsn and as connect_timeout_s: keep it in one place "
                "(connect_timeout_s, and take connect_timeout= out of dsn)"
            )
        return self

    @field_validator("dsn")
    @classmethod
    def _conninfo(cls, value: str) -> str:
        # libpq's own parser, here: a typo'd keyword (`hostt=`) otherwise passed check-config and ended every verb
        # with psycopg's ProgrammingError, which reads as a bug in tablectl rather than a line of the config.
        try:
            conninfo_to_dict(value)
        except psycopg.ProgrammingError as err:
            raise ValueError(f"not a libpq connection string: {first_line(str(err))}") from None
        return value


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
    # rejected_messages rows last heard of before this many days are deleted by `floor retention --apply` (refused
    # messages are no part of a day's export: they were never archived).
    refused_days: int = Field(90, ge=1)


SIGNING_KEY_GONE = (
    '[export] signing_key is gone: the floor holds no private key (DESIGN.md, "The floor"), so exports are signed '
    "by a person's key that stays with them. Fix: remove signing_key; list the signers' public keys in "
    'trusted_keys = ["..."] (the public key `tablectl command keygen` printed, or the PEM of `openssl pkey -in KEY.pem '
    "-pubout`); move KEY.pem off the floor host to its owner, who signs each export with `tablectl report sign FILE "
    '--key KEY.pem` (docs/floor.md, "Retention and export")'
)
TRUSTED_KEY_FIX = (
    "paste the signer's public key as `tablectl command keygen` printed it (base64 of the raw 32-byte Ed25519 key), "
    "or its PEM public half (`openssl pkey -in KEY.pem -pubout`)"
)


def export_public_key(text: str) -> str:
    """A trusted export signer's public key, base64 or PEM, as the base64 of its raw 32 bytes (as .sig files name
    it); ValueError says what is wrong and how to get a right one."""
    return public_key_b64(text, TRUSTED_KEY_FIX)


class ExportSection(_Section):
    directory: Path = Path("/var/lib/tablectl-floor/exports")
    # The public halves of the keys whose signature makes an export count (report verify, record, retention).
    trusted_keys: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _no_signing_key(cls, data: object) -> object:
        if isinstance(data, dict) and "signing_key" in data:
            raise ValueError(SIGNING_KEY_GONE)
        return data

    @field_validator("trusted_keys")
    @classmethod
    def _keys(cls, value: list[str]) -> list[str]:
        keys = [export_public_key(text) for text in value]
        if len(set(keys)) != len(keys):
            raise ValueError("a key is listed twice: list each signer's public key once")
        return keys


class IngestSection(_Section):
    batch_max: int = Field(5000, ge=1, le=30_000)
    flush_ms: int = Field(20, ge=1, le=10_000)
    # The tables the floor archives; empty: every table under the prefix (the broker's ACL decides who publishes
    # there). Listed, a message of any other table is refused and counted, so a stray or forged publisher on a broker
    # with a loose ACL adds no table to the floor's status, console and reports.
    tables: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9_\-]+$")]] = Field(default_factory=list)
    # Refused messages (docs/floor.md, "Refused messages are bounded"; floor/refusals.py): a row keeps the first
    # refused_keep_bytes, a topic over refused_rows_per_topic a minute is one counted row, and all add at most
    # refused_rows_per_minute rows a minute: a flood cannot fill the floor's disk.
    refused_keep_bytes: int = Field(4096, ge=0, le=256 * 1024)
    refused_rows_per_topic: int = Field(60, ge=1, le=100_000)
    refused_rows_per_minute: int = Field(120, ge=1, le=100_000)


class GapsSection(_Section):
    """Seq gaps that stay open (docs/floor.md, "A gap that stays"). The floor holds no key and asks nothing by itself:
    it says a gap is stale and the `tablectl command send ... resend` line a person runs with a key of their own."""

    # A gap open this long is stale: a table's own replay after an outage fills its gaps well within it.
    grace_s: float = Field(30.0, ge=1, le=86_400)


MEMORY_SIZE = r"[1-9][0-9]{0,9}(kB|MB|GB)"  # as PostgreSQL writes one; it checks the range itself (64kB at least)


def memory_size(text: str) -> str:
    """A PostgreSQL memory size as `SET work_mem` takes it; ValueError says what is wrong (the caller, the fix)."""
    if re.fullmatch(MEMORY_SIZE, text) is None:
        raise ValueError(f"{text!r} is not a memory size")
    return text


class ReportSection(_Section):
    """`tablectl report` (floor/report/): unset, the report runs at the server's settings."""

    # PostgreSQL work_mem for the report's own transaction only (SET LOCAL); `--work-mem` wins over it.
    work_mem: str | None = None

    @field_validator("work_mem")
    @classmethod
    def _size(cls, value: str | None) -> str | None:
        return None if value is None else memory_size(value)


KEY_ID = r"^[A-Za-z0-9_.@\-]{1,64}$"  # a console key id, as the tables' [[supervisors]] take one


class ConsoleKey(_Section):
    """A key that may log in to the console, as the tables' [[supervisors]] entry gives it (docs/console.md)."""

    key_id: str = Field(pattern=KEY_ID)
    role: Literal["floorperson", "supervisor", "technician"]
    public_key: str

    @field_validator("public_key")
    @classmethod
    def _is_a_key(cls, value: str) -> str:
        decode_public_key(value)
        return value


class ConsoleSection(_Section):
    """The floor console (floor/console/): served by `tablectl floor` when `listen` is set."""

    listen: str | None = Field(None, pattern=r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.\-]+):[0-9]{1,5}$")
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # A session ends this long after its log-in, whatever it does meanwhile: a device left on a desk is not a key.
    session_minutes: int = Field(30, ge=1, le=720)
    # Keys may also be approved with `tablectl floor console approve` (kept in PostgreSQL); these are approved always.
    supervisors: list[ConsoleKey] = Field(default_factory=list)
    # Approve every enrolment at once: for `tablectl demo --floor` only; refused unless listening on loopback.
    demo_approve_all: bool = False
    command_timeout_s: float = Field(10.0, gt=0, le=120)
    # Seconds a request has to arrive whole, headers (aiohttp's keep-alive timer, which also closes a connection that
    # sends nothing) and body: a browser sends a few hundred bytes at once; a client that dribbles them (slowloris) or
    # announces more than it sends holds a connection only this long. Also how long an event stream may stay stuck
    # on a browser that does not read before it is dropped.
    request_timeout_s: float = Field(10.0, gt=0, le=300)
    # What anyone who reaches the console can make it keep or hold (docs/console.md, "Limits").
    max_pending_enrolments: int = Field(20, ge=1, le=10_000)
    attempts_per_minute: int = Field(10, ge=1, le=100_000)
    streams_per_session: int = Field(4, ge=1, le=100)
    max_streams: int = Field(200, ge=1, le=10_000)
    # Which pit each table stands in, for grouping the tiles: pit name -> table ids (others: "unassigned").
    pits: dict[str, list[str]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _tls(self) -> ConsoleSection:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("give both tls_cert and tls_key, or neither")
        if self.listen is not None:
            host = self.host
            if self.tls_cert is None and not _loopback(host):
                raise ValueError(
                    f"listen = {self.listen!r} is not a loopback address, so the console needs TLS: set tls_cert "
                    "and tls_key (browsers give WebCrypto keys only to https pages or to 127.0.0.1)"
                )
            if self.demo_approve_all and not _loopback(host):
                raise ValueError("demo_approve_all lets anyone in: it is allowed only on a loopback listen address")
        return self

    @property
    def host(self) -> str:
        return self._listening().rsplit(":", 1)[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self._listening().rsplit(":", 1)[1])

    def _listening(self) -> str:
        if self.listen is None:  # the service serves the console only when it is set
            raise FloorConfigError('[console] has no listen address: write listen = "HOST:PORT", e.g. "127.0.0.1:8480"')
        return self.listen


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class FloorConfig(_Section):
    name: str = Field("floor", min_length=1)
    mqtt: MqttSection = MqttSection()
    database: DatabaseSection
    gaming_day: GamingDaySection = GamingDaySection()
    shifts: list[Shift] = Field(default_factory=list)
    retention: RetentionSection = RetentionSection()
    export: ExportSection = ExportSection()
    ingest: IngestSection = IngestSection()
    console: ConsoleSection = ConsoleSection()
    gaps: GapsSection = GapsSection()
    report: ReportSection = ReportSection()

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
    "database.connect_timeout_s": "give the whole seconds a connect may wait on each host, 1 to 300 (default 10)",
    "mqtt.broker": "write mqtt://host[:port] or mqtts://host[:port]",
    "mqtt.prefix": "use letters, digits, -, _ and / only, as in the tables' [mqtt] prefix",
    "gaming_day.starts_at": 'write the hour the gaming day starts, e.g. "06:00"',
    "gaming_day.timezone": 'write an IANA zone name such as "America/New_York"',
    "start": 'write "HH:MM" on the 24-hour clock',
    "end": 'write "HH:MM" on the 24-hour clock',
    "console.listen": 'write HOST:PORT, e.g. listen = "127.0.0.1:8480" or "[::1]:8443"',
    "gaps.grace_s": "give the seconds a seq gap may stay open before it is stale, 1 to 86400 (default 30)",
    "report.work_mem": 'write a number and kB, MB or GB in quotes, e.g. work_mem = "64MB", or remove it',
    "public_key": "paste the public key the console's enrolment page showed (base64 of 32 bytes)",
}


def parse_floor_config(text: str, source: str = "FLOOR.toml") -> FloorConfig:
    return parse_config(text, source, FloorConfig, FloorConfigError, _FIXES)


def load_floor_config(path: Path) -> FloorConfig:
    return parse_floor_config(read_config(path, "the floor config", FloorConfigError), str(path))


def read_secret(path: Path | None, what: str, absent: str | None = None) -> str | None:
    """A password kept in its own file (never in the config: the config is world-readable in /etc): its first line.

    Only the end of line is taken off, not ASCII whitespace around it: PostgreSQL and mosquitto take any character
    in a password, a space or tab at either end included, and the table reads its broker password the same way
    (controller/mqtt/connection.py). A bare strip() also dropped a leading or trailing U+00A0 or U+3000 that is
    part of the password, and the server then refused a password the operator had written correctly. `absent`: the fix
    for a file that cannot be read, when the caller knows a better one than the general one (the service's group)."""
    if path is None:
        return None
    fix = "put the password on the file's first line"
    absent = absent or _absent_fix(what)
    try:
        # Bytes, then decoded: read_text() reads "\r" alone as an end of line too, and cut the password there. Read
        # bounded, as the table reads its own: a FIFO there froze the floor's start, /dev/zero filled its memory.
        line = first_line(read_bounded(path, SECRET_MAX_BYTES).decode("utf-8"))
    except FileRefused as err:
        raise FloorConfigError(f"{what}: cannot read {path}: {err.problem}: {absent}") from None
    except OSError as err:
        raise FloorConfigError(f"{what}: cannot read {path}: {err.strerror}: {absent}") from None
    except UnicodeDecodeError:
        raise FloorConfigError(f"{what}: {path} is not UTF-8 text; {fix}") from None
    if not line:
        raise FloorConfigError(f"{what}: {path}: its first line is empty; {fix}")
    return line


def _absent_fix(what: str) -> str:
    """The fix for a password file that is not there: configs/floor.toml and link.toml name files in /etc/tablectl that
    a new install has not written yet, and the bare "does not exist" left the operator to guess what goes in it."""
    server = "database" if what.startswith("database") else "broker"
    return (
        f"put the {server} password on its first line, readable by the service's user (e.g. install -m 0640), "
        "or remove password_file if the server asks for none"
    )
