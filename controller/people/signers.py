"""The demo's and the scenarios' floor staff who sign commands: a key per role generated for the run and listed in the
table's supervisors, whose commands go through the same checks as a command from the broker (CommandGate: signature,
role, freshness, replay) before the service steps them, as the command listener does."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import structlog
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.config.table import Role, Supervisor, TableConfig
from controller.core.events import JournaledEvent
from controller.shell.service import TableService
from controller.supervisor.envelope import public_key_b64, sign_command
from controller.supervisor.gate import Accepted, CommandGate
from controller.supervisor.replay import ReplayStore
from drivers.sim import scratch

log = structlog.get_logger("tablectl.demo")

# What a person does for a demo run with --human-floor whose deck is due (.3(c)): the floorperson's signed verify_deck.
VERIFY_DECK_REMEDY = (
    "a floorperson signs verify_deck with a key listed in the table config's [[supervisors]]: "
    "tablectl command send --config CONFIG.toml --key KEY.pem --key-id KEY_ID verify_deck "
    '(docs/commands.md; `tablectl command keygen` makes a key), or the floor console\'s "Verify the new deck"; '
    "or run the demo without --human-floor, whose simulated floorperson verifies it"
)


class DemoSigners:
    """A signing key for each role asked for (the demo's floorperson, a scenario's supervisor or technician)."""

    def __init__(self, config: TableConfig, replay_path: Path, roles: Iterable[Role] = ("floorperson",)) -> None:
        self.keys = {role: Ed25519PrivateKey.generate() for role in sorted(set(roles))}
        self.supervisors = [
            Supervisor(key_id=f"demo-{role}", role=role, public_key=public_key_b64(key))
            for role, key in self.keys.items()
        ]
        self.table_id = config.table_id
        self.gate = CommandGate(
            config.table_id,
            [*config.supervisors, *self.supervisors],
            config.commands,
            ReplayStore(replay_path, config.table_id),
        )

    @classmethod
    @contextmanager
    def leased(cls, config: TableConfig, roles: Iterable[Role]) -> Iterator[DemoSigners]:
        """Signers whose replay file lives in a dir of the process's simulator scratch dir (drivers/sim/scratch.py):
        closed, then deleted with its -wal and -shm, however the run ends; swept by the next simulator process
        if it is killed."""
        where = scratch.lease("demo-signers")
        try:
            signers = cls(config, where / "commands.sqlite", roles)
            try:
                yield signers
            finally:
                signers.close()
        finally:
            scratch.release(where)

    def close(self) -> None:
        self.gate.store.close()

    async def command(
        self, service: TableService, verb: str, args: Mapping[str, Any], role: Role = "floorperson"
    ) -> list[JournaledEvent]:
        """Sign and check the command as the table's listener would, then step it; its journaled events (none when
        the gate refused it, which is logged)."""
        envelope = sign_command(self.keys[role], table_id=self.table_id, verb=verb, key_id=f"demo-{role}", args=args)
        result = self.gate.check(verb, json.dumps(envelope).encode(), dt.datetime.now(dt.UTC))
        if not isinstance(result, Accepted):
            log.error("demo command refused", verb=verb, role=role, reason=result.reason)
            return []
        if result.input is None:  # a verb the listener carries out itself (resend): not the demo's people's
            log.error("demo command not for the engine", verb=verb, role=role)
            return []
        return await service.submit_and_wait(result.input)

    async def validate(self, service: TableService, seat: int, level: str, hit: str) -> None:
        """The floorperson checks the hand and validates the hit (655a.11(i)(1)(iii))."""
        await self.command(service, "validate_jackpot", {"seat": seat, "level": level, "hit": hit})
