"""``git forge recover``: the post-run recovery procedure as a program.

enumerate → cluster → consolidated questions → record at collection → apply →
prove → gate & exit. Each step reads an authoritative source and the report
says which: the runner's item list (steps 1, 2 and 6 — never backlog.json
behind the runner's back), the decision record, the topology of that list, the
repository. The failure rule: a step whose source fails stops the procedure
with a failed-recovery report quoting the error verbatim and naming the step;
nothing is reported as recorded, applied or moved past it.

How questions are asked is the caller's: an ``Asker`` (a terminal dialogue) or
scripted choices (``--answer``/``--defer``/``--answers``; unanswered → deferred).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from git_forge import decisions
from git_forge.atomic import FileLock, StoreError, lock_is_held, read_lock_holder
from git_forge.backlog.topology import (
    build_graph,
    cluster_blocked,
    id_key,
    topology_of,
    waiting_on,
)
from git_forge.credentials import credential_problem
from git_forge.errors import ForgeError, UsageError
from git_forge.layout import RECOVER_LOCK_FILE
from git_forge.loop.state import read_state
from git_forge.reconcile.attribution import GroupKind, Plan
from git_forge.reconcile.execution import Decision, TreeAction
from git_forge.reconcile.service import reconcile_tree
from git_forge.recovery import answers
from git_forge.recovery.answers import Choice, Collected
from git_forge.recovery.outcome import (
    FAILURE_EXIT_CODES,
    RECOVER,
    Gate,
    Outcome,
    exit_code,
    next_command,
    select_outcome,
)
from git_forge.recovery.questions import Question, build_questions, merge_clusters
from git_forge.runner.base import Change, ChangeFailed, Runner, RunnerError
from git_forge.workspace import Workspace

STEPS = {1: "enumerate", 2: "cluster", 3: "questions", 4: "record", 5: "apply", 6: "prove",
         7: "gate"}


class Asker(Protocol):
    """The host's question mechanism (a terminal dialogue, for instance)."""

    def merges(self, questions: list[Question]) -> list[list[str]]: ...
    def ask(self, questions: list[Question]) -> list[Collected]: ...
    def tree(self, plan: Plan) -> dict[str, Decision]: ...


@dataclass
class RecoverOptions:
    choices: dict[str, Choice] = field(default_factory=dict)
    merges: list[list[str]] = field(default_factory=list)
    commit_recovery: bool = True
    actor: str | None = None


@dataclass(frozen=True)
class Failure:
    kind: str
    step: int
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "step": f"{self.step} ({STEPS[self.step]})",
                "error": self.error}


@dataclass
class Applied:
    item_id: str
    via: str  # "answer" | "unblock"
    needs_human: bool
    threaded: bool

    def to_json(self) -> dict[str, Any]:
        return {"itemId": self.item_id, "via": self.via, "threaded": self.threaded}


