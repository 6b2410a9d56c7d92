"""Driver plugins: found through the `table_controller.drivers` entry-point group."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from importlib.metadata import EntryPoint, EntryPoints, entry_points
from typing import Any, Protocol, cast

import structlog
from pydantic import BaseModel, ValidationError

from drivers.interfaces import Device

log = structlog.get_logger(__name__)

ENTRY_POINT_GROUP = "table_controller.drivers"


class DriverConfigError(ValueError):
    """A device's configuration names an unknown driver or has settings the driver rejects."""


class Grouped(Protocol):
    """Installed entry points by group, as importlib.metadata.entry_points() returns them (a dict of groups on Python
    3.11, one EntryPoints from 3.12): kept as found, since flattening 3.11's costs a select per group."""

    def select(self, *, group: str) -> EntryPoints: ...


# The installed entry points (every group) as last read, and the sys.path they were read from. Reading them opens
# every installed distribution's metadata (a later scan in the process still costs ~1.5 ms of CPU, more with many
# packages; the first also lists the path's folders), and a start asks for them about twice per device (the config
# check, then building each driver) and once more for the software check (controller.release.installed reads the
# drivers' group and the `tablectl` script from this same scan, handed to it by controller.mqtt.birth): one scan
# serves the whole start, and the check's verdict covers exactly the entry points the drivers are loaded from. A
# package installed into a folder already on the path while the process runs is therefore not seen until the next
# start (by the registry or the check); a changed sys.path (a plugin folder added, as tests and plugin loaders do)
# reads them again.
_SCANNED: dict[tuple[str, ...], tuple[Grouped, tuple[EntryPoint, ...]]] = {}  # at most one: the current path's


def _scan() -> tuple[Grouped, tuple[EntryPoint, ...]]:
    path = tuple(sys.path)
    found = _SCANNED.get(path)
    if found is None:
        _SCANNED.clear()
        every = entry_points()
        found = _SCANNED[path] = (every, tuple(every.select(group=ENTRY_POINT_GROUP)))
    return found


def installed_entry_points() -> Grouped:
    """Every installed entry point, of every group, as importlib.metadata.entry_points() finds them on the current
    sys.path (each distribution once, the first found of a name), from the process's one scan for that path."""
    return _scan()[0]


def _group() -> tuple[EntryPoint, ...]:
    """The installed entry points of the drivers' group, in the order importlib.metadata finds them."""
    return _scan()[1]


def installed_names() -> list[str]:
    """Names of the installed drivers, sorted; read from the packages' metadata, nothing is imported."""
    return sorted({entry_point.name for entry_point in _group()})


def _load(entry_point: EntryPoint) -> type:
    """The driver class an entry point names; raises DriverConfigError saying why it cannot be had."""
    try:
        loaded = entry_point.load()
    except Exception as exc:
        raise DriverConfigError(
            f"driver plugin {entry_point.name!r} ({entry_point.value}) failed to load: {exc!r}"
        ) from exc
    if not isinstance(loaded, type):
        raise DriverConfigError(f"driver plugin {entry_point.name!r} ({entry_point.value}) is not a class")
    return loaded


def load_driver(name: str) -> type | None:
    """The class of driver `name`, importing that plugin alone; None if no installed package registers it.

    When two packages register one name the last found wins, as in available_drivers()."""
    found = [entry_point for entry_point in _group() if entry_point.name == name]
    return _load(found[-1]) if found else None


def available_drivers() -> dict[str, type]:
    """Every installed driver by entry-point name (imports them all: for listing and checking configs). A plugin
    that fails to import is logged and skipped."""
    drivers: dict[str, type] = {}
    for entry_point in _group():
        try:
            drivers[entry_point.name] = _load(entry_point)
        except DriverConfigError as exc:
            log.error("driver plugin unusable", driver=entry_point.name, target=entry_point.value, error=str(exc))
    return drivers


def settings_model(driver_class: type) -> type[BaseModel]:
    model = getattr(driver_class, "Settings", None)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise DriverConfigError(f"driver class {driver_class.__qualname__} has no pydantic `Settings` model")
    return model


def create_driver(device_id: str, raw_settings: Mapping[str, Any], port_override: str | None = None) -> Device:
    """Build the driver named by raw_settings["driver"] with the rest of raw_settings as its settings.

    Only that driver's plugin is imported: a table need not load (or have the libraries of) drivers it does not use.

    port_override replaces the configured port (used to point a real config at simulator ptys); drivers
    whose settings have no port ignore it.
    """
    name = raw_settings.get("driver")
    if not isinstance(name, str) or not name:
        installed = ", ".join(installed_names()) or "none"
        raise DriverConfigError(f"device {device_id!r}: missing `driver` key; set driver = one of: {installed}")
    try:
        driver_class = load_driver(name)
    except DriverConfigError as exc:
        raise DriverConfigError(f"device {device_id!r}: {exc}") from None
    if driver_class is None:
        installed = ", ".join(installed_names()) or "none"
        raise DriverConfigError(
            f"device {device_id!r}: unknown driver {name!r}. Installed drivers: {installed}. "
            f"Fix the `driver` key, or install the package that provides {name!r} "
            f"(it must register it under the entry-point group {ENTRY_POINT_GROUP!r})."
        )
    data = dict(raw_settings)
    model = settings_model(driver_class)
    if port_override is not None and "port" in model.model_fields:
        # A device without a serial port (a USB HID panel) keeps its own way of being found.
        data["port"] = port_override
    if "driver" not in model.model_fields:
        data.pop("driver")
    try:
        settings = model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or '(settings)'}: {error['msg']}" for error in exc.errors()
        )
        raise DriverConfigError(f"device {device_id!r} (driver {name!r}): invalid settings: {problems}") from None
    return cast(Device, driver_class(device_id, settings))
