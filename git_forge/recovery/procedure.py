"""``git forge recover``: the post-run recovery procedure as a program.

enumerate → cluster → consolidated questions → record at collection → apply →
prove → gate & exit, one function per step (steps.py). Each step reads an
authoritative source and the report says which: the runner's item list (steps
1, 2 and 6 — never backlog.json behind the runner's back), the decision record,
the topology of that list, the repository. The failure rule: a step whose
source fails stops the procedure with a failed-recovery report quoting the
error verbatim and naming the step; nothing is reported as recorded, applied or
moved past it (report.py assembles the report from what the steps returned).

How questions are asked is the caller's: an ``Asker`` (a terminal dialogue) or
scripted choices (``--answer``/``--defer``/``--answers``; unanswered → deferred).
"""

import contextlib
from collections.abc import Iterator
from typing import TypedDict

from git_forge import decisions
from git_forge.backlog.store import BacklogStore
from git_forge.errors import ForgeError, StoreError, UsageError
from git_forge.layout import RECOVER_LOCK_FILE
from git_forge.lockprobe import lock_is_held, read_lock_holder
from git_forge.locks import FileLock
from git_forge.recovery import answers
from git_forge.recovery.questions import QuestionJSON
from git_forge.recovery.report import Application, Proof, Report, StepResult
from git_forge.recovery.steps import (
    Asker,
    Context,
    RecoverOptions,
    RecoveryFailed,
    apply,
    backlog_before,
    cluster,
    consolidate,
    enumerate_items,
    gate,
    prove,
    reconcile_tree,
    record,
)
from git_forge.runner.base import Runner
from git_forge.workspace import Workspace

__all__ = ["Asker", "RecoverBusy", "RecoverOptions", "Report", "plan", "recover"]


class PlanJSON(TypedDict):
    """``recover --plan --json``: the questions to ask, and the items answered already."""

    questions: list[QuestionJSON]
    reentry: list[str]


def plan(workspace: Workspace, runner: Runner, options: RecoverOptions) -> PlanJSON:
    """``recover --plan``: the questions an agent host should ask; writes nothing."""
    refuse_not_set_up(workspace)
    ctx = Context.open(workspace, runner, options)
    try:
        enumerated = enumerate_items(ctx)
        clustered = cluster(ctx, enumerated)
        consolidated = consolidate(ctx, enumerated, clustered)
    except RecoveryFailed as failed:
        raise ForgeError(f"{failed.kind.value} at step {failed.step.number}: {failed.message}",
                         exit_code=failed.kind.exit_code) from None
    # choices given with --plan name open questions too, or are refused as a pass
    # refuses them: a plan never says a choice is fine that the pass would refuse
    answers.normalise(options.choices, consolidated.questions)
    return {"questions": [q.to_json() for q in consolidated.questions],
            "reentry": clustered.reentry_ids}


class RecoverBusy(ForgeError):
    """Another pass holds this backlog's recover lock past the wait (exit 2)."""


def refuse_not_set_up(workspace: Workspace) -> None:
    """Refuse, before anything is created, a project ``git forge init`` has not set
    up: the embedded runner's backlog.json is not there, or the backlog directory
    that keeps the decision record. A pass's lock would make the state dir, and the
    failed pass then only suggest itself again."""
    if workspace.config.runner_bin is None and not workspace.backlog_file.is_file():
        raise BacklogStore(workspace.backlog_file).missing()
    decisions.open_record(workspace.backlog_dir, workspace.config.state_dir)


@contextlib.contextmanager
def one_pass_at_a_time(workspace: Workspace,
                       command: str = "git forge recover") -> Iterator[None]:
    """Passes on one backlog run one at a time, from enumerate to the gate: two at
    once would each record over the other's questions and stamp the other's
    entries. A second pass waits ``recover.lockWaitSeconds``, then refuses naming
    the holder; the lock dies with its holder, so a killed pass never blocks one.
    A project not set up is refused first (``refuse_not_set_up``): nothing made;
    a pass refused on its input removes the lock file it created (byte-for-byte
    unchanged)."""
    refuse_not_set_up(workspace)
    path = workspace.state_dir / RECOVER_LOCK_FILE
    wait = float(workspace.config["recover.lockWaitSeconds"])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ForgeError(f"cannot create {path.parent}: {exc.strerror or exc}") from exc
    existed = path.exists()
    lock = FileLock(path)
    try:
        lock.acquire(timeout=wait)
    except StoreError:
        if not lock_is_held(path):
            raise
        holder = read_lock_holder(path) or "another process"
        raise RecoverBusy(f"another recover pass is running on this backlog ({holder}); "
                          f"waited {wait:g}s — let it finish, then run {command} "
                          "again") from None
    refused = False
    try:
        yield
    except UsageError:
        refused = True  # refused input changes nothing: not even the lock's label
        raise
    finally:
        lock.release(restore_label=refused, remove=refused and not existed)


def recover(workspace: Workspace, runner: Runner, options: RecoverOptions,
            asker: Asker | None = None) -> Report:
    """One pass of the procedure; the report says what happened and what to run next."""
    with one_pass_at_a_time(workspace):
        return _pass(Context.open(workspace, runner, options, asker))


def _pass(ctx: Context) -> Report:
    """Run the steps, keeping each result as it comes; a failed step is caught here,
    once, and the report is what the steps before it (and its partial) returned."""
    done: list[StepResult] = []
    try:
        for result in _steps(ctx):
            done.append(result)
    except RecoveryFailed as failed:
        if failed.partial is not None:
            done.append(failed.partial)
        return Report.assemble(ctx.runner.describe(), ctx.record_path, done, failed.failure)
    return Report.assemble(ctx.runner.describe(), ctx.record_path, done)


def _steps(ctx: Context) -> Iterator[StepResult]:
    """The seven steps in order. Nothing to recover skips to step 7: the tree is
    reconciled on every pass."""
    enumerated = enumerate_items(ctx)
    yield enumerated
    backlog = backlog_before(ctx, enumerated)  # before this pass writes to it
    application = Application()
    proof: Proof | None = None
    if not enumerated.nothing_to_recover:
        clustered = cluster(ctx, enumerated)
        yield clustered
        consolidated = consolidate(ctx, enumerated, clustered)
        yield consolidated
        recorded = record(ctx, enumerated, consolidated)
        yield recorded
        application = apply(ctx, enumerated, clustered, recorded)
        yield application
        if application.requested:
            proof = prove(ctx, application)
            yield proof
    tree = reconcile_tree(ctx, application, backlog)
    yield tree
    yield gate(ctx, enumerated, application, proof, tree)
