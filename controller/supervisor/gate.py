"""The command gate: every check between a supervisor command's payload and the engine (docs/commands.md).

`CommandGate.check` takes a payload as it came off the broker and returns either `Accepted` (with the engine
input to step) or `Rejected` (with a code and a reason an operator can act on). It never raises on bad input:
whatever the bytes, the answer is one of the two. The checks run cheapest and least revealing first; a
command's id and nonce are recorded only once its signature verified and it is fresh, so that a forger who
copies a real command's id cannot burn it before the real one arrives.

The envelope and its signature are controller.supervisor.envelope, the verbs and roles
controller.supervisor.verbs, the seen ids and nonces controller.supervisor.replay.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from controller.config.keys import decode_public_key
from controller.config.table import CommandSettings, Role, Supervisor
from controller.engine.inputs import Signed
from controller.mqtt.contract import SupervisorCommand
from controller.supervisor.envelope import REQUIRED, as_text, echoed, is_text, loads, signature_problem
from controller.supervisor.replay import ReplayStore
from controller.supervisor.verbs import ROLE_VERBS, VERBS, Signer, Verb, VerbArgs, describe, parse_args, roles_for

if TYPE_CHECKING:  # the keys come decoded from controller.config.keys, which imports cryptography when it decodes one
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

# A command is a few hundred bytes; anything much larger is not one, and is refused before it is parsed.
MAX_PAYLOAD_BYTES = 16 * 1024
# A command's envelope nests two levels (the envelope, its args); deeper JSON is not a command. Refused before
# anything walks it recursively (pydantic, the canonical form), so no depth can reach Python's recursion limit.
MAX_DEPTH = 8
# Seen command ids and nonces are kept this long past max_age_seconds, so that a table clock stepped back by
# NTP within this margin cannot make a pruned command fresh (and acceptable) again.
REPLAY_MARGIN_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Rejected:
    """A supervisor command the gate refused: the code and reason of its `command.rejected` event and reply."""

    code: str  # a word a program can test: docs/commands.md lists them
    reason: str
    command_id: str | None = None
    verb: str | None = None
    key_id: str | None = None

    def __post_init__(self) -> None:
        # Whatever a sender wrote ends up journaled and in the reply, both UTF-8: a lone surrogate ("\ud800",
        # legal as a JSON escape, no character) is kept visible as its escape rather than failing either.
        object.__setattr__(self, "reason", as_text(self.reason))
        for name, value in (("command_id", self.command_id), ("verb", self.verb), ("key_id", self.key_id)):
            if value is not None:
                object.__setattr__(self, name, as_text(value))

    def payload(self) -> dict[str, Any]:
        """The `command.rejected` event's payload."""
        return {
            "command_id": self.command_id,
            "verb": self.verb,
            "key_id": self.key_id,
            "code": self.code,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Accepted:
    """A supervisor command that passed every check: the engine input to step (None for a verb the shell carries out
    itself, controller.supervisor.verbs.SHELL_VERBS), its validated arguments, and the role of the key that signed."""

    command: SupervisorCommand
    role: Role
    input: Signed | None
    args: VerbArgs


@dataclass(frozen=True, slots=True)
class Checked:
    """A command that passed every check before the replay store's: its id and nonce are still to be recorded."""

    command: SupervisorCommand
    role: Role
    spec: Verb


class _Refused(Exception):
    """A check failed: `code` and `reason` become the Rejected answer, with what is known of the command."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class CommandGate:
    """Every check between a payload and the engine, in order (docs/commands.md)."""

    def __init__(
        self, table_id: str, supervisors: Sequence[Supervisor], settings: CommandSettings, store: ReplayStore
    ) -> None:
        self.table_id = table_id
        self.settings = settings
        self.store = store
        self.keys: dict[str, tuple[Role, Ed25519PublicKey]] = {
            s.key_id: (s.role, decode_public_key(s.public_key)) for s in supervisors
        }

    def check(self, topic_verb: str, payload: bytes, now: datetime) -> Accepted | Rejected:
        """Every check, the replay store's record included (one commit unless inside the store's batch)."""
        checked = self.precheck(topic_verb, payload, now)
        if isinstance(checked, Rejected):
            return checked
        return self.conclude(checked, self.store.seen_or_record(checked.command, now, self.keep_seconds))

    def precheck(self, topic_verb: str, payload: bytes, now: datetime) -> Checked | Rejected:
        """The checks before the replay store's, in order: pure CPU, no I/O, so the listener runs them on the loop and
        hands only the records of the commands that pass (Checked) to the thread that may wait on the disk."""
        try:
            obj = _parse(payload)
        except _Refused as r:
            return Rejected(r.code, r.reason)
        # Until the envelope validates, the reply names the command by what it claims.
        named = (echoed(obj, "command_id"), echoed(obj, "verb"), echoed(obj, "key_id"))
        try:
            _text_only(obj)
            cmd = _envelope(obj)
            named = (cmd.command_id, cmd.verb, cmd.key_id)
            return self._judge(obj, cmd, topic_verb, now)
        except _Refused as r:
            return Rejected(r.code, r.reason, *named)

    def conclude(self, checked: Checked, replay: str | None) -> Accepted | Rejected:
        """A prechecked command once the replay store answered (`replay`: why it is one, None once recorded): the
        role's and the arguments' checks, which come after the record so that a refused command's id stays spent."""
        cmd = checked.command
        try:
            if replay:
                raise _Refused("replayed", replay)
            return _accept(cmd, checked.role, checked.spec)
        except _Refused as r:
            return Rejected(r.code, r.reason, cmd.command_id, cmd.verb, cmd.key_id)

    @property
    def keep_seconds(self) -> float:
        """How long the replay store keeps a command's id and nonce."""
        return self.settings.max_age_seconds + REPLAY_MARGIN_SECONDS

    def _judge(self, obj: Mapping[str, Any], cmd: SupervisorCommand, topic_verb: str, now: datetime) -> Checked:
        """The checks of a well-formed envelope before the replay store, in order; _Refused at the first that fails."""
        self._addressed(cmd, topic_verb)
        role = self._signer_role(obj, cmd)
        spec = VERBS.get(cmd.verb)
        if spec is None:
            raise _Refused("unknown_verb", f"there is no verb {cmd.verb!r}; the verbs are {', '.join(VERBS)}")
        self._fresh(cmd, now)
        return Checked(cmd, role, spec)

    def _addressed(self, cmd: SupervisorCommand, topic_verb: str) -> None:
        if cmd.table_id != self.table_id:
            raise _Refused(
                "wrong_table",
                f"the command is for table {cmd.table_id}, this is table {self.table_id}: "
                f"publish it on the topic of table {cmd.table_id}",
            )
        if topic_verb != cmd.verb:
            raise _Refused(
                "verb_mismatch",
                f"the command says {cmd.verb!r} but came on the topic for "
                f"{topic_verb!r}: publish it on .../cmd/{cmd.verb}",
            )

    def _signer_role(self, obj: Mapping[str, Any], cmd: SupervisorCommand) -> Role:
        known = self.keys.get(cmd.key_id)
        if known is None:
            listed = ", ".join(sorted(self.keys)) or "none"
            raise _Refused(
                "unknown_key",
                f"key_id {cmd.key_id!r} is not among this table's [[supervisors]] "
                f"(listed: {listed}): add its public key to the table's config",
            )
        role, public = known
        problem = signature_problem(obj, cmd, public)
        if problem:
            raise _Refused("bad_signature", problem)
        return role

    def _fresh(self, cmd: SupervisorCommand, now: datetime) -> None:
        age = (now - cmd.issued_at).total_seconds()
        if age > self.settings.max_age_seconds:
            raise _Refused(
                "stale",
                f"the command was signed {age:.1f} s ago, more than commands.max_age_seconds = "
                f"{self.settings.max_age_seconds:g}: sign it again, and check that the "
                "signer's and the table's clocks are synchronised",
            )
        if -age > self.settings.max_clock_skew_seconds:
            raise _Refused(
                "future",
                f"the command was signed {-age:.1f} s in the future, more than "
                f"commands.max_clock_skew_seconds = {self.settings.max_clock_skew_seconds:g}: "
                "synchronise the signer's clock with NTP",
            )