@dataclass
class Report:
    """Everything a pass did and found, with the source of each claim."""

    runner: str
    record_path: str
    questions: list[Question] = field(default_factory=list)
    reentry: list[str] = field(default_factory=list)
    stale: list[dict[str, str]] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)
    recorded: list[dict[str, Any]] = field(default_factory=list)
    applied: list[Applied] = field(default_factory=list)
    degraded: dict[str, Any] | None = None
    movers: list[dict[str, str]] = field(default_factory=list)
    non_movers: list[dict[str, str]] = field(default_factory=list)
    gate: Gate | None = None
    tree: dict[str, Any] = field(default_factory=lambda: {"groups": [], "stashes": [],
                                                          "actions": []})
    tree_notes: list[str] = field(default_factory=list)
    tree_clean: bool = True
    outcome: Outcome | None = None
    failure: Failure | None = None
    item_count: int = 0
    nothing_to_recover: bool = False
    #: What the backlog waits on when nothing is selectable (``waiting_on``).
    waiting: list[dict[str, Any]] = field(default_factory=list)

    @property
    def affected(self) -> list[str]:
        return [applied.item_id for applied in self.applied]

    @property
    def exit_code(self) -> int:
        if self.failure is not None:
            return FAILURE_EXIT_CODES[self.failure.kind]
        assert self.outcome is not None
        return exit_code(self.outcome, self.tree_clean)

    @property
    def next(self) -> str:
        if self.failure is not None or self.outcome is None:
            return RECOVER
        return next_command(self.outcome, self.tree_clean)

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": "failed" if self.failure else self.outcome.name if self.outcome else None,
            "exitCode": self.exit_code,
            "affected": self.affected,
            "recorded": self.recorded,
            "applied": [applied.to_json() for applied in self.applied],
            "degraded": self.degraded,
            "proof": {"movers": self.movers, "nonMovers": self.non_movers},
            "gate": self.gate.to_json() if self.gate else None,
            "tree": self.tree,
            "next": self.next,
            "failure": self.failure.to_json() if self.failure else None,
            "reentry": self.reentry,
            "settled": self.settled,
            "stale": self.stale,
            "waitingOn": self.waiting,
        }


class _Stop(Exception):
    """A failed step: the report already carries the failure."""


def _fail(report: Report, kind: str, step: int, error: str) -> _Stop:
    report.failure = Failure(kind, step, error)
    return _Stop()


def _status_of(items: Iterable[dict[str, Any]]) -> dict[str, str]:
    return {str(item.get("id")): str(item.get("status")) for item in items}


def _list(runner: Runner, report: Report, step: int) -> list[dict[str, Any]]:
    try:
        return runner.list_items()
    except RunnerError as exc:
        raise _fail(report, "failed-read", step, exc.message) from exc


def _unapplied(rec: decisions.DecisionRecord, report: Report, step: int) -> list[dict]:
    try:
        return decisions.unapplied_view(rec)["unapplied"]
    except ForgeError as exc:
        raise _fail(report, "failed-read", step, exc.message) from exc


@dataclass
class _Context:
    workspace: Workspace
    runner: Runner
    rec: decisions.DecisionRecord
    report: Report
    items: list[dict[str, Any]]
    unapplied: list[dict[str, Any]]
    backlog_was_dirty: bool = False


def _backlog_dirty(workspace: Workspace) -> bool:
    """Whether backlog.json already had uncommitted changes before this pass: then
    they are the operator's (or a run's) to decide, never swept into recover's commit."""
    from git_forge.tree.fast_status import porcelain_fast

    backlog_rel = workspace.relative(workspace.backlog_file)
    try:
        return any(entry.path == backlog_rel for entry in porcelain_fast(workspace.root))
    except ForgeError:
        return False


def _enumerate(workspace: Workspace, runner: Runner, report: Report) -> _Context:
    rec = decisions.open_record(workspace.backlog_dir, workspace.config.state_dir)
    report.record_path = workspace.relative(rec.path)
    unapplied = _unapplied(rec, report, 1)
    items = _list(runner, report, 1)
    report.item_count = len(items)
    return _Context(workspace, runner, rec, report, items, unapplied)


def _plan_questions(ctx: _Context, options: RecoverOptions,
                    asker: Asker | None) -> tuple[list[Question], dict[str, dict]]:
    """Steps 2–3 before asking: the questions, and the re-entry answers to apply."""
    status = _status_of(ctx.items)
    by_id = {str(item.get("id")): item for item in ctx.items}
    named = set(options.choices)
    reentry: dict[str, dict] = {}
    for entry in ctx.unapplied:
        item_id = entry["itemId"]
        if entry.get("answer") is None or item_id in named:
            continue
        if status.get(item_id) != "blocked":
            if by_id.get(item_id, {}).get("humanAnswer") == entry["answer"]:
                # The runner already holds this very answer (a crash came between
                # its write and the stamp): stamping now is what the runner proves.
                ctx.report.settled.append(item_id)
            else:
                ctx.report.stale.append({"id": item_id,
                                         "status": status.get(item_id, "missing")})
            continue
        reentry[item_id] = entry
    ctx.report.reentry = sorted(reentry, key=id_key)
    asked = [dict(item, status="pending") if str(item.get("id")) in reentry else item
             for item in ctx.items]
    clusters = cluster_blocked(asked)
    if options.merges:
        clusters = merge_clusters(clusters, options.merges, id_key)
    questions = build_questions(ctx.items, clusters, item_count=len(ctx.items))
    if asker is not None:
        merges = asker.merges(questions)
        if merges:
            clusters = merge_clusters(clusters, merges, id_key)
            questions = build_questions(ctx.items, clusters, item_count=len(ctx.items))
    return questions, reentry


