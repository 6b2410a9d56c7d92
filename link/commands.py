"""Signed supervisor commands to the link (docs/linked-progressives.md, "Commands"): the same envelope and
Ed25519 signature as a table's (controller.supervisor.envelope), addressed to the link's id, taken on
`<prefix>/link/<link_id>/cmd/<verb>` and answered on `.../cmd/reply`.

Every command is journaled in link_command with who signed it and when, once per command id and nonce (a
replay is refused), then carried out or refused with the reason. Parameters change only while the link is closed
(NY 9 NYCRR 5321.18, stand-in for 605a.8: no change while the link is in operation).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controller.config.keys import decode_public_key
from controller.mqtt.contract import SupervisorCommand
from controller.progressive.parameters import LEVEL_PATTERN, ParameterError
from controller.release.installed import SoftwareCheck
from controller.supervisor.envelope import loads, signature_problem
from floor.messages import unstorable
from floor.refusal_log import RefusalLog
from link.broker import Broker
from link.config import LinkConfig, LinkRole, ProgressiveFigures
from link.database import LinkDatabase
from link.protocol import MAX_REQUEST_BYTES
from link.records import LinkRefused
from link.refusals import REFUSED_REMEDY, Refusals
from link.report import reconcile
from link.store import LinkStore

log = structlog.get_logger("tablectl.link.commands")


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NoteArgs(_Args):
    note: str = Field("", max_length=500)


class ParametersArgs(_Args):
    progressive: list[ProgressiveFigures] = Field(min_length=1)
    note: str = Field("", max_length=500)


class ValidateArgs(_Args):
    table_id: str = Field(pattern=r"^[A-Za-z0-9_\-]{1,64}$")
    round_id: str = Field(pattern=r"^[A-Za-z0-9_\-.:]{1,96}$")
    seat: int = Field(ge=1, le=9)
    level: str = Field(pattern=LEVEL_PATTERN)


@dataclass(frozen=True, slots=True)
class LinkVerb:
    args: type[_Args]
    roles: frozenset[LinkRole]
    what: str


SUPERVISOR: frozenset[LinkRole] = frozenset({"supervisor"})
VERBS: Mapping[str, LinkVerb] = {
    "open_link": LinkVerb(NoteArgs, SUPERVISOR, "put the link in operation (after its self-check balances)"),
    "close_link": LinkVerb(
        NoteArgs, SUPERVISOR, "take the link out of operation: the tables lock progressive wagers out"
    ),
    "set_parameters": LinkVerb(ParametersArgs, SUPERVISOR, "new figures for the linked meters, only while closed"),
    "clear_tilt": LinkVerb(NoteArgs, SUPERVISOR, "after a mismatch was resolved: the link goes to closed"),
    "validate_jackpot": LinkVerb(
        ValidateArgs,
        frozenset({"floorperson", "supervisor"}),
        "a floorperson or above validates a linked hit (655a.11(i)(1)(iii))",
    ),
}


@dataclass(frozen=True, slots=True)
class Reply:
    command_id: str | None
    verb: str
    accepted: bool
    code: str
    reason: str | None = None

    def payload(self) -> bytes:
        return json.dumps(
            {
                "command_id": self.command_id,
                "verb": self.verb,
                "accepted": self.accepted,
                "code": self.code,
                "reason": self.reason,
            },
            sort_keys=True,
        ).encode()


class CommandDesk:
    """Judges each signed command and carries it out on the database thread; it knows the link's database, its
    connection and its software check, never the service that runs it."""

    def __init__(self, config: LinkConfig, db: LinkDatabase, broker: Broker, software: SoftwareCheck) -> None:
        self.config = config
        self.db = db
        self.broker = broker
        self.software = software
        self.keys = {s.key_id: (s.role, decode_public_key(s.public_key)) for s in config.supervisors}
        self.refusals = Refusals()  # the service's: its status line says them
        self.refusal_log = RefusalLog.defaults(log, REFUSED_REMEDY)  # the service's, shared with the tables' desk

    async def handle(self, topic_verb: str, payload: bytes) -> None:
        reply = await self._judge(topic_verb, payload)
        if reply.accepted:
            log.info("link command", verb=reply.verb, accepted=True, code=reply.code, reason=reply.reason)
        else:  # anyone on the broker can send one: logged bounded per topic (floor/refusal_log.py)
            topic = f"{self.broker.base}/cmd/{topic_verb}"
            reason = reply.reason or reply.code or "refused"
            self.refusal_log.refused("link command", topic, len(payload), reason, verb=reply.verb, code=reply.code)
            self.refusals.note("command", reply.code, topic=topic, reason=reason)
        client = self.broker.client
        if client is not None:
            await client.publish(f"{self.broker.base}/cmd/reply", reply.payload(), qos=1)

    async def _judge(self, topic_verb: str, payload: bytes) -> Reply:
        if len(payload) > MAX_REQUEST_BYTES:
            reason = f"{len(payload)} bytes, over the {MAX_REQUEST_BYTES} a command may have: not decoded"
            return Reply(None, topic_verb, False, "malformed", reason)
        try:
            obj = loads(payload.decode("utf-8"))
            cmd = SupervisorCommand.model_validate(obj)
        except (ValueError, UnicodeDecodeError) as err:
            return Reply(None, topic_verb, False, "malformed", f"not a signed command envelope: {str(err)[:200]}")
        except RecursionError:
            return Reply(None, topic_verb, False, "malformed", "not a signed command envelope: nested too deep")
        # Journaled before its signature is judged (a replay is refused by id and nonce): what PostgreSQL cannot
        # store (a NUL, a lone surrogate, a number past 64 bits) is refused here, or its insert would fail.
        bad = unstorable(obj)
        if bad:
            return Reply(None, topic_verb, False, "malformed", f"not a command the link can journal: {bad}")
        refused = self._refusal(obj, cmd, topic_verb)
        role = self.keys[cmd.key_id][0] if cmd.key_id in self.keys else None
        db = self.db
        record = refused or ("received", None)
        fresh = await db.call(
            lambda s: s.record_command(
                cmd.command_id,
                cmd.nonce,
                cmd.key_id,
                role,
                cmd.verb,
                cmd.args,
                cmd.issued_at.isoformat(),
                record[0],
                record[1],
            ),
        )
        if not fresh:
            return Reply(cmd.command_id, cmd.verb, False, "replayed", "this command id or nonce was seen before")
        if refused:
            return Reply(cmd.command_id, cmd.verb, False, refused[0], refused[1])
        spec = VERBS[cmd.verb]
        try:
            args = spec.args.model_validate(cmd.args)
            action = self._action(cmd, args)
            await db.call(action, write=True)
            await db.call(lambda s: db.refresh())
        except (ValidationError, LinkRefused, ParameterError) as err:
            reason = str(err).splitlines()[0] if not isinstance(err, ValidationError) else str(err.errors()[0]["msg"])
            await db.call(lambda s: s.finish_command(cmd.command_id, "refused", reason))
            return Reply(cmd.command_id, cmd.verb, False, "refused", reason)
        await db.call(lambda s: s.finish_command(cmd.command_id, "done", None))
        self.broker.wake.set()
        return Reply(cmd.command_id, cmd.verb, True, "done")

    def _refusal(self, obj: Mapping[str, Any], cmd: SupervisorCommand, topic_verb: str) -> tuple[str, str] | None:
        link_id = self.config.link.id
        if cmd.table_id != link_id:
            return "wrong_table", f"the command is for {cmd.table_id}, this is link {link_id}"
        if cmd.verb != topic_verb:
            return "verb_mismatch", f"the command says {cmd.verb!r} but came on .../cmd/{topic_verb}"
        known = self.keys.get(cmd.key_id)
        if known is None:
            return "unknown_key", f"key_id {cmd.key_id!r} is not among the link's [[supervisors]]"
        problem = signature_problem(obj, cmd, known[1])
        if problem:
            return "bad_signature", problem
        spec = VERBS.get(cmd.verb)
        if spec is None:
            return "unknown_verb", f"there is no link verb {cmd.verb!r}; the verbs are {', '.join(VERBS)}"
        if known[0] not in spec.roles:
            return "not_allowed", f"a {known[0]} may not {cmd.verb}; it takes a {' or '.join(sorted(spec.roles))}"
        age = (datetime.now(UTC) - cmd.issued_at).total_seconds()
        if abs(age) > self.config.max_command_age_s:
            return "stale", f"signed {age:.0f} s from now: sign it again and check the clocks (NTP)"
        return None

    def _action(self, cmd: SupervisorCommand, args: _Args) -> Callable[[LinkStore], object]:
        by = cmd.key_id
        software = self.software
        if cmd.verb in ("open_link", "clear_tilt") and software.refused:
            why = (
                "the installed link code failed its check against the signed release manifest (605a.4(c), "
                f"{software.judgement.verdict}): install a release that verifies and restart the link"
            )

            def refuse(_store: LinkStore) -> object:
                raise LinkRefused(why)

            return refuse
        if isinstance(args, ValidateArgs):
            return lambda s: s.validate(args.table_id, args.round_id, args.seat, args.level, by, cmd.command_id)
        if isinstance(args, ParametersArgs):
            return lambda s: s.set_parameters(list(args.progressive), by, cmd.command_id)
        if cmd.verb == "open_link":
            return lambda s: _open(s, by, cmd.command_id)
        if cmd.verb == "close_link":
            return lambda s: _require_then(s, {"open"}, "closed", by, cmd.command_id)
        return lambda s: _require_then(s, {"tilted"}, "closed", by, cmd.command_id)


def _require_then(store: LinkStore, allowed: set[str], status: str, by: str, command_id: str) -> int:
    current = store.state().status
    if current not in allowed:
        raise LinkRefused(f"the link is {current}; this command applies only when it is {' or '.join(sorted(allowed))}")
    return store.set_status(status, by, command_id)


def _open(store: LinkStore, by: str, command_id: str) -> int:
    """In operation only if the books balance (the self-check); a mismatch tilts the link instead."""
    current = store.state().status
    if current != "closed":
        raise LinkRefused(f"the link is {current}: open_link applies only when it is closed")
    rec = reconcile(store.conn)
    if not rec.balanced:
        store.set_status("tilted", "self-check", command_id, "; ".join(rec.problems)[:500])
        raise LinkRefused(f"the self-check found the books out of balance; the link is tilted: {rec.problems[0]}")
    return store.set_status("open", by, command_id)