def _parse(payload: bytes) -> dict[str, Any]:
    """The payload as a JSON object, or _Refused saying why it is not one."""
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise _Refused(
            "too_big",
            f"the payload is {len(payload)} bytes, more than the {MAX_PAYLOAD_BYTES} a "
            "command may have: publish only the signed command envelope",
        )
    try:
        obj = loads(payload.decode("utf-8"))
    except UnicodeDecodeError:
        raise _Refused("not_json", "the payload is not UTF-8 text: publish the command as JSON in UTF-8") from None
    except RecursionError:
        raise _Refused("not_json", "the payload's JSON is nested too deeply to be a command") from None
    except ValueError as err:  # json.JSONDecodeError, a duplicate key, huge integers
        raise _Refused(
            "not_json",
            f"the payload is not valid JSON ({err}): publish the command envelope as `tablectl command send` makes it",
        ) from None
    if not isinstance(obj, dict):
        raise _Refused(
            "not_object",
            f"the payload is a JSON {type(obj).__name__}, not an object: a command is "
            "a JSON object with " + ", ".join(REQUIRED),
        )
    return obj


def _text_only(obj: dict[str, Any]) -> None:
    """_Refused for JSON nested deeper than any command, or a string (or key) holding a lone surrogate: a
    "\\ud800" escape is valid JSON syntax but no character, which nothing downstream (the journal, the reply,
    another JSON library checking the signature) can be trusted to read the same way."""
    stack: list[tuple[Any, str, int]] = [(obj, "", 1)]
    while stack:  # iterative: the depth is what is being checked
        value, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _Refused(
                "not_json",
                f"the payload's JSON is nested more than {MAX_DEPTH} levels deep (at {where}): a command's "
                "envelope and args nest two",
            )
        if isinstance(value, dict):
            for k, v in value.items():
                path = f"{where}.{as_text(k)[:40]}" if where else as_text(k)[:40]
                if not is_text(k):
                    raise _Refused("not_json", f"the key {path!r} {_SURROGATE}")
                stack.append((v, path, depth + 1))
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value))
        elif isinstance(value, str) and not is_text(value):
            raise _Refused("not_json", f"the value of {where} {_SURROGATE}")


