"""The verification gates of a run (``loop.verify``, ``--verify``): the project's
own checks, run in the item's tree after its agent says it is done and before
anything is committed, each one a process under the supervisor (its own spool,
its timeout ``loop.verifyTimeout``, ended with the run's processes on a stop).

What a gate's result means — the failing tests of its JUnit report compared with
the run's baseline — is ``gates``'; this module starts the commands, reads what
they came to, and runs the baseline once on the starting tip (``loop.verifyBaseline``).

A word ``{report}`` in a command stands for a file in the state dir's
``verify/`` directory the command is to write its JUnit XML report to; it is
removed before the command starts (a report left from an earlier run is never
read as this one's) and read once it ended.
"""

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, NotRequired, TypedDict

from git_forge.atomic import make_ignored_dir
from git_forge.errors import ForgeError
from git_forge.gates.junit import ReportError, read_report
from git_forge.gates.verdict import Baseline, GateRun, Verdict, describe_baseline, judge
from git_forge.loop.context import RunContext
from git_forge.loop.options import program_found
from git_forge.loop.receipts import LedgerWriter
from git_forge.safetext import safe_text
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import Manifest
from git_forge.supervisor.process import PreparedProcess
from git_forge.tree.worktrees import last_move, scratch_worktree, tips

#: The token a command's word may hold for the report file it writes.
REPORT_TOKEN = "{report}"
#: Where the reports are written, in the state dir.
VERIFY_DIR = "verify"
#: The reports' directory's ignore rules: nothing in it is ever tracked.
_IGNORE = b"# git-forge's verification reports: never tracked\n*\n"
#: How long one look at a baseline's process waits before a stop is checked again.
BASELINE_POLL_SECONDS = 0.05


class Gate(NamedTuple):
    """One gate process: which command, for which item, and its report file."""

    handle: str
    #: The position of its command in ``loop.verify``.
    position: int
    #: The command line as the user wrote it (the words joined).
    command: str
    report: Path | None
    started: float


def _report_file(run: RunContext, owner: str, index: int) -> Path:
    return run.workspace.state_dir / VERIFY_DIR / f"{owner}-{index + 1}.xml"


def start_gate(run: RunContext, owner: str, index: int, cwd: Path, *,
               iteration: int | None = None) -> Gate:
    """Start the ``index``-th gate in ``cwd`` for ``owner`` (an item's id, or
    ``baseline``): under the supervisor, its standard input empty, its timeout the
    run's ``loop.verifyTimeout``; journaled as ``verify_started``."""
    command, typed = run.options.verify[index]
    argv = tuple(program_found(typed, run.workspace.root))
    report = None
    if any(REPORT_TOKEN in word for word in argv):
        report = _report_file(run, owner, index)
        make_ignored_dir(report.parent, _IGNORE)
        try:
            report.unlink()
        except FileNotFoundError:
            pass
        argv = tuple(word.replace(REPORT_TOKEN, str(report)) for word in argv)
    env = {**os.environ, "FORGE_RUN_ID": run.state.run_id or "", "FORGE_VERIFY": "1"}
    if owner != "baseline":
        env["FORGE_ITEM_ID"] = owner
    timeout = run.options.verify_timeout_minutes * 60
    item_id = None if owner == "baseline" else owner
    env, sandbox = run.prepared(list(argv), cwd, env,
                                (report.parent,) if report is not None else ())
    handle = run.supervisor.start(
        {"run_id": run.state.run_id},
        {"item_id": item_id, "iteration": iteration, "gate": command},
        PreparedProcess(argv=list(argv), cwd=cwd, env=env, stdin=None, timeout=timeout,
                        sandbox=sandbox))
    run.journal.append("verify_started", itemId=item_id, command=command, handle=handle)
    return Gate(handle, index, command, report, time.monotonic())


def gate_run(run: RunContext, gate: Gate, manifest: Manifest) -> tuple[GateRun, str | None]:
    """What the ended ``gate`` came to, and why its report could not be read (a
    report it should have written and did not, or a malformed one, counts as no
    report: the judgement then goes by its exit status)."""
    stdout = run.supervisor.tail(gate.handle, "stdout")
    stderr = run.supervisor.tail(gate.handle, "stderr")
    output = safe_text(stdout + b"\n" + stderr, final=True).text
    exit_status = None if manifest.state == "timed_out" else manifest.result.exit_code
    report = None
    problem = None
    if gate.report is not None:
        try:
            report = read_report(gate.report)
        except FileNotFoundError:
            problem = "it wrote no report"
        except ReportError as exc:
            problem = exc.message
    return GateRun(gate.command, exit_status, report, output), problem


