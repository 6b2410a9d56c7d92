"""The release manifest and its verdict, pure: bytes and mappings in, a verdict out (no file is read here).

58 Pa. Code 605a.4(c): an electronic gaming table "must have the capacity to allow the Bureau of Gaming Laboratory
Operations to verify all relevant control software for authenticity"; GLI-11's program verification asks the same
of the program storage at start. The manifest lists every file of the installed packages with its sha256 and is
signed with Ed25519 by a release key. The overall digest is the sha256 of the listing `sha256sum` prints for those
files in byte order of their paths, so a laboratory recomputes it with coreutils alone (docs/software.md).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # imported where used: a daemon without a release manifest never loads cryptography
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

FORMAT = "tablectl-release/1"
# The packages the one distribution installs (pyproject.toml [tool.setuptools.packages.find]).
PACKAGES = ("controller", "drivers", "floor", "link", "leash")
RULE = "605a.4(c)"
# The entry points the manifest signs besides the files: they decide which code runs without being code themselves,
# the driver plugins (drivers/registry.py's group: a class per `driver = "..."`) and the `tablectl` command.
DRIVER_GROUP = "table_controller.drivers"

Verdict = Literal[
    "verified", "mismatch", "no_manifest", "bad_manifest", "bad_signature", "untrusted_key", "no_release_keys"
]
# Verdicts that refuse the table whatever the config says: the code differs from what was signed, or the manifest
# cannot be trusted (altered after signing, or signed by a key the config does not list).
ALWAYS_REFUSED: frozenset[Verdict] = frozenset({"mismatch", "bad_manifest", "bad_signature", "untrusted_key"})
# "unverified": there is no manifest to hold the file against.
FileStatus = Literal["ok", "mismatch", "missing", "extra", "unverified"]

_HEX64 = re.compile(r"[0-9a-f]{64}")


class ManifestError(ValueError):
    """A manifest that cannot be read as one; the message says what is wrong and what to do."""


def path_problem(path: str) -> str | None:
    """Why `path` cannot be listed (sha256sum escapes backslashes and newlines, and the listing must be the same on
    every machine), or None."""
    if not path or path.startswith("/") or "\\" in path or "\n" in path or "\r" in path:
        return f"{path!r} is not a plain relative path (no leading /, backslash or line break)"
    if any(part in ("", ".", "..") for part in path.split("/")):
        return f"{path!r} has an empty, . or .. component"
    return None


def _byte_order(paths: Collection[str]) -> list[str]:
    # `LC_ALL=C sort`'s order: by the UTF-8 bytes, which is also code point order.
    return sorted(paths, key=lambda p: p.encode("utf-8"))


def listing(files: Mapping[str, str]) -> str:
    """What `sha256sum` prints for these files, in byte order of their paths: '<sha256>  <path>' per line."""
    return "".join(f"{files[p]}  {p}\n" for p in _byte_order(files))


def digest_of(files: Mapping[str, str]) -> str:
    """The overall digest: sha256 of the listing (docs/software.md says how a laboratory recomputes it)."""
    return hashlib.sha256(listing(files).encode("utf-8")).hexdigest()


def public_key_b64(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return base64.b64encode(public.public_bytes(Encoding.Raw, PublicFormat.Raw)).decode("ascii")


@dataclass(frozen=True, slots=True)
class Manifest:
    """The release manifest (605a.4(c)): every installed file's sha256 and the entry points, signed by a release key."""

    version: str
    created: str
    files: Mapping[str, str]  # relative path -> sha256 (hex)
    key: str  # base64 of the raw Ed25519 public key that signed it
    signature: str = ""  # base64 of the Ed25519 signature over `signed_bytes`
    packages: tuple[str, ...] = PACKAGES
    # "<group> <name> = <value>" lines in byte order (entry_point_line); None: a manifest signed before they were
    # covered, which then lists none of them
    entry_points: tuple[str, ...] | None = None

    @property
    def digest(self) -> str:
        return digest_of(self.files)

    def body(self) -> dict[str, Any]:
        """Everything the signature covers: the digest is in it, so the signature vouches for every file, and the
        entry points."""
        body: dict[str, Any] = {
            "format": FORMAT,
            "version": self.version,
            "created": self.created,
            "packages": list(self.packages),
            "files": {p: self.files[p] for p in _byte_order(self.files)},
            "digest": self.digest,
            "key": self.key,
        }
        if self.entry_points is not None:
            body["entry_points"] = _byte_order(self.entry_points)
        return body

    def signed_bytes(self) -> bytes:
        return json.dumps(self.body(), sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")

    def to_json(self) -> bytes:
        return (json.dumps({**self.body(), "signature": self.signature}, indent=1, ensure_ascii=True) + "\n").encode()


def entry_point_line(group: str, name: str, value: str) -> str:
    """One entry point as the manifest lists it: `<group> <name> = <value>`, as entry_points.txt would say it."""
    return f"{group} {name} = {value}"


# The groups covered_entry_point takes entries from.
COVERED_GROUPS = (DRIVER_GROUP, "console_scripts")


def covered_entry_point(group: str, name: str) -> bool:
    return group == DRIVER_GROUP or (group == "console_scripts" and name == "tablectl")


def sign(
    files: Mapping[str, str],
    version: str,
    created: str,
    key: Ed25519PrivateKey,
    entry_points: Sequence[str] = (),
) -> Manifest:
    bad = [problem for p in files if (problem := path_problem(p))]
    bad += [f"entry point {e!r} has a line break" for e in entry_points if "\n" in e or "\r" in e]
    if bad:
        raise ManifestError(f"cannot list the installed files: {bad[0]}; rename the file")
    points = tuple(_byte_order(entry_points))
    unsigned = Manifest(version, created, dict(files), public_key_b64(key), entry_points=points)
    signature = base64.b64encode(key.sign(unsigned.signed_bytes())).decode("ascii")
    return Manifest(version, created, dict(files), unsigned.key, signature, entry_points=points)


_RESIGN = "build and sign it again from the certified release: `tablectl release sign --key <release key>`"


def parse(data: bytes) -> Manifest:
    """The manifest in `data`; ManifestError naming what is wrong (it was not written by `tablectl release sign`)."""
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ManifestError(f"is not JSON ({err}): {_RESIGN}") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        found = obj.get("format") if isinstance(obj, dict) else type(obj).__name__
        raise ManifestError(f"is not a {FORMAT} manifest (format {found!r}): {_RESIGN}")
    files = obj.get("files")
    strings = {k: obj.get(k) for k in ("version", "created", "key", "signature", "digest")}
    missing = sorted(k for k, v in strings.items() if not isinstance(v, str))
    if missing or not isinstance(files, dict):
        raise ManifestError(f"lacks {', '.join(missing) or 'files'} or has it of the wrong type: {_RESIGN}")
    for path, sha in files.items():
        problem = path_problem(path)
        if problem or not isinstance(sha, str) or not _HEX64.fullmatch(sha):
            raise ManifestError(f"lists {path!r} with {problem or f'sha256 {sha!r}'}: {_RESIGN}")
    packages = obj.get("packages", list(PACKAGES))
    if not isinstance(packages, list) or not all(isinstance(p, str) and not path_problem(p) for p in packages):
        raise ManifestError(f"has packages {packages!r}, not a list of package names: {_RESIGN}")
    points = obj.get("entry_points")
    if points is not None and not (
        isinstance(points, list) and all(isinstance(e, str) and "\n" not in e and "\r" not in e for e in points)
    ):
        raise ManifestError(f"has entry_points {points!r}, not a list of one-line strings: {_RESIGN}")
    m = Manifest(
        str(strings["version"]),
        str(strings["created"]),
        files,
        str(strings["key"]),
        str(strings["signature"]),
        tuple(packages),
        None if points is None else tuple(points),
    )
    if strings["digest"] != m.digest:
        raise ManifestError(f"states digest {strings['digest']} but its files give {m.digest}: {_RESIGN}")
    return m


def raw_key(text: str) -> bytes | None:
    """The 32 raw bytes of a base64 Ed25519 public key, or None when `text` is not one."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 32 else None


def signature_problem(m: Manifest) -> str | None:
    """Why `m`'s signature does not verify under the key it names, or None when it does."""
    raw = raw_key(m.key)
    if raw is None:
        return f"its key {m.key!r} is not a base64 Ed25519 public key"
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        sig = base64.b64decode(m.signature, validate=True)
        Ed25519PublicKey.from_public_bytes(raw).verify(sig, m.signed_bytes())
    except (binascii.Error, ValueError, InvalidSignature):
        return "its signature does not verify: the manifest was altered after it was signed"
    return None


@dataclass(frozen=True, slots=True)
class Comparison:
    """How the installed files and entry points differ from those the release manifest signed (605a.4(c))."""

    mismatched: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    # entry points signed but not found, and found but not signed (a re-pointed one is both)
    entry_points_missing: tuple[str, ...] = ()
    entry_points_extra: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return not (
            self.mismatched or self.missing or self.extra or self.entry_points_missing or self.entry_points_extra
        )

    def status(self, path: str) -> FileStatus:
        if path in self.mismatched:
            return "mismatch"
        if path in self.missing:
            return "missing"
        return "extra" if path in self.extra else "ok"

    def summary(self, shown: int = 3) -> str:
        parts = []
        for what, paths in (
            ("altered", self.mismatched),
            ("missing", self.missing),
            ("not in the manifest", self.extra),
        ):
            if paths:
                more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
                parts.append(f"{len(paths)} file(s) {what} ({', '.join(paths[:shown])}{more})")
        for what, points in (("missing", self.entry_points_missing), ("not in the manifest", self.entry_points_extra)):
            if points:
                more = f" and {len(points) - shown} more" if len(points) > shown else ""
                parts.append(f"{len(points)} entry point(s) {what} ({', '.join(points[:shown])}{more})")
        return "; ".join(parts)


def compare(
    expected: Mapping[str, str],
    found: Mapping[str, str],
    expected_points: Sequence[str] = (),
    found_points: Sequence[str] = (),
) -> Comparison:
    # A multiset difference: a second distribution registering a name already signed is one line more.
    signed, seen = list(expected_points), list(found_points)
    for e in list(signed):
        if e in seen:
            seen.remove(e)
            signed.remove(e)
    return Comparison(
        mismatched=tuple(_byte_order([p for p in expected if p in found and found[p] != expected[p]])),
        missing=tuple(_byte_order([p for p in expected if p not in found])),
        extra=tuple(_byte_order([p for p in found if p not in expected])),
        entry_points_missing=tuple(_byte_order(signed)),
        entry_points_extra=tuple(_byte_order(seen)),
    )


@dataclass(frozen=True, slots=True)
class Judgement:
    """The verdict on the installed code: `digest` is over the files as found (what runs), whatever the manifest
    says; `problem` is one line naming what is wrong and what to do, None when verified."""

    verdict: Verdict
    digest: str
    found: Mapping[str, str]
    comparison: Comparison = field(default_factory=Comparison)
    found_entry_points: tuple[str, ...] = ()
    problem: str | None = None
    manifest: Manifest | None = None
    manifest_path: str = ""

    @property
    def key(self) -> str | None:
        return self.manifest.key if self.manifest is not None else None

    def refuses(self, require_verified: bool) -> bool:
        """Whether the table must not open on this code: always when the code differs from what was signed or the
        manifest cannot be trusted; when nothing vouches for it (no manifest, no key to check it), only if the config
        requires verified software."""
        return self.verdict in ALWAYS_REFUSED or (require_verified and self.verdict != "verified")

    def entry_point_statuses(self) -> dict[str, FileStatus]:
        """Every entry point either side lists, with its verdict (a re-pointed one: the signed line missing, the found
        line extra)."""
        if self.manifest is None:
            return dict.fromkeys(_byte_order(self.found_entry_points), "unverified")
        out: dict[str, FileStatus] = dict.fromkeys(_byte_order(self.found_entry_points), "ok")
        for e in self.comparison.entry_points_missing:
            out[e] = "missing"
        for e in self.comparison.entry_points_extra:
            out[e] = "extra"
        return {e: out[e] for e in _byte_order(out)}

    def statuses(self) -> dict[str, FileStatus]:
        """Every file either side lists, with its verdict, in byte order of its path."""
        if self.manifest is None:
            return dict.fromkeys(_byte_order(self.found), "unverified")
        return {p: self.comparison.status(p) for p in _byte_order(set(self.manifest.files) | set(self.found))}


def judge(
    found: Mapping[str, str],
    manifest: Manifest | None,
    trusted: Collection[str],
    *,
    manifest_problem: str | None = None,
    manifest_path: str = "",
    entry_points: Sequence[str] = (),
) -> Judgement:
    """The verdict on the files `found` against `manifest` (None: there is none; `manifest_problem`: it could not be
    read) under the release keys `trusted` (base64). The first thing wrong decides: an unreadable manifest, a bad
    signature, files that differ, a key the config does not list, no key to check against. `entry_points` are the
    covered entry points as found (covered_entry_point), compared with those the manifest signed."""
    digest = digest_of(found)
    points = tuple(_byte_order(entry_points))
    where = manifest_path or "the manifest"
    if manifest is None:
        return _without_manifest(found, digest, points, where, manifest_problem)

    def judged(verdict: Verdict, problem: str | None, comparison: Comparison = Comparison()) -> Judgement:
        return Judgement(verdict, digest, found, comparison, points, problem, manifest, where)

    bad_signature = signature_problem(manifest)
    if bad_signature is not None:
        return judged("bad_signature", f"{where}: {bad_signature}; {_RESIGN}")
    comparison = compare(manifest.files, found, manifest.entry_points or (), points)
    if not comparison.clean:
        return judged(
            "mismatch",
            f"the installed code differs from the signed release {manifest.version} ({where}): "
            f"{comparison.summary()}; reinstall the certified release, or sign this one if it is the release",
            comparison,
        )
    trusted_raw = {raw_key(k) for k in trusted} - {None}
    if not trusted_raw:
        return judged(
            "no_release_keys",
            f"{where} is signed by {manifest.key}, but the config lists no release key to check it against: add it "
            "to [software] release_keys once you know it is the release key",
            comparison,
        )
    if raw_key(manifest.key) not in trusted_raw:
        return judged(
            "untrusted_key",
            f"{where} is signed by {manifest.key}, which is not among the config's [software] release_keys: sign "
            "with a listed release key, or list this one if it is a release key",
            comparison,
        )
    return judged("verified", None, comparison)


def _without_manifest(
    found: Mapping[str, str], digest: str, points: tuple[str, ...], where: str, problem: str | None
) -> Judgement:
    """No manifest to judge by: one that could not be read (`problem`), or none at all."""
    if problem is not None:
        return Judgement(
            "bad_manifest", digest, found, found_entry_points=points, problem=f"{where} {problem}", manifest_path=where
        )
    return Judgement(
        "no_manifest",
        digest,
        found,
        found_entry_points=points,
        problem=f"no release manifest at {where}: build and sign one with `tablectl release sign --key <release "
        "key>` (docs/software.md)",
        manifest_path=where,
    )
