"""The persisted form of the meters: canonical JSON with a SHA-256, kept in two copies, checked at load.

A save writes copy A completely, then copy B (each its own durable write). At load both are decoded; a copy
that fails any check (not JSON, another format, checksum, seq, a field, the balance) is corrupt. The meters
are never reset to a default: if no copy is sound, `load_copies` raises, and every finding that needs a
person is marked `tilt` so the controller stops progressive play until a floorperson clears it (DESIGN.md,
"Persistence, recovery, integrity"). See docs/progressive.md, "Persisted form".
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from controller.progressive.model import COUNTERS, LevelMeters, MeterError, Meters, OpenContribution

FORMAT = "tablectl-progressive-meters"
VERSION = 1


class CorruptCopy(MeterError):
    """One stored copy cannot be trusted; the message says why."""


class MeterStoreCorrupt(MeterError):
    """No stored copy can be trusted: the meters cannot be known without the journal and a person."""


class NoMeterState(MeterError):
    """Neither copy exists: a new table (seed the meters) or lost storage (tilt); only the caller knows which."""


def _canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _digest(state_bytes: bytes) -> str:
    # The format and version are hashed too, so a copy of another format cannot pass by accident.
    return hashlib.sha256(f"{FORMAT}/{VERSION}/".encode() + state_bytes).hexdigest()


@dataclass(frozen=True, slots=True)
class Stored:
    """One stored copy of the meters that passed every check: the meters, and the save that wrote them."""

    meters: Meters
    generation: int  # the store's save counter: +1 at every save, whatever number of events it covers


def encode(meters: Meters, generation: int) -> bytes:
    """One copy: {"format", "version", "generation", "seq", "sha256", "state"}, canonical JSON, one line.

    `generation` counts saves (both copies of one save carry the same number), so at load an interrupted
    save is told apart from a copy that missed several saves."""
    problems = meters.balance_problems()
    if problems:
        raise MeterError(f"refusing to store meters that do not balance: {'; '.join(problems)}")
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
        raise MeterError(f"generation {generation!r} must be a whole number >= 0")
    state = as_data(meters)
    document = {
        "format": FORMAT,
        "version": VERSION,
        "generation": generation,
        "seq": meters.seq,
        "sha256": _digest(_canonical({"generation": generation, "state": state})),
        "state": state,
    }
    return _canonical(document) + b"\n"


def decode(blob: bytes) -> Stored:
    """The meters in one copy and its generation, or CorruptCopy saying what is wrong with it."""
    try:
        document = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptCopy(f"not JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CorruptCopy(f"not a {FORMAT} document")
    if document.get("version") != VERSION:
        raise CorruptCopy(
            f"format version {document.get('version')!r}; this controller reads version {VERSION} "
            "(a newer controller wrote it?)"
        )
    state = document.get("state")
    if not isinstance(state, dict):
        raise CorruptCopy("no state object")
    generation = document.get("generation")
    # 605a.7(a)(6) asks for a means to preclude unauthorised alterations of the meters: a stored copy changed
    # outside the controller fails here, and load_copies tilts rather than use it.
    if document.get("sha256") != _digest(_canonical({"generation": generation, "state": state})):
        raise CorruptCopy("checksum mismatch: the stored state is not what was written")
    try:
        meters = from_data(state)
    except MeterError as exc:
        raise CorruptCopy(f"bad state: {exc}") from None
    if document.get("seq") != meters.seq:
        raise CorruptCopy(f"header seq {document.get('seq')!r} differs from the state's {meters.seq}")
    problems = meters.balance_problems()
    if problems:
        raise CorruptCopy(f"does not balance: {'; '.join(problems)}")
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
        raise CorruptCopy(f"generation {generation!r} is not a whole number >= 0")
    return Stored(meters, generation)


@dataclass(frozen=True, slots=True)
class Loaded:
    """What load_copies found: the meters to use, what was wrong, which copies to rewrite, and whether the
    controller must tilt (stop progressive play for a floorperson) before using them."""

    meters: Meters
    generation: int  # of the copy used: the next save is generation + 1
    used: str  # "a", "b" or "both"
    findings: list[str] = field(default_factory=list)
    rewrite: tuple[str, ...] = ()
    tilt: bool = False


def load_copies(a: bytes | None, b: bytes | None) -> Loaded:
    """Choose the meters from the two stored copies (None: the copy is missing).

    - both sound and equal: use them;
    - both sound, B exactly one save behind A: a save was interrupted between the copies; use A, rewrite B;
    - any other difference, a missing copy or a corrupt one: use the newest sound copy, and tilt;
    - no sound copy: MeterStoreCorrupt (NoMeterState if both are missing); never a reset.
    """
    if a is None and b is None:
        raise NoMeterState("no stored meter copy: seed the meters if this table is new, else restore them")
    decoded: dict[str, Stored] = {}
    findings: list[str] = []
    for name, blob in (("a", a), ("b", b)):
        if blob is None:
            findings.append(f"copy {name} is missing")
            continue
        try:
            decoded[name] = decode(blob)
        except CorruptCopy as exc:
            findings.append(f"copy {name} is corrupt: {exc}")
    if not decoded:
        raise MeterStoreCorrupt(
            f"both meter copies are unusable ({'; '.join(findings)}): restore them from the "
            "journal under a floorperson; the meters are not reset"
        )
    if len(decoded) == 1:
        ((name, only),) = decoded.items()
        other = "b" if name == "a" else "a"
        return Loaded(only.meters, only.generation, name, findings, (other,), tilt=True)
    sa, sb = decoded["a"], decoded["b"]
    if sa == sb:
        return Loaded(sa.meters, sa.generation, "both")
    if sa.generation == sb.generation + 1 and sa.meters.seq >= sb.meters.seq:
        return Loaded(
            sa.meters,
            sa.generation,
            "a",
            [
                f"copy b is one save behind copy a (generation {sb.generation} < {sa.generation}): a save was "
                "interrupted between the copies"
            ],
            ("b",),
        )
    newest, name, other = (
        (sa, "a", "b") if (sa.generation, sa.meters.seq) >= (sb.generation, sb.meters.seq) else (sb, "b", "a")
    )
    findings.append(
        f"the copies disagree (generation a={sa.generation}, b={sb.generation}; seq a={sa.meters.seq}, "
        f"b={sb.meters.seq}); copy {name} is used and must be checked against the journal"
    )
    return Loaded(newest.meters, newest.generation, name, findings, (other,), tilt=True)


# --- the meters as plain data ----------------------------------------------------------------------------------


def as_data(meters: Meters) -> dict[str, Any]:
    """JSON-ready: every level's counters, the open rounds, seq."""
    return {
        "seq": meters.seq,
        "levels": {
            name: {f.name: getattr(lv, f.name) for f in fields(lv) if f.name != "level"}
            for name, lv in sorted(meters.levels.items())
        },
        "open_rounds": {
            rid: [{"level": c.level, "cycle": c.cycle, "hits": c.hits, "delta": dict(c.delta)} for c in entries]
            for rid, entries in sorted(meters.open_rounds.items())
        },
    }


