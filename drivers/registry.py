"""Driver plugins: found through the `table_controller.drivers` entry-point group."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any, cast

import structlog
from pydantic import BaseModel, ValidationError

from drivers.interfaces import Device

log = structlog.get_logger(__name__)

ENTRY_POINT_GROUP = "table_controller.drivers"


class DriverConfigError(ValueError):
    """A device's configuration names an unknown driver or has settings the driver rejects."""


def available_drivers() -> dict[str, type]:
    """Installed drivers by entry-point name. A plugin that fails to import is logged and skipped."""
    drivers: dict[str, type] = {}
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = entry_point.load()
        except Exception as exc:
            log.error(
                "driver plugin failed to load", driver=entry_point.name, target=entry_point.value, error=repr(exc)
            )
            continue
        if isinstance(loaded, type):
            drivers[entry_point.name] = loaded
        else:
            log.error("driver plugin is not a class", driver=entry_point.name, target=entry_point.value)
    return drivers


def settings_model(driver_class: type) -> type[BaseModel]:
    model = getattr(driver_class, "Settings", None)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise DriverConfigError(f"driver class {driver_class.__qualname__} has no pydantic `Settings` model")
    return model


def create_driver(device_id: str, raw_settings: Mapping[str, Any], port_override: str | None = None) -> Device:
    """Build the driver named by raw_settings["driver"] with the rest of raw_settings as its settings.

    port_override replaces the configured port (used to point a real config at simulator ptys); drivers
    whose settings have no port ignore it.
    """
    drivers = available_drivers()
    installed = ", ".join(sorted(drivers)) or "none"
    name = raw_settings.get("driver")
    if not isinstance(name, str) or not name:
        raise DriverConfigError(f"device {device_id!r}: missing `driver` key; set driver = one of: {installed}")
    driver_class = drivers.get(name)
    if driver_class is None:
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
