"""One thing `tablectl check-config` found in a config: an error (the config cannot be used) or a warning."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from controller.config.errors import Problem

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One line of check-config's report: an error that keeps the config from being used, or a warning."""

    severity: Severity
    field: str
    problem: str
    fix: str = ""

    @classmethod
    def of(cls, severity: Severity, p: Problem) -> Finding:
        return cls(severity, p.field, p.problem, p.fix)

    def render(self) -> str:
        head = f"  {self.severity}: {self.field}: {self.problem}"
        return head + (f"\n      fix: {self.fix}" if self.fix else "")
