"""What a table starts from (controller.shell.service): the engine state, the progressive meters and the game
accounts as the journal stored them, each checked against its two copies, the manifest and the anchors.

Anything wrong is an input stepped before any device's report: a `CriticalStateInvalid` raising its tilt
(`tilt:rollback`, `tilt:meters`, `tilt:accounts`), never a silent reset (docs/recovery.md, docs/progressive.md,
docs/accounts.md).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping

import structlog

from controller.accounts import codec as accounts_codec
from controller.config.table import TableConfig
from controller.engine import sign
from controller.engine.inputs import CriticalStateInvalid, Input, Recover, StopRecord
from controller.engine.state import Phase, TableState
from controller.progressive import codec as meter_codec
from controller.progressive.model import MeterError
from controller.progressive.parameters import LevelParameters
from controller.store import snapshot
from controller.store.integrity import Assessment
from controller.store.journal import Journal
from controller.store.records import Record

log = structlog.get_logger("tablectl.service")

METERS_RECORD = "meters"  # the progressive meters, two copies (controller/progressive/codec.py)
ACCOUNTS_RECORD = "accounts"  # the game accounts' ledger, two copies (controller/accounts/codec.py)


class Restore:
    """The stored state of one table's journal, read once at start by TableService."""

    def __init__(
        self,
        config: TableConfig,
        journal: Journal,
        found: Assessment,
        levels: Mapping[str, LevelParameters],
        clock: Callable[[], dt.datetime],
    ) -> None:
        """`found` is what the journal was held against at start (controller.store.integrity); `levels` are the
        chapter's progressive levels (a table without them has no meters to lose)."""
        self.config = config
        self.journal = journal
        self._found = found
        self._levels = levels
        self._clock = clock

    def restore(self) -> tuple[TableState, list[Input]]:
        """The state to start from and the inputs that come before anything a device reports."""
        for warning in self._found.warnings:
            log.warning("journal anchor behind the journal", detail=warning, journal=str(self.journal.path))
        if self._found.rolled_back:
            return self._rolled_back()
        copies = self.journal.load(snapshot.RECORD)
        problem = self._found.journal or self._found.records.get(snapshot.RECORD)
        state: TableState | None = None
        if problem is None:
            try:
                state = snapshot.restore(copies)
            except snapshot.SnapshotError as err:
                problem = str(err)
        if state is not None and state.table_id != self.config.table_id:
            problem, state = (
                (
                    f"the stored engine state is table {state.table_id!r}'s, not {self.config.table_id!r}: "
                    "give each table its own journal file"
                ),
                None,
            )
        if problem is not None:
            open_round = self.journal.critical.open_round()
            if open_round is not None:
                problem += (
                    f"; the journal's last round, {open_round[0]}, has {open_round[1]} wager(s) accepted and was "
                    "neither completed nor voided: settle it by hand from the journal"
                )
            log.error(
                "critical state invalid: the table starts blocked", reason=problem, journal=str(self.journal.path)
            )
            if copies:  # kept for the investigation; the next stored state would otherwise overwrite it
                self.journal.save([Record(f"{snapshot.RECORD}.rejected", copies[0].body)], self._clock())
            return self._fresh(), [CriticalStateInvalid(problem)]
        if state is None:
            return self._fresh(), []
        _upgrade_sign_fault(state)
        log.info(
            "critical state restored",
            phase=str(state.phase),
            rounds_played=state.rounds_played,
            round_id=state.round.round_id if state.round else None,
            # A device fault outlasts the restart: the operator reads here why the table starts blocked by it.
            device_faults={dev: f"{f.code}: {f.detail}" for dev, f in sorted(state.device_faults.items())} or None,
        )
        # A closed table opens as usual; one whose shuffler or shoe had faulted or gone offline, or is marked out of
        # order, is recovered first, so the hold and the mark stand (and the device statuses say so) before the
        # devices' start-up identification is stepped (controller/engine/device_holds.py, other_method.py); and one
        # stopped on purpose, so that its start names the stop as every start after one does (`table.recovered`).
        stop = self._stopped()
        held = state.device_faults or state.devices_down or state.out_of_order
        plain = state.phase is Phase.CLOSED and not held and stop is None
        return state, ([] if plain else [Recover(stop)])

    def _stopped(self) -> StopRecord | None:
        """The stop on purpose the journal ends with, if it does: `table.stopped` (SIGTERM, a second interrupt:
        controller/shell/runner.py) or `demo.stopped` (controller/people/stuck.py)."""
        last = self.journal.critical.last_stop("table.stopped", "demo.stopped")
        if last is None:
            return None
        seq, by = last
        log.info("the table was stopped on purpose before this start", seq=seq, by=by)
        return StopRecord(seq, by or "unknown")  # a damaged row's: `journal verify` says so

    def _rolled_back(self) -> tuple[TableState, list[Input]]:
        """The journal lost committed events (or cannot be told not to have): the table starts blocked under the
        `tilt:rollback` tilt, from no round, its numbering after the highest round any anchor knows. When an anchor
        is ahead of the journal, the journal continues after it, so no seq the floor may hold is used again for
        another event (docs/recovery.md, "What must exist")."""
        found = self._found
        if found.rollback:
            reason = "; ".join(found.rollback)
            self.journal.resume_after(found.resume, reason, self._clock())
        else:  # recorded at an earlier start that stopped before its first step: the same tilt again
            reason = found.pending or "the journal was found rolled back at an earlier start"
        log.error("journal rolled back: the table starts blocked", reason=reason, journal=str(self.journal.path))
        return self._fresh(), [CriticalStateInvalid(reason, tilt="tilt:rollback")]

    def _meters_gone(self, stored: bool) -> list[str]:
        """What says the stored meters are not the table's: the manifest, or a rollback (their value moved on)."""
        findings = [self._found.records[METERS_RECORD]] if METERS_RECORD in self._found.records else []
        if self._found.rolled_back and (stored or self._levels):
            findings.append(
                "the journal lost committed events (tilt:rollback): the meters are "
                + ("as stored before them" if stored else "not stored at all")
                + "; reconcile them with the floor's record (progressive/<level>, the archive) before clearing"
            )
        return findings

    def restore_meters(self, state: TableState, first: list[Input]) -> tuple[TableState, int]:
        """Validate both stored copies of the meters (checksums, format, balance) and compare them with the
        engine state's own copy and the manifest. Anything wrong raises the `tilt:meters` tilt; the meters are
        never reset: the newest sound copy (or the engine state's) is kept, and a table whose meters cannot be read
        at all, or are gone, gets no fresh seeds (progressive play stays locked out until a floorperson restores
        and clears them)."""
        copies = {c.copy: c for c in self.journal.load(METERS_RECORD)}
        if not copies:
            gone = self._meters_gone(stored=False)
            if gone:  # the manifest lists them, or the journal lost them: never seeded afresh without a person
                reason = "; ".join(gone)
                log.error("progressive meters gone: progressive play is locked out", reason=reason)
                state.progressive_lockout["meters"] = f"the stored progressive meters are gone ({reason})"
                first.append(CriticalStateInvalid(f"progressive meters: {reason}", tilt="tilt:meters"))
            return state, 0  # otherwise a new table (seeded at its first open) or one without progressives
        # A body failing the journal's checksum still goes to the codec, whose own checks say what is wrong with it.
        blobs = [copies[i].body if i in copies else None for i in (0, 1)]
        findings = [f"copy {'ab'[i]} fails its sha256 check" for i in (0, 1) if i in copies and not copies[i].intact]
        findings += self._meters_gone(stored=True)
        generation = max(c.seq for c in copies.values())
        try:
            loaded = meter_codec.load_copies(blobs[0], blobs[1])
        except MeterError as err:
            reason = "; ".join([*findings, str(err)])
            log.error("progressive meters unreadable: progressive play is locked out", reason=reason)
            state.progressive_lockout["meters"] = f"the stored progressive meters cannot be read ({reason})"
            first.append(CriticalStateInvalid(f"progressive meters: {reason}", tilt="tilt:meters"))
            return state, generation
        findings += loaded.findings
        if state.meters is None:
            state.meters = loaded.meters  # the engine state was refused or lost: the meters are not
        elif state.meters != loaded.meters:
            findings.append(
                f"the stored meters (seq {loaded.meters.seq}) disagree with the engine state's "
                f"(seq {state.meters.seq}); the engine state's, journaled with the events, are used"
            )
        if findings:
            reason = "; ".join(findings)
            log.error("progressive meters failed validation: tilt", reason=reason)
            first.append(CriticalStateInvalid(f"progressive meters: {reason}", tilt="tilt:meters"))
        return state, loaded.generation

    def restore_accounts(self, state: TableState, first: list[Input]) -> int:
        """Validate both stored copies of the game accounts (checksums, format, balance) against each other, the
        manifest and the engine state's ledger. Anything wrong raises `tilt:accounts` (no new round until a supervisor
        clears it); balances are never reset: the engine state's ledger, journaled with the events, is kept, or the
        newest sound copy when the engine state itself was refused. Returns the generation to continue from."""
        copies = {c.copy: c for c in self.journal.load(ACCOUNTS_RECORD)}
        findings = [self._found.records[ACCOUNTS_RECORD]] if ACCOUNTS_RECORD in self._found.records else []
        refused = any(isinstance(i, CriticalStateInvalid) and i.tilt == "critical_state" for i in first)
        generation = max((c.seq for c in copies.values()), default=0)
        if not copies:
            if state.accounts.seq:
                findings.append(f"both stored copies are gone but the engine state has {state.accounts.seq} movements")
        else:
            blobs = [copies[i].body if i in copies else None for i in (0, 1)]
            findings += [
                f"copy {'ab'[i]} fails its sha256 check" for i in (0, 1) if i in copies and not copies[i].intact
            ]
            try:
                loaded = accounts_codec.load_copies(blobs[0], blobs[1])
            except accounts_codec.AccountsCorrupt as err:
                findings.append(f"no stored copy can be read ({err})")
            else:
                findings += loaded.findings
                generation = loaded.generation
                if state.accounts.seq == 0 and refused:
                    state.accounts = loaded.ledger  # the engine state was refused: the balances are not
                elif state.accounts != loaded.ledger:
                    findings.append(
                        f"the stored accounts (seq {loaded.ledger.seq}) disagree with the engine state's "
                        f"(seq {state.accounts.seq}); the engine state's, journaled with the events, are used"
                    )
        if findings:
            reason = "; ".join(findings)
            log.error("game accounts failed validation: tilt", reason=reason)
            first.append(CriticalStateInvalid(f"game accounts: {reason}", tilt="tilt:accounts"))
        return generation

    def _fresh(self) -> TableState:
        # A new table, a journal from before the state was stored, a state refused or a journal rolled back:
        # numbering continues after the highest round the journal or any anchor knows (a round id is never reused).
        return TableState(self.config.table_id, rounds_played=max(self.journal.last_round_no(), self._found.round_no))


def _upgrade_sign_fault(state: TableState) -> None:
    """A sign fault stored before the per-code lock-out reasons: said once, at the restore that upgrades it (the state
    stored after holds the new form)."""
    why = sign.upgrade_stored(state.progressive_lockout)
    if why is not None:
        log.warning(
            "sign fault stored in the old form: the sign's next fault_cleared or identification lifts its lock-out",
            reason=why,
            remedy="none needed; before, only the sign reconnecting lifted it",
        )
