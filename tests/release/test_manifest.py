"""The release manifest and its verdict (605a.4(c)): the pure model, without a disk but for the digest's check
against coreutils' own sha256sum, which is how a laboratory recomputes it (docs/software.md)."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import json
import os
import random
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.release import installed
from controller.release.manifest import (
    ALWAYS_REFUSED,
    COVERED_GROUPS,
    DRIVER_GROUP,
    Manifest,
    ManifestError,
    covered_entry_point,
    digest_of,
    entry_point_line,
    judge,
    listing,
    parse,
    public_key_b64,
    sign,
)

RELEASE = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
OTHER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
TRUSTED = [public_key_b64(RELEASE)]
CREATED = "2026-11-26T07:00:00Z"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


FILES = {
    "controller/__init__.py": sha(b"v"),
    "controller/core/money.py": sha(b"cents"),
    "drivers/base.py": sha(b"device"),
    "floor/__init__.py": sha(b""),
}


def signed(files: dict[str, str] | None = None, key: Ed25519PrivateKey = RELEASE) -> Manifest:
    return parse(sign(files or FILES, "0.1.0", CREATED, key).to_json())


def test_605a_4_c_the_signed_code_as_installed_is_verified() -> None:
    j = judge(dict(FILES), signed(), TRUSTED)
    assert (j.verdict, j.problem, j.digest) == ("verified", None, digest_of(FILES))
    assert not j.refuses(require_verified=True)
    assert set(j.statuses().values()) == {"ok"}


def test_605a_4_c_an_altered_a_missing_and_an_extra_file_are_each_named() -> None:
    found = dict(FILES)
    found["controller/core/money.py"] = sha(b"cents, altered")
    del found["drivers/base.py"]
    found["controller/evil.pyc"] = sha(b"planted")
    j = judge(found, signed(), TRUSTED)
    assert j.verdict == "mismatch" and j.refuses(require_verified=False)
    assert j.statuses() == {
        "controller/__init__.py": "ok",
        "controller/core/money.py": "mismatch",
        "controller/evil.pyc": "extra",
        "drivers/base.py": "missing",
        "floor/__init__.py": "ok",
    }
    assert j.problem is not None and "controller/core/money.py" in j.problem and "reinstall" in j.problem
    assert j.digest == digest_of(found) != signed().digest  # the digest is of what runs, not of what was signed


def test_a_manifest_signed_by_another_key_is_untrusted_and_refused() -> None:
    j = judge(dict(FILES), signed(key=OTHER), TRUSTED)
    assert j.verdict == "untrusted_key" and j.refuses(require_verified=False)
    assert j.problem is not None and public_key_b64(OTHER) in j.problem and "release_keys" in j.problem


def test_a_manifest_altered_after_signing_has_a_bad_signature() -> None:
    m = signed()
    # Re-point a file at other bytes and state the digest that goes with it: only the signature can tell.
    obj = json.loads(m.to_json())
    obj["files"]["controller/core/money.py"] = sha(b"cents, altered")
    obj["digest"] = digest_of(obj["files"])
    forged = parse(json.dumps(obj).encode())
    j = judge({**FILES, "controller/core/money.py": sha(b"cents, altered")}, forged, TRUSTED)
    assert j.verdict == "bad_signature" and j.refuses(require_verified=False)
    assert j.problem is not None and "altered after it was signed" in j.problem


def test_no_manifest_refuses_only_where_the_config_requires_verified_code() -> None:
    j = judge(dict(FILES), None, TRUSTED, manifest_path="/opt/t/tablectl-release.json")
    assert j.verdict == "no_manifest" and j.refuses(require_verified=True) and not j.refuses(require_verified=False)
    assert j.problem is not None and "/opt/t/tablectl-release.json" in j.problem and "release sign" in j.problem
    assert set(j.statuses().values()) == {"unverified"}


def test_a_signed_manifest_without_release_keys_to_check_it_is_not_verified() -> None:
    j = judge(dict(FILES), signed(), [])
    assert j.verdict == "no_release_keys" and not j.refuses(False) and j.refuses(True)


def test_an_unreadable_manifest_is_refused_whatever_the_config() -> None:
    j = judge(dict(FILES), None, TRUSTED, manifest_problem="is not JSON", manifest_path="m.json")
    assert (j.verdict, j.problem) == ("bad_manifest", "m.json is not JSON") and j.refuses(False)
    assert {"mismatch", "bad_manifest", "bad_signature", "untrusted_key"} == ALWAYS_REFUSED


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (b"\xff", "is not JSON"),
        (b"[1]", "is not a tablectl-release/1 manifest"),
        (b'{"format": "tablectl-release/1"}', "lacks"),
        (
            b'{"format": "tablectl-release/1", "version": "1", "created": "c", "key": "k", "signature": "s", '
            b'"digest": "d", "files": {"../etc/passwd": "00"}}',
            "'../etc/passwd'",
        ),
    ],
)
def test_a_manifest_that_is_not_one_says_what_is_wrong(text: bytes, says: str) -> None:
    with pytest.raises(ManifestError, match="release sign") as err:
        parse(text)
    assert says in str(err.value)


def test_a_stated_digest_that_its_files_do_not_give_is_refused() -> None:
    obj = json.loads(signed().to_json())
    obj["digest"] = "0" * 64
    with pytest.raises(ManifestError, match="states digest 0000"):
        parse(json.dumps(obj).encode())


_name = st.text(alphabet="abcdefghij_0123456789.", min_size=1, max_size=8).filter(lambda s: s not in (".", ".."))
_paths = st.lists(_name, min_size=1, max_size=3).map(lambda parts: "controller/" + "/".join(parts))


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_paths, st.binary(max_size=64), min_size=1, max_size=12), st.data())
def test_any_release_round_trips_verified_and_any_one_change_is_named(
    files: dict[str, bytes], data: st.DataObject
) -> None:
    hashed = {p: sha(b) for p, b in files.items()}
    m = signed(hashed)
    assert judge(hashed, m, TRUSTED).verdict == "verified"
    victim = data.draw(st.sampled_from(sorted(hashed)))
    j = judge({**hashed, victim: sha(files[victim] + b"!")}, m, TRUSTED)
    assert j.verdict == "mismatch" and j.comparison.mismatched == (victim,)
    assert [p for p, v in j.statuses().items() if v != "ok"] == [victim]


def test_the_digest_is_what_coreutils_sha256sum_gives_for_the_same_files(tmp_path: Path) -> None:
    """A laboratory needs no tablectl to recompute the digest: `find | LC_ALL=C sort | sha256sum | sha256sum`."""
    contents = {"controller/a b.py": b"x", "controller/Z.py": b"y", "controller/_z.py": b"z", "drivers/\u00e9.py": b"e"}
    for rel, body in contents.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(body)
    script = "find controller drivers -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum"
    lab = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, check=True).stdout
    ours = {p: sha(b) for p, b in contents.items()}
    assert lab.decode() == listing(ours)
    assert hashlib.sha256(lab).hexdigest() == digest_of(ours)


def test_the_scan_hashes_each_file_as_sha256sum_does_and_never_reads_a_fifo(tmp_path: Path) -> None:
    """Every byte of a file larger than one read (installed.READ_BYTES), an empty file, and a FIFO planted among the
    files (listed by what it is, never opened for reading, which would block)."""
    big = random.Random(19).randbytes(2 * installed.READ_BYTES + 7)
    (tmp_path / "controller").mkdir()
    (tmp_path / "controller" / "big.py").write_bytes(big)
    (tmp_path / "controller" / "empty.py").write_bytes(b"")
    os.mkfifo(tmp_path / "controller" / "planted.py")
    os.chmod(tmp_path / "controller" / "planted.py", 0o644)  # whatever the umask
    found = installed.scan(tmp_path, ("controller",))
    lab = subprocess.run(
        ["sha256sum", "controller/big.py", "controller/empty.py"], cwd=tmp_path, capture_output=True, check=True
    ).stdout.decode()
    assert {line.split()[1]: line.split()[0] for line in lab.splitlines()} == {
        "controller/big.py": found["controller/big.py"],
        "controller/empty.py": found["controller/empty.py"],
    }
    assert found["controller/planted.py"] == sha(b"not a regular file: prw-r--r--")


SHOE = "table_controller.drivers reference-shoe = drivers.reference.shoe:ReferenceDealingShoe"
SCRIPT = "console_scripts tablectl = controller.cli.main:main"


def test_605a_4_c_the_entry_points_are_signed_and_a_second_registration_is_named() -> None:
    """The driver entry points choose the code that drives each device: signed with the files; a second distribution
    registering `reference-shoe` is one line more (the registry would load one of the two), a re-pointed one is its
    signed line missing and its new line extra; the files' digest stays the one a laboratory recomputes."""
    m = parse(sign(FILES, "0.1.0", CREATED, RELEASE, [SHOE, SCRIPT]).to_json())
    assert m.entry_points == (SCRIPT, SHOE)
    ok = judge(dict(FILES), m, TRUSTED, entry_points=[SHOE, SCRIPT])
    assert (ok.verdict, ok.digest) == ("verified", digest_of(FILES))
    shadow = "table_controller.drivers reference-shoe = shoe_override:Shoe"
    twice = judge(dict(FILES), m, TRUSTED, entry_points=[SHOE, SCRIPT, shadow])
    assert twice.verdict == "mismatch" and twice.refuses(require_verified=False)
    assert twice.comparison.entry_points_extra == (shadow,) and "1 entry point(s) not in the manifest" in str(
        twice.problem
    )
    moved = judge(dict(FILES), m, TRUSTED, entry_points=[shadow, SCRIPT])
    assert moved.entry_point_statuses() == {SCRIPT: "ok", shadow: "extra", SHOE: "missing"}
    # The signature covers them: a line changed in the file after signing is a bad signature.
    body = json.loads(sign(FILES, "0.1.0", CREATED, RELEASE, [SHOE]).to_json())
    body["entry_points"] = [shadow]
    assert judge(dict(FILES), parse(json.dumps(body).encode()), TRUSTED).verdict == "bad_signature"


