"""LINK.toml: the link controller's config (configs/link.toml is the annotated example).

The meters' figures are the same model as a table's (controller.progressive.parameters): each wager spot feeds
levels with a seed, a reseed, a primary and a reserve rate and an optional limit. The figures in the file are
the ones a new link starts with; once the link's database holds them, only a signed `set_parameters` while the
link is closed changes them (NY 9 NYCRR 5321.18 stand-in for 605a.8: no parameter change while in operation), so
check-config says when the file and the database differ.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from controller.config.broker import BrokerAddress, parse_broker_address
from controller.config.keys import decode_public_key
from controller.config.software import SoftwareSettings
from controller.progressive.parameters import (
    LEVEL_PATTERN,
    LevelParameters,
    ParameterError,
    ProgressiveParameters,
    TableProgressives,
    first_error,
    percent_to_ppm,
)
from floor.config import DatabaseSection, read_secret
from floor.config_files import parse_config, read_config

ID_PATTERN = r"^[A-Za-z0-9_\-]{1,64}$"
LinkRole = Literal["floorperson", "supervisor"]


class LinkConfigError(ValueError):
    """A LINK.toml that cannot be used; the message lists every problem with its fix."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MqttSection(_Section):
    broker: str = "mqtt://127.0.0.1:1883"
    prefix: str = Field("tablectl", pattern=r"^[A-Za-z0-9_\-]+(/[A-Za-z0-9_\-]+)*$")
    client_id: str | None = Field(None, pattern=r"^[A-Za-z0-9_\-.]{1,64}$")
    username: str | None = None
    password_file: Path | None = None
    ca_file: Path | None = None

    @field_validator("broker")
    @classmethod
    def _url(cls, value: str) -> str:
        parse_broker_address(value)
        return value

    @property
    def address(self) -> BrokerAddress:
        return parse_broker_address(self.broker)


class LinkedTable(_Section):
    """A table on the link, identified uniquely (5321.18: the controller identifies each linked table)."""

    table_id: str = Field(pattern=ID_PATTERN, description="the table's table_id, as in its config")
    asset_number: str = Field(min_length=1, max_length=32, description="the asset number every sign shows at a hit")


class LevelFigures(_Section):
    level: str = Field(pattern=LEVEL_PATTERN)
    seed_cents: int = Field(ge=0)
    reseed_cents: int = Field(ge=0)
    primary_percent: Decimal = Field(ge=0, le=100)
    reserve_percent: Decimal = Field(Decimal(0), ge=0, le=100)
    limit_cents: int | None = Field(None, gt=0)
    rule: str = Field(min_length=1)

    @field_validator("primary_percent", "reserve_percent", mode="before")
    @classmethod
    def _exact(cls, value: object) -> object:
        return str(value) if isinstance(value, float) else value  # 4.25 stays 4.25 (parameters.percent_to_ppm)


class ProgressiveFigures(_Section):
    wager: str = Field(pattern=LEVEL_PATTERN, description="the wager spot that feeds these levels at every table")
    wager_cents: int | None = Field(None, gt=0)
    rule: str = Field(min_length=1)
    levels: list[LevelFigures] = Field(min_length=1)


class LinkSection(_Section):
    id: str = Field(pattern=ID_PATTERN, description="the link's name in topics, events and reports")
    lease_ms: int = Field(5000, ge=500, le=60_000, description="how long a heartbeat's lease lets a table play")
    heartbeat_ms: int = Field(1000, ge=100, le=30_000, description="how often a table renews its lease")
    # Off until every floor reading this link's topics is one that knows the field (docs/mqtt.md, "The link"): a floor
    # older than it refuses the whole retained list, and its console then shows no pending jackpot.
    jackpot_meter_after: bool = Field(
        False, strict=True, description="the retained jackpot list says each hit's meter_after_cents"
    )

    @model_validator(mode="after")
    def _renew_in_time(self) -> LinkSection:
        if self.heartbeat_ms * 2 > self.lease_ms:
            raise ValueError(
                f"heartbeat_ms {self.heartbeat_ms} is more than half of lease_ms {self.lease_ms}: one lost "
                "heartbeat would lock the tables out; lower heartbeat_ms or raise lease_ms"
            )
        return self