def plan(workspace: Workspace, runner: Runner, options: RecoverOptions) -> dict[str, Any]:
    """``recover --plan``: the questions an agent host should ask; writes nothing."""
    report = Report(runner.describe(), "")
    try:
        ctx = _enumerate(workspace, runner, report)
        questions, _ = _plan_questions(ctx, options, None)
    except _Stop:
        assert report.failure is not None
        raise ForgeError(f"{report.failure.kind} at step {report.failure.step}: "
                         f"{report.failure.error}", exit_code=report.exit_code) from None
    return {"questions": [q.to_json() for q in questions], "reentry": report.reentry}


def _collect(questions: list[Question], options: RecoverOptions,
             asker: Asker | None) -> list[Collected]:
    if asker is not None:
        return asker.ask(questions)
    choices = answers.normalise(options.choices, questions)
    return list(answers.resolve(questions, choices))


def _record(ctx: _Context, collected: list[Collected],
            actor: str | None) -> dict[str, dict[str, Any]]:
    """Step 4: every branch is recorded before anything is applied. Returns the
    answer entries as written, by item: exactly what step 5 may stamp."""
    for outcome in collected:
        if outcome.choice.kind == "answer":
            problem = credential_problem(outcome.choice.text or "")
            if problem:
                raise UsageError(f"the answer for {', '.join(outcome.item_ids)} looks like a "
                                 f"credential ({problem}); ask for the decision instead, "
                                 "e.g. \"use the key in $VAR\"")
    reasons = {str(item.get("id")): str(item.get("blockedReason") or "") for item in ctx.items}
    latest = {entry["itemId"]: entry for entry in ctx.unapplied}
    entries: list[decisions.NewDecision] = []
    for outcome in collected:
        for item_id in outcome.item_ids:
            question = reasons.get(item_id, "")
            if outcome.choice.kind == "answer":
                entries.append(decisions.NewDecision(item_id, question, outcome.choice.text,
                                                     outcome.cluster_id))
                continue
            previous = latest.get(item_id)
            if (previous is not None and previous.get("deferred")
                    and previous.get("question") == question):
                continue  # already an unapplied deferral of the same question
            entries.append(decisions.NewDecision(item_id, question))
    written: list[dict[str, Any]] = []
    if entries:
        try:
            document = decisions.record_all(ctx.rec, entries, actor=actor)
        except UsageError:
            raise
        except ForgeError as exc:
            raise _fail(ctx.report, "failed-record", 4, exc.message) from exc
        written = document["decisions"][-len(entries):]  # appended last, under the lock
    ctx.report.recorded = [
        {"itemId": e.item_id, "answer": e.answer, "deferred": e.answer is None,
         **({"clusterId": e.cluster_id} if e.cluster_id else {})} for e in entries]
    return {entry["itemId"]: entry for entry in written if entry.get("answer") is not None}


