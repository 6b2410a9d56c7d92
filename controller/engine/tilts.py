"""Supervisor commands in the engine: the signed wrapper and tilts (jackpot validation: engine/progressive.py).

A tilt is a block that no dealer action and no chapter remedy clears: something is wrong with the
controller itself (its stored state failed validation at start, `critical_state`) and a supervisor must look.
Acknowledging a tilt records who saw it and leaves the block; clearing it removes the block. Blocks with a
remedy of their own (a deck removed, a chip count, a device out of order) are not tilts: clearing them by
hand would skip what the chapter prescribes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.engine.inputs import AcknowledgeTilt, ClearTilt, Signed
from controller.engine.step import _StepBase

if TYPE_CHECKING:
    from controller.engine.inputs import Input

# Block keys that are tilts. Another part of the controller raises a new kind of tilt by naming its block
# "tilt:<what>" (e.g. "tilt:journal"), without a change here.
TILTS = frozenset({"critical_state"})
TILT_PREFIX = "tilt:"


def is_tilt(block: str) -> bool:
    return block in TILTS or (block.startswith(TILT_PREFIX) and len(block) > len(TILT_PREFIX))


class _TiltsMixin(_StepBase):
    def signed(self, c: Signed) -> None:
        self.emit(
            "command.accepted", None, {"command_id": c.command_id, "verb": c.verb, "key_id": c.key_id, "role": c.role}
        )
        if isinstance(c.inp, Signed):
            self.ignored(f"command {c.verb}", "a signed command carries one input, not another signed command")
            return
        self.handle(c.inp)

    def acknowledge_tilt(self, a: AcknowledgeTilt) -> None:
        if self._not_a_raised_tilt(f"acknowledge tilt {a.tilt!r}", a.tilt):
            return
        self.emit(
            "tilt.acknowledged",
            None,
            {
                "tilt": a.tilt,
                "reason": self.s.blocks[a.tilt],
                "by": a.key_id,
                "role": a.role,
                "remedy": "a supervisor clears the tilt",
            },
        )

    def clear_tilt(self, c: ClearTilt) -> None:
        if self._not_a_raised_tilt(f"clear tilt {c.tilt!r}", c.tilt):
            return
        self.emit(
            "tilt.cleared",
            None,
            {"tilt": c.tilt, "reason": self.s.blocks[c.tilt], "by": c.key_id, "role": c.role, "note": c.note},
        )
        self.unblock(c.tilt, f"{c.role} {c.key_id}")
        if c.tilt == "tilt:meters":
            self.unlock_progressive("meters")

    def _not_a_raised_tilt(self, what: str, tilt: str) -> bool:
        if not is_tilt(tilt):
            self.refused(
                what,
                f"{tilt!r} is not a tilt (the tilts are {', '.join(sorted(TILTS))} and "
                f"{TILT_PREFIX}*); a block with a remedy of its own is cleared by that remedy",
                None,
            )
            return True
        if tilt not in self.s.blocks:
            raised = sorted(b for b in self.s.blocks if is_tilt(b))
            self.ignored(what, f"no tilt {tilt!r} is raised" + (f" (raised: {', '.join(raised)})" if raised else ""))
            return True
        return False

    if TYPE_CHECKING:

        def handle(self, inp: Input) -> None: ...
        def unlock_progressive(self, key: str) -> None: ...