class LinkSupervisor(_Section):
    key_id: str = Field(pattern=r"^[A-Za-z0-9_.@\-]{1,64}$")
    role: LinkRole
    public_key: str

    @field_validator("public_key")
    @classmethod
    def _key(cls, value: str) -> str:
        decode_public_key(value)
        return value


class LinkConfig(_Section):
    link: LinkSection
    database: DatabaseSection
    mqtt: MqttSection = MqttSection()
    tables: list[LinkedTable] = Field(min_length=2)
    progressive: list[ProgressiveFigures] = Field(min_length=1)
    supervisors: list[LinkSupervisor] = Field(min_length=1)
    max_command_age_s: float = Field(120.0, gt=0, le=3600)
    # 5321.18's self-check at power-up authenticates the controller's own software: the installed code against its
    # signed release manifest (605a.4(c), docs/software.md), as the tables check theirs.
    software: SoftwareSettings = SoftwareSettings()

    @model_validator(mode="after")
    def _unique(self) -> LinkConfig:
        for what, names in (
            ("tables[].table_id", [t.table_id for t in self.tables]),
            ("tables[].asset_number", [t.asset_number for t in self.tables]),
            ("supervisors[].key_id", [s.key_id for s in self.supervisors]),
        ):
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ValueError(f"{what} must be unique; {', '.join(dupes)} appear(s) more than once")
        figures_of(self.progressive)  # the meter model's own checks, with its messages
        return self

    def table(self, table_id: str) -> LinkedTable | None:
        return next((t for t in self.tables if t.table_id == table_id), None)

    @property
    def figures(self) -> TableProgressives:
        return figures_of(self.progressive)


def figures_of(progressive: list[ProgressiveFigures]) -> TableProgressives:
    """The config's figures as the meter model's parameters (rates exact in ppm); ValueError naming the problem."""
    try:
        return TableProgressives(
            progressives=tuple(
                ProgressiveParameters(
                    wager=p.wager,
                    wager_cents=p.wager_cents,
                    rule=p.rule,
                    levels=tuple(
                        LevelParameters(
                            level=lv.level,
                            seed_cents=lv.seed_cents,
                            reseed_cents=lv.reseed_cents,
                            primary_ppm=percent_to_ppm(lv.primary_percent, f"{lv.level}.primary_percent"),
                            reserve_ppm=percent_to_ppm(lv.reserve_percent, f"{lv.level}.reserve_percent"),
                            limit_cents=lv.limit_cents,
                            rule=lv.rule,
                        )
                        for lv in p.levels
                    ),
                )
                for p in progressive
            )
        )
    except ParameterError:
        raise
    except ValueError as exc:
        raise ParameterError(first_error(exc)) from None


_FIXES = {
    "link": 'add a [link] section with id = "ms-floor-mega"',
    "database": 'add a [database] section with dsn = "host=db1,db2 dbname=link target_session_attrs=read-write"',
    "tables": "list every linked table as [[tables]] with table_id and asset_number (at least two)",
    "progressive": "give the linked meters as [[progressive]] with wager, rule and [[progressive.levels]]",
    "supervisors": "add [[supervisors]] entries (tablectl command keygen prints one) to sign the link's commands",
    "database.dsn": 'write the PostgreSQL connection string, e.g. dsn = "host=db1,db2 dbname=link user=link"',
    "link.jackpot_meter_after": 'write true (only once every floor is upgraded: docs/mqtt.md, "The link") or false',
    "database.connect_timeout_s": "give the whole seconds a connect may wait on each host, 1 to 300 (default 10)",
    "mqtt.broker": "write mqtt://host[:port] or mqtts://host[:port]",
}


def parse_link_config(text: str, source: str = "LINK.toml") -> LinkConfig:
    return parse_config(text, source, LinkConfig, LinkConfigError, _FIXES, list_known=False)


def load_link_config(path: Path) -> LinkConfig:
    return parse_link_config(read_config(path, "the link config", LinkConfigError), str(path))


def secret(path: Path | None, what: str) -> str | None:
    try:
        return read_secret(path, what)
    except ValueError as err:
        raise LinkConfigError(str(err)) from None