def from_data(data: Mapping[str, Any]) -> Meters:
    """The inverse of as_data; MeterError naming the first field that is not what as_data writes."""

    def whole(value: object, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise MeterError(f"{where}: {value!r} is not a whole number >= 0")
        return value

    if not isinstance(data, Mapping) or set(data) != {"seq", "levels", "open_rounds"}:
        raise MeterError(
            f"meter state must have exactly seq, levels and open_rounds, got {sorted(data)!r}"
            if isinstance(data, Mapping)
            else f"meter state is not an object: {data!r}"
        )
    levels_in, rounds_in = data["levels"], data["open_rounds"]
    if not isinstance(levels_in, Mapping) or not isinstance(rounds_in, Mapping):
        raise MeterError("levels and open_rounds must be objects")
    levels: dict[str, LevelMeters] = {}
    for name, counters in levels_in.items():
        if not isinstance(counters, Mapping) or set(counters) != set(COUNTERS):
            raise MeterError(f"levels.{name}: must have exactly the counters {', '.join(COUNTERS)}")
        levels[name] = LevelMeters(name, **{k: whole(counters[k], f"levels.{name}.{k}") for k in COUNTERS})
    rounds: dict[str, tuple[OpenContribution, ...]] = {}
    for rid, entries in rounds_in.items():
        if not isinstance(entries, Sequence) or not entries:
            raise MeterError(f"open_rounds.{rid}: must be a non-empty list")
        parsed = []
        for i, e in enumerate(entries):
            where = f"open_rounds.{rid}[{i}]"
            if not isinstance(e, Mapping) or set(e) != {"level", "cycle", "hits", "delta"} or e["level"] not in levels:
                raise MeterError(f"{where}: must have level (a known meter), cycle, hits and delta")
            delta = e["delta"]
            if not isinstance(delta, Mapping) or set(delta) - set(COUNTERS):
                raise MeterError(f"{where}.delta: must map counters to whole numbers")
            parsed.append(
                OpenContribution(
                    e["level"],
                    whole(e["cycle"], f"{where}.cycle"),
                    whole(e["hits"], f"{where}.hits"),
                    {k: whole(v, f"{where}.delta.{k}") for k, v in delta.items()},
                )
            )
        rounds[str(rid)] = tuple(parsed)
    return Meters(levels, rounds, whole(data["seq"], "seq"))
