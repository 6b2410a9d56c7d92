"""The check of the installed code at start, as the table records it (605a.4(c), docs/software.md).

The daemon checks its own code against the signed release manifest before the table opens
(controller.release). The verdict is journaled and published as `software.checked`, and carried by the birth
message. On a refusal (files altered, missing or extra; a manifest altered or signed by a key the config does not
list; or, when the config requires verified software, no manifest) the table stays closed under the
`tilt:software` tilt, which no supervisor can clear while this code runs: only a start whose check passes lets
one clear it.
"""

from __future__ import annotations

from controller.core.events import DomainEvent
from controller.engine.inputs import ClearTilt, Input, Signed
from controller.release.installed import SoftwareCheck
from controller.release.manifest import RULE

TILT = "tilt:software"
# Enough to name what changed; the whole list is `tablectl verify-software`'s.
LISTED = 20


def checked_event(check: SoftwareCheck) -> DomainEvent:
    j = check.judgement
    c = j.comparison
    return DomainEvent(
        "software.checked",
        RULE,
        {
            "verdict": j.verdict,
            "refused": check.refused,
            "require_verified": check.require_verified,
            "digest": j.digest,
            "files": len(j.found),
            "manifest": j.manifest_path,
            "manifest_digest": j.manifest.digest if j.manifest is not None else None,
            "release": j.manifest.version if j.manifest is not None else None,
            "key": j.key,
            "mismatched": list(c.mismatched[:LISTED]),
            "missing": list(c.missing[:LISTED]),
            "extra": list(c.extra[:LISTED]),
            "counts": {"mismatched": len(c.mismatched), "missing": len(c.missing), "extra": len(c.extra)},
            "entry_points": len(j.found_entry_points),
            "entry_points_missing": list(c.entry_points_missing[:LISTED]),
            "entry_points_extra": list(c.entry_points_extra[:LISTED]),
            "problem": j.problem,
        },
    )


def operator_message(check: SoftwareCheck) -> str:
    """The one line an operator reads when the table refuses to open on its code."""
    return (
        f"tablectl: the table stays closed ({TILT}, {RULE}): {check.judgement.problem}. "
        "`tablectl verify-software` lists every file; start again once the check passes"
    )


def refused_clear(inp: Input, check: SoftwareCheck | None, phase: str) -> list[DomainEvent] | None:
    """A supervisor's clear of the software tilt while this code still fails its check: the command recorded as the
    engine records any signed command (`command.accepted`, controller/engine/round.py), then refused."""
    clear = inp.inp if isinstance(inp, Signed) else inp
    if not (isinstance(clear, ClearTilt) and clear.tilt == TILT and check is not None and check.refused):
        return None
    accepted = (
        [
            DomainEvent(
                "command.accepted",
                None,
                {"command_id": inp.command_id, "verb": inp.verb, "key_id": inp.key_id, "role": inp.role},
            )
        ]
        if isinstance(inp, Signed)
        else []
    )
    refused = DomainEvent(
        "input.refused",
        RULE,
        {
            "input": f"clear tilt {TILT!r}",
            "reason": f"the installed code still fails its check ({check.judgement.verdict}): install the certified "
            "release and start the table again; the tilt can be cleared once the check at start passes",
            "phase": phase,
            "by": clear.key_id,
        },
    )
    return [*accepted, refused]