class VerifyFinishedJSON(TypedDict):
    """``verify_finished``'s fields but its item (docs/events.md)."""

    command: str
    #: ``null``: it timed out.
    exitCode: int | None
    durationMs: int
    passed: bool
    #: How many tests its report failed, when it wrote one.
    failing: NotRequired[int]
    #: Why it failed, when it did.
    reason: NotRequired[str]


def journal_finished(run: RunContext, item_id: str | None, gate: Gate, result: GateRun,
                     passed: bool, reason: str | None) -> int:
    """``verify_finished``: the command, its exit (``null``: timed out), how long it
    took, whether it passed and why not, and how many tests its report failed. How
    long it took, in milliseconds."""
    took = round((time.monotonic() - gate.started) * 1000)
    fields: VerifyFinishedJSON = {"command": gate.command, "exitCode": result.exit_status,
                                  "durationMs": took, "passed": passed}
    if result.report is not None:
        fields["failing"] = len(result.report.failures)
    if reason is not None:
        fields["reason"] = reason
    run.journal.append("verify_finished", itemId=item_id, **fields)
    return took


class Judged(NamedTuple):
    """An ended gate judged and journaled (``judged``)."""

    verdict: Verdict
    #: Why its report could not be read (``gate_run``), or ``None``.
    problem: str | None
    #: How long it took, in milliseconds.
    took: int


def judged(run: RunContext, item_id: str, gate: Gate, manifest: Manifest, *,
           on_tip: bool = False) -> Judged:
    """The ended ``gate`` of ``item_id`` judged against the baseline of its command
    (none: every failure is the item's) — an item's own gates against the baselines
    as they were when it started, the merge queue's check on the branch's tip
    (``on_tip``) against the latest — and journaled (``verify_finished``)."""
    result, problem = gate_run(run, gate, manifest)
    baselines = run.baselines if on_tip else run.item_baselines.get(item_id, run.baselines)
    verdict = judge(result, baselines[gate.position] if gate.position < len(baselines)
                    else None)
    took = journal_finished(run, item_id, gate, result, verdict.passed, verdict.reason)
    return Judged(verdict, problem, took)


def count_check(run: RunContext, item_id: str, duration_ms: int, passed: bool) -> None:
    """An item's gate run added to the run's receipts (its item's and the run's
    ``verify`` totals); on the loop's thread only, as every receipt."""
    agent = run.agent
    try:
        if agent.ledger is None:
            agent.ledger = LedgerWriter(run.workspace.state_dir)
        agent.ledger.record_check(run.state.run_id or "", item_id, duration_ms, passed)
    except ForgeError as exc:  # the journal keeps it all the same
        run.progress.note(f"item {item_id}: its check could not be added up: {exc.message}")


#: What a check of an integration answers when the run stops under it: no verdict,
#: the item goes back to pending (``places.NotLanded.stopped``).
STOPPED_CHECK = "the run stopped before its work was checked on the new tip"


def integration_check(run: RunContext) -> Callable[[str, str], str | None] | None:
    """The merge queue's check of an item's commits replayed onto a tip that moved
    since it forked (``loop.verifyOnIntegrate``): the gates run, on the merge thread,
    in a scratch worktree of the replayed commit under ``verify/``, removed after;
    why they failed there (judged against the baseline, as the item's own gates
    were), ``STOPPED_CHECK`` when the run stopped under them, else ``None``."""
    if not run.options.verify or not run.options.verify_on_integrate:
        return None

    def check(item_id: str, commit: str) -> str | None:
        tip = tips(run.workspace.root, run.branch or "").get(run.branch or "")
        if tip is not None:  # replayed onto a commit of the user's: its baseline first
            tip_baseline(run, tip)
        directory = run.workspace.state_dir / VERIFY_DIR / f"tree-{item_id}"
        with scratch_worktree(run.workspace.root, directory, commit):
            for index in range(len(run.options.verify)):
                try:
                    gate = start_gate(run, item_id, index, directory)
                except ProcessError as exc:
                    if exc.code == "supervisor_shutting_down":
                        return STOPPED_CHECK
                    raise
                manifest = run.supervisor.wait(gate.handle)
                if manifest.state not in ("exited", "timed_out"):  # ended by the run's end
                    return STOPPED_CHECK
                verdict = judged(run, item_id, gate, manifest, on_tip=True).verdict
                if not verdict.passed:
                    return verdict.reason
        return None

    return check