@contextlib.contextmanager
def _uninterruptible() -> Iterator[None]:
    """Hold Ctrl-C until a runner call and its decision stamp are both done, so an
    item is never left applied in the runner but unstamped in the record."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[object] = []
    previous = signal.signal(signal.SIGINT, lambda *args: caught.append(args))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _apply(ctx: _Context, to_apply: dict[str, dict[str, Any]], actor: str | None) -> None:
    """Step 5: answer (threaded) or unblock, then stamp — only after success, and
    only the very entries applied (``to_apply``: item → its answer entry)."""
    report, runner = ctx.report, ctx.runner
    by_id = {str(item.get("id")): item for item in ctx.items}
    needs_human = {item_id for item_id in to_apply if by_id.get(item_id, {}).get("needsHuman")}
    # recovery.md's dispatch: answer needs-human items, unblock plain blocked and
    # deferred ones — unless the runner threads an answer for every kind (the
    # embedded runner does), so that no answer stops short of the agent's prompt.
    answerable = set(to_apply) if runner.answers_every_kind() else needs_human
    capable = True
    if answerable:
        capable = runner.answer_capable()
        if not capable:
            version = runner.version()
            minimum = ctx.workspace.config["loopRunner.recoveryMinRunnerVersion"]
            why = (f"runner version {version} is older than {minimum}" if version else
                   f"the runner's version could not be read ({_probe_why(runner)})")
            report.degraded = {
                "reason": why,
                "installHint": ctx.workspace.config["loopRunner.installHint"],
                "notThreaded": sorted(answerable, key=id_key),
            }
    threaded = answerable if capable else set()
    changes = [Change(item_id, to_apply[item_id]["answer"] if item_id in threaded else None)
               for item_id in sorted(to_apply, key=id_key)]

    def stamp(item_ids: list[str]) -> None:
        """The runner has these: stamp their decisions, then report them applied."""
        try:
            decisions.apply_entries(ctx.rec, [to_apply[item_id] for item_id in item_ids],
                                    actor=actor)
        except ForgeError as exc:
            what = (f"item {item_ids[0]} was applied but its decision" if len(item_ids) == 1
                    else f"items {', '.join(item_ids)} were applied but their decisions")
            raise _fail(report, "failed-record", 5,
                        f"{what} could not be stamped: {exc.message}") from exc
        report.applied += [Applied(item_id, "answer" if item_id in threaded else "unblock",
                                   item_id in needs_human, item_id in threaded)
                           for item_id in item_ids]

    try:
        with _uninterruptible():
            runner.apply_changes(changes, stamp)
    except ChangeFailed as exc:
        raise _fail(report, "failed-apply", 5,
                    f"item {exc.item_id}: {exc.error.message}") from exc


def _settle(ctx: _Context, actor: str | None) -> None:
    """Stamp answers the runner's list shows it already holds (``humanAnswer``)."""
    if not ctx.report.settled:
        return
    latest = {entry["itemId"]: entry for entry in ctx.unapplied}
    try:
        decisions.apply_entries(ctx.rec, [latest[item_id] for item_id in ctx.report.settled],
                                actor=actor)
    except ForgeError as exc:
        raise _fail(ctx.report, "failed-record", 5, exc.message) from exc


def _probe_why(runner: Runner) -> str:
    return runner.probe_version()[1] or "no version"


def _prove(ctx: _Context) -> list[dict[str, Any]]:
    """Step 6: re-read the runner's list; every applied item must have moved."""
    report = ctx.report
    items = _list(ctx.runner, report, 6)
    status = _status_of(items)
    for item_id in report.affected:
        row = {"id": item_id, "status": status.get(item_id, "missing")}
        moved = item_id in status and status[item_id] != "blocked"
        (report.movers if moved else report.non_movers).append(row)
    if report.non_movers:
        raise _fail(report, "nothing-moved", 6,
                    "the runner accepted every call, but "
                    + ", ".join(f"{row['id']} is {row['status']}" for row in report.non_movers))
    return items


