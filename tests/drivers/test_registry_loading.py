"""Building a device imports that device's driver alone; listing the drivers imports them all.

Each probe runs in a fresh interpreter, so sys.modules shows exactly what building one device imported. Next to
tablectl's own drivers another package is installed whose plugin records that it was imported and then fails:
a table that does not use it must neither import it nor hear of it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The fixtures of tests/drivers/conftest.py (a test module cannot import conftest under --import-mode=importlib).
InstallDistribution = Callable[..., Path]
FreshPython = Callable[..., Any]

BROKEN_PLUGIN = """
from pathlib import Path

Path(__file__).with_name("imported").write_text("yes")
raise ImportError("this plugin's vendor library is not installed")
"""

# Modules that only some drivers need: building a reference shoe must not import them.
OTHER_DRIVERS = (
    "drivers.vendor.usb_panel",
    "drivers.vendor.alpha_sign.driver",
    "drivers.reference.wager_bus",
    "drivers.reference.progressive_sign",
    "usb",
)

PROBE = """
import json, sys
from drivers.registry import DriverConfigError, create_driver
try:
    device = type(create_driver("dev", json.loads(sys.argv[1]))).__name__
except DriverConfigError as exc:
    device = f"error: {exc}"
watched = json.loads(sys.argv[2])
print(json.dumps({"device": device, "imported": sorted(m for m in watched if m in sys.modules)}))
"""


def probe(fresh_python: FreshPython, site: Path, settings: dict[str, Any], watched: tuple[str, ...]) -> dict[str, Any]:
    out = fresh_python(PROBE, json.dumps(settings), json.dumps(watched), path=(site,))
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])  # structlog logs to stdout before it
    result["log"] = out.stdout + out.stderr
    return result


def broken_site(install_distribution: InstallDistribution) -> Path:
    return install_distribution("acme-broken", {"acme-broken": "acme_broken:Driver"}, {"acme_broken.py": BROKEN_PLUGIN})


def test_a_reference_device_imports_no_other_driver(
    install_distribution: InstallDistribution, fresh_python: FreshPython
) -> None:
    site = broken_site(install_distribution)
    found = probe(fresh_python, site, {"driver": "reference-shoe", "port": "/dev/ttyShoe"}, OTHER_DRIVERS)
    assert found["device"] == "ReferenceDealingShoe"
    assert found["imported"] == []
    assert not (site / "imported").exists(), "the unused plugin was imported"
    assert "acme-broken" not in found["log"]


def test_a_vendor_device_imports_neither_the_reference_drivers_nor_the_others(
    install_distribution: InstallDistribution, fresh_python: FreshPython
) -> None:
    site = broken_site(install_distribution)
    panel = {"driver": "usb-hid-dealer-panel", "vendor_id": 0x16C0, "product_id": 0x27DB, "buttons": {"0": "fold"}}
    watched = ("drivers.reference.device", "drivers.vendor.alpha_sign.driver", "drivers.reference.wager_bus")
    found = probe(fresh_python, site, panel, watched)
    assert found["device"] == "UsbHidDealerPanel"
    assert found["imported"] == []
    assert not (site / "imported").exists()


def test_the_requested_plugin_failing_to_import_is_a_config_error_naming_it(
    install_distribution: InstallDistribution, fresh_python: FreshPython
) -> None:
    site = broken_site(install_distribution)
    found = probe(fresh_python, site, {"driver": "acme-broken", "port": "/dev/x"}, ())
    assert found["device"].startswith("error: device 'dev': driver plugin 'acme-broken' (acme_broken:Driver)")
    assert "vendor library is not installed" in found["device"]
    assert (site / "imported").exists()


def test_listing_loads_every_driver_and_skips_a_broken_one(
    install_distribution: InstallDistribution, fresh_python: FreshPython
) -> None:
    site = broken_site(install_distribution)
    listing = (
        "import json, sys\n"
        "from drivers.registry import available_drivers, installed_names\n"
        "print(json.dumps({'loaded': sorted(available_drivers()), 'installed': installed_names()}))\n"
    )
    out = fresh_python(listing, path=(site,))
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout.splitlines()[-1])
    assert "driver plugin unusable" in out.stdout and "acme-broken" in out.stdout
    assert "acme-broken" in found["installed"] and "acme-broken" not in found["loaded"]
    assert {"usb-hid-dealer-panel", "alpha-sign", "reference-shoe"} <= set(found["loaded"])
    assert (site / "imported").exists()


CHECK = """
import json, sys
from controller.cli.preflight import check_devices
findings = check_devices(json.loads(sys.argv[1]))
watched = json.loads(sys.argv[2])
print(json.dumps({
    "errors": [[f.field, f.problem] for f in findings if f.severity == "error"],
    "imported": sorted(m for m in watched if m in sys.modules),
}))
"""


def test_checking_a_config_imports_only_the_drivers_it_names(
    install_distribution: InstallDistribution, fresh_python: FreshPython
) -> None:
    """`tablectl run` and `check-config` check each device against its own driver: the table's start imports
    neither the other vendors' drivers nor a broken plugin it does not use."""
    site = broken_site(install_distribution)
    devices = {"shoe": {"driver": "reference-shoe", "port": "/dev/ttyShoe"}}
    out = fresh_python(CHECK, json.dumps(devices), json.dumps(OTHER_DRIVERS), path=(site,))
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout.splitlines()[-1])
    assert found == {"errors": [], "imported": []}
    assert not (site / "imported").exists(), "the unused plugin was imported"


def test_checking_a_config_that_names_a_broken_plugin_says_it_does_not_load(
    install_distribution: InstallDistribution, fresh_python: FreshPython
) -> None:
    site = broken_site(install_distribution)
    devices = {"shoe": {"driver": "acme-broken", "port": "/dev/x"}}
    out = fresh_python(CHECK, json.dumps(devices), "[]", path=(site,))
    assert out.returncode == 0, out.stderr
    [[field, problem]] = json.loads(out.stdout.splitlines()[-1])["errors"]
    assert field == "devices.shoe.driver"
    assert problem.startswith("names driver 'acme-broken', which is installed but does not load")
    assert "vendor library is not installed" in problem