def run_baseline(run: RunContext) -> tuple[Baseline, ...] | None:
    """Each gate run once on the starting tip, in the main checkout, before any item
    starts; ``None`` when the run was stopped meanwhile (the gate's process is then
    ended with the run's)."""
    baselines = []
    for index in range(len(run.options.verify)):
        gate = start_gate(run, "baseline", index, run.workspace.root)
        while not run.supervisor.wait_any([gate.handle], BASELINE_POLL_SECONDS):
            if run.stop():
                return None
        result, _ = gate_run(run, gate, run.supervisor.wait(gate.handle))
        failing = result.report.failing if result.report is not None else None
        journal_finished(run, None, gate, result, result.exit_status == 0, None)
        baselines.append(Baseline(gate.command, result.exit_status, failing))
    return tuple(baselines)


def baseline_at(run: RunContext, tip: str) -> str | None:
    """The gates' baseline on ``tip``, a tip the branch moved to by a commit the run
    did not make (the user's), taken once — on the merge thread before an item is
    integrated onto it, or on the loop's thread before an item starts there: each gate
    run in a scratch worktree under ``verify/``, and the run's latest baselines become
    those, so that no item is blamed for what fails there, and none re-breaks what the
    commit made pass. The note to tell, or ``None`` (taken already, no gates, no
    ``loop.verifyBaseline``, or the run stopping)."""
    if not run.options.verify or not run.options.verify_baseline:
        return None
    with run.baseline_lock:
        if tip in run.baselined:
            return None
        found = _gates_on(run, tip)
        if found is None:
            return None
        run.baselines = found
        run.baselined.add(tip)
    told = [line for line in (describe_baseline(baseline, tip[:12]) for baseline in found)
            if line is not None]
    return (f"the branch moved under the run (to {tip[:12]}, a commit it did not make): "
            "its checks ran there again, and items are held to what fails there"
            + ("; " + "; ".join(told) if told else ""))


def tip_baseline(run: RunContext, tip: str) -> str | None:
    """``baseline_at(tip)`` when ``tip`` is the branch's tip and a commit the run did
    not make put the branch there (its reflog says how it last moved: the run's own
    integrations say ``forge:``); the note, or ``None``."""
    if tip in run.baselined or not run.branch or \
            last_move(run.workspace.root, run.branch).startswith("forge:"):
        return None
    return baseline_at(run, tip)


def _gates_on(run: RunContext, tip: str) -> tuple[Baseline, ...] | None:
    """Each gate's result on ``tip``, in a scratch worktree; ``None`` when the run
    stopped under them (a stop asked meanwhile ends the gate at once: the loop's
    thread may be the one waiting)."""
    directory = run.workspace.state_dir / VERIFY_DIR / "baseline"
    found = []
    with scratch_worktree(run.workspace.root, directory, tip):
        for index in range(len(run.options.verify)):
            try:
                gate = start_gate(run, "baseline", index, directory)
            except ProcessError as exc:
                if exc.code == "supervisor_shutting_down":
                    return None
                raise
            while True:  # (not wait_any: its wake-ups are the loop's thread's)
                try:
                    manifest = run.supervisor.wait(gate.handle, BASELINE_POLL_SECONDS)
                    break
                except ProcessError as exc:
                    if exc.code != "wait_timeout":
                        raise
                if run.stop():
                    run.supervisor.stop(gate.handle, "terminate")
                    return None
            if manifest.state not in ("exited", "timed_out"):  # ended by the run's end
                return None
            result, _ = gate_run(run, gate, manifest)
            failing = result.report.failing if result.report is not None else None
            journal_finished(run, None, gate, result, result.exit_status == 0, None)
            found.append(Baseline(gate.command, result.exit_status, failing))
    return tuple(found)


def baseline_retaker(run: RunContext) -> Callable[[str], str | None] | None:
    """``tip_baseline`` for the merge queue (``None`` without gates or without
    ``loop.verifyBaseline``)."""
    if not run.options.verify or not run.options.verify_baseline:
        return None
    return lambda tip: tip_baseline(run, tip)