def _tree(ctx: _Context, options: RecoverOptions, asker: Asker | None) -> None:
    """Step 7, first: reconcile the tree. A git failure is reported; we go on."""
    workspace, report = ctx.workspace, ctx.report

    def decide(plan: Plan) -> dict[str, Decision]:
        report.tree_notes = list(plan.notes)
        if asker is not None and plan.groups:
            return asker.tree(plan)
        return {group.id: Decision(TreeAction.COMMIT) for group in plan.groups
                if group.kind is GroupKind.RECOVERY and options.commit_recovery}

    try:
        backlog_rel = workspace.relative(workspace.backlog_file)
        recovery = {backlog_rel} if report.applied and not ctx.backlog_was_dirty else set()
        result = reconcile_tree(workspace, decide, recovery_paths=recovery)
        report.tree = result.to_json()
        report.tree_clean = result.clean
    except ForgeError as exc:
        report.tree_notes.append(f"tree reconciliation skipped: {exc.message}")
        report.tree_clean = False


class RecoverBusy(ForgeError):
    """Another pass holds this backlog's recover lock past the wait (exit 2)."""


@contextlib.contextmanager
def _one_pass_at_a_time(workspace: Workspace) -> Iterator[None]:
    """Passes on one backlog run one at a time, from enumerate to the gate: two at
    once would each record over the other's questions and stamp the other's
    entries. A second pass waits ``recover.lockWaitSeconds``, then refuses naming
    the holder; the lock dies with its holder, so a killed pass never blocks one."""
    path = workspace.state_dir / RECOVER_LOCK_FILE
    wait = float(workspace.config["recover.lockWaitSeconds"])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ForgeError(f"cannot create {path.parent}: {exc.strerror or exc}") from exc
    lock = FileLock(path)
    try:
        lock.acquire(timeout=wait)
    except StoreError:
        if not lock_is_held(path):
            raise
        holder = read_lock_holder(path) or "another process"
        raise RecoverBusy(f"another recover pass is running on this backlog ({holder}); "
                          f"waited {wait:g}s — let it finish, then run git forge recover "
                          "again") from None
    refused = False
    try:
        yield
    except UsageError:
        refused = True  # refused input changes nothing: not even the lock's label
        raise
    finally:
        lock.release(restore_label=refused)


def recover(workspace: Workspace, runner: Runner, options: RecoverOptions,
            asker: Asker | None = None) -> Report:
    """One pass of the procedure; the report says what happened and what to run next."""
    with _one_pass_at_a_time(workspace):
        return _pass(workspace, runner, options, asker)


def _pass(workspace: Workspace, runner: Runner, options: RecoverOptions,
          asker: Asker | None) -> Report:
    report = Report(runner.describe(), "")
    try:
        ctx = _enumerate(workspace, runner, report)
        ctx.backlog_was_dirty = _backlog_dirty(workspace)
        blocked = [item for item in ctx.items if item.get("status") == "blocked"]
        final_items = ctx.items
        if ctx.unapplied or blocked:
            questions, reentry = _plan_questions(ctx, options, asker)
            report.questions = questions
            collected = _collect(questions, options, asker)
            to_apply = dict(reentry)
            to_apply.update(_record(ctx, collected, options.actor))
            _settle(ctx, options.actor)
            if to_apply:
                _apply(ctx, to_apply, options.actor)
                final_items = _prove(ctx)
        else:
            report.nothing_to_recover = True
        _tree(ctx, options, asker)
        unapplied_after = {e["itemId"] for e in _unapplied(ctx.rec, report, 7)}
        affected = tuple(report.affected)
        report.gate = Gate(
            unapplied_affected=tuple(i for i in affected if i in unapplied_after),
            porcelain_clean=report.tree_clean,
            all_moved=not report.non_movers,
            affected=affected,
        )
        try:
            run_state = read_state(workspace.state_dir)
        except ForgeError:
            run_state = None
        graph = build_graph(final_items)
        report.waiting = waiting_on(graph)
        report.outcome = select_outcome(report.gate, final_items, topology_of(graph),
                                        run_state, report.waiting)
    except _Stop:
        pass
    return report