_SURROGATE = (
    "holds a lone UTF-16 surrogate escape (\\ud800-\\udfff without its pair), which is not a character: "
    "send text as UTF-8 (a character beyond U+FFFF escaped as its surrogate pair is fine)"
)


def _envelope(obj: Mapping[str, Any]) -> SupervisorCommand:
    missing = [k for k in REQUIRED if k not in obj]
    if missing and missing != ["signature"]:
        raise _Refused(
            "missing_fields",
            f"the command lacks {', '.join(missing)}: a command has {', '.join(REQUIRED)} and args",
        )
    if obj.get("signature") in (None, ""):
        raise _Refused(
            "unsigned",
            "the command is unsigned: sign it with a supervisor key listed in the table's "
            "config (`tablectl command send --key KEY.pem --key-id ID`)",
        )
    try:
        return SupervisorCommand.model_validate(obj)
    except ValidationError as err:
        raise _Refused("bad_envelope", f"the command envelope is malformed: {describe(err)}") from None


def _accept(cmd: SupervisorCommand, role: Role, spec: Verb) -> Accepted:
    if cmd.verb not in ROLE_VERBS[role]:
        raise _Refused(
            "role_not_allowed",
            f"key {cmd.key_id} has the role {role}, which may not {cmd.verb} (a "
            f"{' or '.join(roles_for(cmd.verb))} may); a {role} may "
            f"{', '.join(sorted(ROLE_VERBS[role]))}",
        )
    try:
        args = parse_args(cmd.verb, cmd.args)
    except ValueError as err:
        raise _Refused("bad_args", str(err)) from None
    if spec.make is None:
        return Accepted(cmd, role, None, args)
    inp = Signed(spec.make(args, Signer(cmd.key_id, role)), cmd.command_id, cmd.verb, cmd.key_id, role)
    return Accepted(cmd, role, inp, args)