def test_a_manifest_signed_before_entry_points_were_covered_lists_none() -> None:
    old = json.loads(sign(FILES, "0.1.0", CREATED, RELEASE).to_json())
    del old["entry_points"]
    body = {k: v for k, v in old.items() if k != "signature"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
    old["signature"] = base64.b64encode(RELEASE.sign(canonical)).decode()
    m = parse(json.dumps(old).encode())
    assert m.entry_points is None
    assert judge(dict(FILES), m, TRUSTED).verdict == "verified"  # nothing found, nothing signed
    j = judge(dict(FILES), m, TRUSTED, entry_points=[SHOE])
    assert j.verdict == "mismatch" and j.comparison.entry_points_extra == (SHOE,)


def test_the_signed_driver_group_is_the_one_the_registry_loads() -> None:
    from controller.release.manifest import DRIVER_GROUP
    from drivers.registry import ENTRY_POINT_GROUP

    assert DRIVER_GROUP == ENTRY_POINT_GROUP


def test_the_running_installation_s_entry_points_come_from_one_scan_as_entry_points_finds_them_per_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The software check reads the covered groups from one scan of the installed distributions (issue 19: each scan
    is 1.5-3 ms of a start), and finds exactly what importlib.metadata.entry_points(group=...) finds, in its order:
    the drivers drivers/registry.py loads and the `tablectl` script."""
    expected = [(e.group, e.name, e.value) for g in COVERED_GROUPS for e in importlib.metadata.entry_points(group=g)]
    scans: list[dict[str, str]] = []
    scan = importlib.metadata.entry_points

    def counted(**params: str) -> object:
        scans.append(params)
        return scan(**params)

    monkeypatch.setattr(importlib.metadata, "entry_points", counted)
    found = installed._running()
    assert found == expected
    assert ("console_scripts", "tablectl", "controller.cli.main:main") in found
    assert any(g == DRIVER_GROUP and n == "reference-shuffler" for g, n, _ in found)
    assert scans == [{}]


def test_a_start_scans_the_installed_entry_points_once_for_the_drivers_and_the_software_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`tablectl run` checks the config (loading each device's driver), then makes the 605a.4(c) software check over
    the drivers' group and the `tablectl` script: one scan of every installed distribution serves both (issue 19:
    a second scan was ~1.5 ms of a start's CPU), so the verdict covers exactly the entry points the drivers were
    loaded from."""
    from controller.cli.preflight import load_for_run
    from controller.mqtt.birth import software_check
    from drivers import registry

    scans: list[str] = []
    scan = importlib.metadata.entry_points

    def counted(who: str) -> Callable[..., object]:
        def entry_points(**params: str) -> object:
            scans.append(who)
            return scan(**params)

        return entry_points

    monkeypatch.setattr(registry, "entry_points", counted("drivers.registry"))
    monkeypatch.setattr(importlib.metadata, "entry_points", counted("controller.release"))
    monkeypatch.syspath_prepend(str(tmp_path))  # a path of this test's own: the registry's scan is fresh, and counted
    installed._check_installed.cache_clear()  # and so is the check's verdict
    root = Path(__file__).resolve().parents[2]
    config = load_for_run(root / "configs" / "let-it-ride.toml", tmp_path / "journal.sqlite")
    judged = software_check(config).judgement
    assert scans == ["drivers.registry"]
    lines = [entry_point_line(g, n, v) for g, n, v in installed._running() if covered_entry_point(g, n)]
    assert len(scans) == 2  # that one was a scan of its own, as verify-software makes: the verdict saw the same lines
    assert sorted(judged.found_entry_points) == sorted(lines)
    assert "console_scripts tablectl = controller.cli.main:main" in lines
    installed._check_installed.cache_clear()
