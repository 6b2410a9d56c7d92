"""Driver plugins through the entry-point registry."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from drivers import registry
from drivers.interfaces import DealerPanel, DealingShoe, Device, Shuffler, WagerStation
from drivers.reference.wager_station import ReferenceWagerStation
from drivers.registry import DriverConfigError, available_drivers, create_driver


def test_reference_drivers_are_installed() -> None:
    drivers = available_drivers()
    assert {
        "reference-shuffler",
        "reference-shoe",
        "reference-wager-station",
        "reference-dealer-panel",
    } <= set(drivers)


@pytest.mark.parametrize(
    ("name", "protocol", "extra"),
    [
        ("reference-shuffler", Shuffler, {}),
        ("reference-shoe", DealingShoe, {}),
        ("reference-wager-station", WagerStation, {"seat": 3}),
        ("reference-dealer-panel", DealerPanel, {}),
    ],
)
def test_create_each_driver(name: str, protocol: type, extra: dict[str, int]) -> None:
    device = create_driver("dev", {"driver": name, "port": "/dev/ttyTable0", **extra})
    assert isinstance(device, Device) and isinstance(device, protocol)
    assert device.device_id == "dev"


def test_port_override_and_defaults() -> None:
    device = create_driver(
        "wager_station_3",
        {"driver": "reference-wager-station", "port": "/dev/ttyWager3", "seat": 3},
        port_override="/dev/pts/9",
    )
    assert isinstance(device, ReferenceWagerStation)
    assert device.settings.port == "/dev/pts/9"
    assert (device.seat, device.settings.address, device.settings.baudrate) == (3, 1, 115200)


def test_unknown_driver_names_it_and_lists_installed() -> None:
    with pytest.raises(DriverConfigError) as info:
        create_driver("shoe", {"driver": "acme-shoe", "port": "/dev/x"})
    message = str(info.value)
    assert "acme-shoe" in message and "reference-shoe" in message and "install" in message


def test_missing_driver_key() -> None:
    with pytest.raises(DriverConfigError, match="missing `driver`"):
        create_driver("shoe", {"port": "/dev/x"})


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"driver": "reference-wager-station", "port": "/dev/x"}, "seat"),
        ({"driver": "reference-wager-station", "port": "/dev/x", "seat": 0}, "seat"),
        ({"driver": "reference-shoe", "port": "/dev/x", "baudrate": "fast"}, "baudrate"),
        ({"driver": "reference-shoe", "port": "/dev/x", "adress": 2}, "adress"),
        ({"driver": "reference-shoe"}, "port"),
    ],
)
def test_invalid_settings_name_the_field(settings: dict[str, object], field: str) -> None:
    with pytest.raises(DriverConfigError) as info:
        create_driver("dev", settings)
    assert field in str(info.value) and "invalid settings" in str(info.value)


def test_a_start_reads_the_plugins_metadata_once_and_again_when_the_path_changes(
    monkeypatch: pytest.MonkeyPatch, install_distribution: Callable[..., Path]
) -> None:
    """A table's start asks for a driver about twice per device (the config check, then building it); each ask
    used to scan every installed distribution's metadata. One scan serves a path; a plugin folder put on the path
    afterwards is still found."""
    scans: list[dict[str, str]] = []

    def counted(**params: str) -> object:
        scans.append(params)
        return entry_points(**params)

    monkeypatch.setattr(registry, "entry_points", counted)
    monkeypatch.syspath_prepend(str(Path(__file__).parent))  # a path of this test's own: a fresh scan, counted
    for seat in range(1, 8):
        create_driver(f"wager_station_{seat}", {"driver": "reference-wager-station", "port": "/dev/null", "seat": seat})
    assert "reference-shuffler" in registry.installed_names()
    assert scans == [{}]  # one scan of every group: the software check reads the same (installed_entry_points)
    assert any(e.name == "tablectl" for e in registry.installed_entry_points().select(group="console_scripts"))
    assert len(scans) == 1

    install_distribution("acme-shuffler", {"acme-shuffler": "drivers.skeleton:SkeletonShuffler"}, {})
    assert "acme-shuffler" in registry.installed_names()
    assert registry.load_driver("acme-shuffler") is not None
    assert len(scans) == 2
