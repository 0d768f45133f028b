"""The seven steps of ``git forge recover``, one function each.

Every step takes the pass's ``Context`` and the results of the steps before it,
and returns its own frozen result (report.py). A step whose source fails raises
``RecoveryFailed`` naming itself, with what it did before failing; the procedure
catches it once and stops there. Refused input (a credential-looking answer, an
unknown id) is a ``UsageError`` instead: it changes nothing and is no step's
failure.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol

from git_forge import decisions
from git_forge.backlog.bookkeeping import only_applied_answers
from git_forge.backlog.item import NO_REASON, Item
from git_forge.backlog.topology import (
    ClusterJSON,
    build_graph,
    cluster_blocked,
    id_key,
    topology_of,
    waiting_on,
)
from git_forge.credentials import credential_refusal
from git_forge.errors import ForgeError, UsageError
from git_forge.interrupts import Caught
from git_forge.loop.receipts import spent_so_far
from git_forge.loop.state import RunState, read_state
from git_forge.reconcile import service
from git_forge.reconcile.attribution import GroupKind, Plan
from git_forge.reconcile.conflicts import (
    RETRY_ANSWER,
    ConflictRecord,
    mark_resolving,
    read_conflicts,
    resolve_commands,
    retry,
    retry_refusal,
)
from git_forge.reconcile.execution import Decision, TreeAction
from git_forge.recovery import answers
from git_forge.recovery.answers import Choice, Collected
from git_forge.recovery.outcome import Gate, select_outcome
from git_forge.recovery.questions import (
    Question,
    build_questions,
    cannot_merge,
    merge_clusters,
)
from git_forge.recovery.report import (
    Application,
    Applied,
    Clustered,
    Degraded,
    Enumerated,
    Failure,
    FailureKind,
    Gated,
    Proof,
    Questions,
    Recorded,
    RecordedJSON,
    Step,
    StepResult,
    TreeResult,
)
from git_forge.runner.base import Change, ChangeFailed, Runner, RunnerError
from git_forge.tree.fast_status import head_blob, porcelain_fast
from git_forge.workspace import Workspace


class Asker(Protocol):
    """The host's question mechanism (a terminal dialogue, for instance)."""

    def merges(self, questions: list[Question]) -> list[list[str]]: ...
    def ask(self, questions: list[Question]) -> list[Collected]: ...
    def tree(self, plan: Plan) -> dict[str, Decision]: ...


@dataclass(frozen=True)
class RecoverOptions:
    """The operator's scripted choices, merges and switches for one pass."""

    choices: dict[str, Choice] = field(default_factory=dict)
    merges: list[list[str]] = field(default_factory=list)
    commit_recovery: bool = True
    actor: str | None = None


@dataclass(frozen=True)
class Context:
    """What every step reads: the workspace, its runner and decision record, the
    operator's options, and the host's question mechanism (``None``: scripted)."""

    workspace: Workspace
    runner: Runner
    rec: decisions.DecisionRecord
    options: RecoverOptions
    asker: Asker | None = None

    @classmethod
    def open(cls, workspace: Workspace, runner: Runner, options: RecoverOptions,
             asker: Asker | None = None) -> Context:
        """The context of one pass over ``workspace``'s backlog and its record."""
        rec = decisions.open_record(workspace.backlog_dir, workspace.config.state_dir)
        return cls(workspace, runner, rec, options, asker)

    @property
    def record_path(self) -> str:
        return self.workspace.relative(self.rec.path)


class RecoveryFailed(Exception):
    """A step whose source failed: the pass stops there (recovery.md, the failure
    rule). ``partial`` is what the step had done before it failed — the items a
    batch applied and stamped, the movers of a failed proof — so the report shows
    exactly that much and nothing past it."""

    def __init__(self, step: Step, kind: FailureKind, message: str, *,
                 partial: StepResult | None = None, source: str | None = None) -> None:
        super().__init__(message)
        self.step = step
        self.kind = kind
        self.message = message
        self.partial = partial
        self.source = source

    @property
    def failure(self) -> Failure:
        return Failure(self.kind, self.step, self.message, self.source)


def _status_of(items: Iterable[Item]) -> dict[str, str]:
    return {item.id: str(item.status) for item in items}


def _list(ctx: Context, step: Step) -> list[Item]:
    """The runner's item list: the one data source of steps 1, 2 and 6. The embedded
    runner's refusal is of the project's backlog.json, which is named as the file to fix."""
    try:
        return ctx.runner.list_items()
    except RunnerError as exc:
        source = (ctx.workspace.relative(ctx.workspace.backlog_file)
                  if ctx.runner.kind == "embedded" else None)
        raise RecoveryFailed(step, FailureKind.READ, exc.message, source=source) from exc


def _unapplied(rec: decisions.DecisionRecord, step: Step) -> list[decisions.DecisionJSON]:
    try:
        return list(decisions.unapplied_view(rec, writing=True)["unapplied"])
    except ForgeError as exc:
        raise RecoveryFailed(step, FailureKind.READ, exc.message) from exc


# --- step 1 -------------------------------------------------------------------------------


def enumerate_items(ctx: Context) -> Enumerated:
    """Step 1: the record's unapplied entries, then the runner's list."""
    unapplied = _unapplied(ctx.rec, Step.ENUMERATE)
    return Enumerated(_list(ctx, Step.ENUMERATE), unapplied)


# --- step 2 -------------------------------------------------------------------------------


def _answers(entry: decisions.DecisionJSON, item: Item) -> bool:
    """Whether ``entry`` answers what ``item`` is blocked on now: the question it
    recorded is the item's reason (white space aside), or it recorded none. An
    answer to an earlier question is never applied to a later one."""
    question = entry.get("question")
    if not isinstance(question, str) or not question.strip():
        return True
    return " ".join(question.split()) == " ".join((item.blocked_reason or "").split())


def cluster(ctx: Context, enumerated: Enumerated) -> Clustered:
    """Step 2: sort the unapplied answers out first — one for a still-blocked item is
    re-entry (applied without asking, so it is not clustered as blocked), one the
    runner already holds is settled, any other is stale — then cluster the blocked
    items and apply the operator's merges (``--merge``: a floor, never a split)."""
    status = _status_of(enumerated.items)
    by_id = {item.id: item for item in enumerated.items}
    named = set(ctx.options.choices)
    reentry: dict[str, decisions.DecisionJSON] = {}
    settled: list[str] = []
    stale: list[dict[str, str]] = []
    for entry in enumerated.unapplied:
        item_id = entry["itemId"]
        if entry.get("answer") is None or item_id in named:
            continue
        if status.get(item_id) != "blocked":
            held = by_id.get(item_id)
            if held is not None and held.human_answer == entry["answer"]:
                # The runner already holds this very answer (a crash came between
                # its write and the stamp): stamping now is what the runner proves.
                settled.append(item_id)
            else:
                stale.append({"id": item_id, "status": status.get(item_id, "missing")})
            continue
        if not _answers(entry, by_id[item_id]):  # the item asks something else now
            stale.append({"id": item_id, "status": "blocked", "asks": "another question"})
            continue
        reentry[item_id] = entry
    conflicts = _open_conflicts(ctx, status, reentry)
    # an item whose agent gave no reason is a question of its own: nothing says two
    # such items wait on the same thing
    unexplained = [item.id for item in enumerated.items
                   if status.get(item.id) == "blocked" and item.id not in reentry
                   and item.id not in conflicts
                   and (item.blocked_reason or "").strip() in ("", NO_REASON)]
    apart = {*conflicts, *unexplained}
    asked = [item.with_changes(status="pending") if item.id in reentry or item.id in apart
             else item for item in enumerated.items]
    clusters = cluster_blocked(asked)
    if apart:  # each merge conflict, each item without a reason: a question of its own
        graph = build_graph(enumerated.items)
        alone: list[ClusterJSON] = [{"clusterId": "c" + item_id, "memberIds": [item_id],
                                     "memberReasons": [by_id[item_id].blocked_reason or ""],
                                     "gatedIds": graph.gated_ids([item_id]),
                                     "gatedCount": len(graph.gated_ids([item_id]))}
                                    for item_id in apart]
        clusters = sorted([*clusters, *alone],
                          key=lambda cluster: id_key(cluster["memberIds"][0]))
    if ctx.options.merges:
        clusters = merge_clusters(clusters, ctx.options.merges, id_key)
        _refuse_merged_conflicts(clusters, conflicts)
    return Clustered(clusters, reentry, tuple(settled), tuple(stale), conflicts)


def _open_conflicts(ctx: Context, status: dict[str, str],
                    reentry: dict[str, decisions.DecisionJSON]) -> dict[str, ConflictRecord]:
    """The blocked items whose merge conflict is open (the loop's record says so)."""
    try:
        recorded = read_conflicts(ctx.workspace.state_dir)
    except ForgeError as exc:
        raise RecoveryFailed(Step.CLUSTER, FailureKind.READ, exc.message) from exc
    return {item_id: record for item_id, record in recorded.items()
            if record.open and status.get(item_id) == "blocked" and item_id not in reentry}


def _refuse_merged_conflicts(clusters: list[ClusterJSON],
                             conflicts: dict[str, ConflictRecord]) -> None:
    for cluster in clusters:
        members = cluster["memberIds"]
        caught = [m for m in members if m in conflicts]
        if caught and len(members) > 1:
            raise UsageError(cannot_merge(caught[0]))


# --- step 3 -------------------------------------------------------------------------------


def consolidate(ctx: Context, enumerated: Enumerated, clustered: Clustered) -> Questions:
    """Step 3: one question per cluster, after the merges the host's dialogue offers."""
    items, clusters = enumerated.items, clustered.clusters
    spent = spent_so_far(ctx.workspace.state_dir,
                         [m for cluster in clusters for m in cluster["memberIds"]])
    root = ctx.workspace.root
    conflicts = {item_id: (record, resolve_commands(record, root))
                 for item_id, record in clustered.conflicts.items()}
    questions = build_questions(items, clusters, item_count=len(items), spent=spent,
                                conflicts=conflicts)
    if ctx.asker is not None:
        merges = ctx.asker.merges(questions)
        if merges:
            clusters = merge_clusters(clusters, merges, id_key)
            _refuse_merged_conflicts(clusters, clustered.conflicts)
            questions = build_questions(items, clusters, item_count=len(items), spent=spent,
                                        conflicts=conflicts)
    return Questions(tuple(questions))


# --- step 4 -------------------------------------------------------------------------------


def _collect(ctx: Context, questions: list[Question]) -> list[Collected]:
    """The host's answers: its dialogue's, or the scripted choices (unanswered → deferred)."""
    if ctx.asker is not None:
        return ctx.asker.ask(questions)
    choices = answers.normalise(ctx.options.choices, questions)
    return list(answers.resolve(questions, choices))


def _as_conflicts_take_them(ctx: Context, collected: list[Collected]) -> list[Collected]:
    """A merge conflict's question takes ``retry`` or ``resolve`` (``conflict_choice``);
    a retry its worktree cannot take now (locked, a rebase in progress) is refused
    here, before anything is recorded."""
    taken = []
    for outcome in collected:
        choice = answers.conflict_choice(outcome.question, outcome.choice, outcome.item_ids)
        conflict = outcome.question.conflict
        if choice.kind == "retry" and conflict is not None:
            why = retry_refusal(ctx.workspace.root, conflict)
            if why is not None:
                raise UsageError(why)
        taken.append(Collected(outcome.question, outcome.item_ids, choice))
    return taken


def _refuse_credentials(collected: list[Collected]) -> None:
    """Never record a secret: a credential-looking answer refuses the whole pass."""
    for outcome in collected:
        if outcome.choice.kind == "answer":
            refusal = credential_refusal(
                outcome.choice.text, f"the answer for {', '.join(outcome.item_ids)}")
            if refusal:
                raise UsageError(refusal)


def _new_entries(enumerated: Enumerated,
                 collected: list[Collected]) -> list[decisions.NewDecision]:
    """One entry per item of every branch; a deferral that repeats the item's latest
    unapplied deferral of the same question adds nothing (no growth per pass)."""
    reasons = {item.id: item.blocked_reason or "" for item in enumerated.items}
    latest = {entry["itemId"]: entry for entry in enumerated.unapplied}
    entries: list[decisions.NewDecision] = []
    for outcome in collected:
        for item_id in outcome.item_ids:
            question = reasons.get(item_id, "")
            if outcome.choice.kind == "answer":
                entries.append(decisions.NewDecision(item_id, question, outcome.choice.text,
                                                     outcome.cluster_id))
                continue
            if outcome.choice.kind == "retry":  # answered: applied as the retry it is
                entries.append(decisions.NewDecision(item_id, question, RETRY_ANSWER))
                continue
            previous = latest.get(item_id)
            if (previous is not None and previous.get("deferred")
                    and previous.get("question") == question):
                continue
            entries.append(decisions.NewDecision(item_id, question))
    return entries


def record(ctx: Context, enumerated: Enumerated, consolidated: Questions) -> Recorded:
    """Step 4, record at collection: every branch is recorded before anything is
    applied, in one write; the answer entries as written are what step 5 may stamp."""
    collected = _as_conflicts_take_them(ctx, _collect(ctx, list(consolidated.questions)))
    _refuse_credentials(collected)
    entries = _new_entries(enumerated, collected)
    written: list[decisions.DecisionJSON] = []
    if entries:
        try:
            document = decisions.record_all(ctx.rec, entries, actor=ctx.options.actor)
        except UsageError:
            raise
        except ForgeError as exc:
            raise RecoveryFailed(Step.RECORD, FailureKind.RECORD, exc.message) from exc
        written = document["decisions"][-len(entries):]  # appended last, under the lock
    chosen: dict[str, str] = {item_id: outcome.choice.kind for outcome in collected
                              if outcome.choice.kind in ("retry", "resolve")
                              for item_id in outcome.item_ids}
    try:
        mark_resolving(ctx.workspace.state_dir,
                       {item_id for item_id, kind in chosen.items() if kind == "resolve"})
    except ForgeError as exc:
        raise RecoveryFailed(Step.RECORD, FailureKind.RECORD, exc.message) from exc
    return Recorded(tuple(_row(entry, chosen) for entry in entries),
                    {entry["itemId"]: entry for entry in written
                     if entry.get("answer") is not None}, chosen)


def _row(entry: decisions.NewDecision, chosen: dict[str, str]) -> RecordedJSON:
    """One recorded entry as the report lists it."""
    row: RecordedJSON = {"itemId": entry.item_id, "answer": entry.answer,
                         "deferred": entry.answer is None}
    if entry.cluster_id:
        row["clusterId"] = entry.cluster_id
    if entry.item_id in chosen:
        row["choice"] = chosen[entry.item_id]
    return row


# --- step 5 -------------------------------------------------------------------------------


@contextlib.contextmanager
def _uninterruptible() -> Iterator[None]:
    """Hold Ctrl-C until a runner call and its decision stamp are both done, so an
    item is never left applied in the runner but unstamped in the record."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = Caught()
    previous = signal.signal(signal.SIGINT, caught.note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught.signum is not None:
        raise KeyboardInterrupt


def _settle(ctx: Context, enumerated: Enumerated, clustered: Clustered) -> None:
    """Stamp answers the runner's list shows it already holds (``humanAnswer``)."""
    if not clustered.settled:
        return
    latest = {entry["itemId"]: entry for entry in enumerated.unapplied}
    try:
        decisions.apply_entries(ctx.rec, [latest[item_id] for item_id in clustered.settled],
                                actor=ctx.options.actor)
    except ForgeError as exc:
        raise RecoveryFailed(Step.APPLY, FailureKind.RECORD, exc.message) from exc


def _probe_why(runner: Runner) -> str:
    return runner.probe_version()[1] or "no version"


def _degraded(ctx: Context, answerable: set[str]) -> Degraded | None:
    """The degraded path, when the runner cannot thread answers (too old, or its
    version could not be read); ``None`` when it can or nothing is to be answered."""
    runner = ctx.runner
    if not answerable or runner.answer_capable():
        return None
    version = runner.version()
    minimum = ctx.workspace.config["loopRunner.recoveryMinRunnerVersion"]
    why = (f"runner version {version} is older than {minimum}" if version else
           f"the runner's version could not be read ({_probe_why(runner)})")
    return Degraded(why, ctx.workspace.config["loopRunner.installHint"],
                    tuple(sorted(answerable, key=id_key)))


def apply(ctx: Context, enumerated: Enumerated, clustered: Clustered,
          recorded: Recorded) -> Application:
    """Step 5: stamp what is settled; then answer (threaded) or unblock every re-entry
    and newly recorded answer, each stamped only after the runner took it, and only
    the very entries applied."""
    _settle(ctx, enumerated, clustered)
    to_apply = dict(clustered.reentry)
    to_apply.update(recorded.answers)
    if not to_apply:
        return Application()
    seen = _list(ctx, Step.APPLY) if ctx.asker is not None else None
    stale = _no_longer_blocked(seen, to_apply) if seen is not None else ()
    for row in stale:
        del to_apply[row["id"]]
    if not to_apply:
        return Application(stale=stale, seen=seen)
    runner, actor = ctx.runner, ctx.options.actor
    by_id = {item.id: item for item in enumerated.items}
    needs_human = {item_id for item_id in to_apply
                   if (item := by_id.get(item_id)) is not None and item.needs_human}
    # recovery.md's dispatch: answer needs-human items, unblock plain blocked and
    # deferred ones — unless the runner threads an answer for every kind (the
    # embedded runner does), so that no answer stops short of the agent's prompt.
    answerable = set(to_apply) if runner.answers_every_kind() else needs_human
    degraded = _degraded(ctx, answerable)
    threaded = answerable if degraded is None else set()
    try:
        retried = _retry_conflicts(ctx, to_apply)
    except RecoveryFailed as exc:  # the stale ones found first stay in its report
        partial = exc.partial if isinstance(exc.partial, Application) else Application()
        exc.partial = replace(partial, stale=stale, seen=seen)
        raise
    changes = [Change(item_id, to_apply[item_id]["answer"] if item_id in threaded else None)
               for item_id in sorted(to_apply, key=id_key)]
    requested = tuple(change.item_id for change in changes)
    applied: list[Applied] = []

    def stamp(item_ids: list[str]) -> None:
        """The runner has these: stamp their decisions, then count them applied."""
        try:
            decisions.apply_entries(ctx.rec, [to_apply[item_id] for item_id in item_ids],
                                    actor=actor)
        except ForgeError as exc:
            what = (f"item {item_ids[0]} was applied but its decision" if len(item_ids) == 1
                    else f"items {', '.join(item_ids)} were applied but their decisions")
            raise RecoveryFailed(Step.APPLY, FailureKind.RECORD,
                                 f"{what} could not be stamped: {exc.message}",
                                 partial=Application(requested, tuple(applied), degraded,
                                                     retried, stale, seen)) from exc
        applied.extend(Applied(item_id, item_id in needs_human, item_id in threaded)
                       for item_id in item_ids)

    try:
        with _uninterruptible():
            runner.apply_changes(changes, stamp)
    except ChangeFailed as exc:
        raise RecoveryFailed(Step.APPLY, FailureKind.APPLY,
                             f"item {exc.item_id}: {exc.error.message}",
                             partial=Application(requested, tuple(applied), degraded,
                                                 retried, stale, seen)) from exc
    return Application(requested, tuple(applied), degraded, retried, stale, seen)


def _no_longer_blocked(items: list[Item], to_apply: dict[str, decisions.DecisionJSON]
                       ) -> tuple[dict[str, str], ...]:
    """The items of ``to_apply`` that are not blocked on ``items``, the runner's list
    read again: an interactive pass asks for minutes, and another terminal may answer
    or unblock one meanwhile. Their answers are stale, as step 2 finds them (left
    unapplied in the record, reported, never forced on the item). A scripted pass goes
    from step 1 to here in moments and reads the runner's list no more than the
    contract's sequence says."""
    status = _status_of(items)
    return tuple({"id": item_id, "status": status.get(item_id, "missing")}
                 for item_id in sorted(to_apply, key=id_key)
                 if status.get(item_id) != "blocked")


def _retry_conflicts(ctx: Context, to_apply: dict[str, decisions.DecisionJSON]
                     ) -> tuple[ConflictRecord, ...]:
    """Before their answers reach the runner, the conflicts answered ``retry``: each
    attempt kept under a safety ref, its worktree and branch removed
    (``conflicts.retry``; again on re-entry, where it finds the work done). A
    failure stops the pass (failed apply) before the runner is called."""
    workspace = ctx.workspace
    wanted = [item_id for item_id, entry in to_apply.items()
              if entry.get("answer") == RETRY_ANSWER]
    if not wanted:
        return ()
    try:
        recorded = read_conflicts(workspace.state_dir)
    except ForgeError as exc:
        raise RecoveryFailed(Step.APPLY, FailureKind.APPLY, exc.message) from exc
    retried: list[ConflictRecord] = []
    for item_id in sorted(wanted, key=id_key):
        if item_id not in recorded:
            continue  # no conflict recorded: the answer is applied as any answer
        try:
            retried.append(retry(workspace.root, workspace.state_dir, item_id))
        except ForgeError as exc:
            raise RecoveryFailed(Step.APPLY, FailureKind.APPLY, exc.message,
                                 partial=Application(retried=tuple(retried))) from exc
    return tuple(retried)


# --- step 6 -------------------------------------------------------------------------------


def prove(ctx: Context, application: Application) -> Proof:
    """Step 6: re-read the runner's list; every applied item must have moved."""
    items = _list(ctx, Step.PROVE)
    status = _status_of(items)
    movers: list[dict[str, str]] = []
    non_movers: list[dict[str, str]] = []
    for applied in application.applied:
        row = {"id": applied.item_id, "status": status.get(applied.item_id, "missing")}
        moved = applied.item_id in status and status[applied.item_id] != "blocked"
        (movers if moved else non_movers).append(row)
    proof = Proof(items, tuple(movers), tuple(non_movers))
    if non_movers:
        raise RecoveryFailed(Step.PROVE, FailureKind.NOTHING_MOVED,
                             "the runner accepted every call, but "
                             + ", ".join(f"{row['id']} is {row['status']}" for row in non_movers),
                             partial=proof)
    return proof


# --- step 7 -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BacklogBefore:
    """backlog.json as a pass finds it, before it writes to it."""

    #: Changed other than by recover: the operator's (or a run's) to decide, never
    #: swept into recover's commit.
    dirty: bool = False
    #: The items whose answers an earlier pass applied and was killed before it
    #: committed them: recover's own change, committed with this pass's.
    leftover: tuple[str, ...] = ()


def backlog_before(ctx: Context, enumerated: Enumerated) -> BacklogBefore:
    """What backlog.json holds that HEAD does not, as this pass starts: nothing,
    the answers of an interrupted pass (``bookkeeping.only_applied_answers``, over
    each item's latest answer that is stamped applied or that the runner's list
    shows it holds), or anything else."""
    workspace = ctx.workspace
    backlog_rel = workspace.relative(workspace.backlog_file)
    try:
        if not any(entry.path == backlog_rel for entry in porcelain_fast(workspace.root)):
            return BacklogBefore()
        head = head_blob(workspace.root, backlog_rel)
        document = decisions.load(ctx.rec)
        work = workspace.backlog_file.read_bytes()
    except (ForgeError, OSError):
        return BacklogBefore(dirty=True)
    held = {item.id: item.human_answer for item in enumerated.items}
    latest = decisions.latest_entries(document["decisions"]) if document else {}
    answers = {item_id: answer for item_id, entry in latest.items()
               if isinstance(answer := entry.get("answer"), str)
               and (entry.get("appliedAt") is not None or held.get(item_id) == answer)}
    leftover = only_applied_answers(head, work, answers) if head is not None and answers else []
    return BacklogBefore(leftover=tuple(leftover)) if leftover else BacklogBefore(dirty=True)


def reconcile_tree(ctx: Context, application: Application,
                   backlog: BacklogBefore) -> TreeResult:
    """Step 7, first: reconcile the tree. recover's own backlog change — this pass's
    answers, and those an interrupted pass left — is its own group; a git failure
    is reported, and we go on."""
    workspace, options, asker = ctx.workspace, ctx.options, ctx.asker
    notes: list[str] = []

    def decide(plan: Plan) -> dict[str, Decision]:
        notes.extend(plan.notes)
        if asker is not None and plan.groups:
            return asker.tree(plan)
        return {group.id: Decision(TreeAction.COMMIT) for group in plan.groups
                if group.kind is GroupKind.RECOVERY and options.commit_recovery}

    try:
        backlog_rel = workspace.relative(workspace.backlog_file)
        ours = (application.applied or backlog.leftover) and not backlog.dirty
        if backlog.leftover:
            notes.append(f"{backlog_rel} held the applied answers of an interrupted recover "
                         f"pass (items {', '.join(backlog.leftover)}): recover's own change")
        report = service.reconcile_tree(workspace, decide,
                                        recovery_paths={backlog_rel} if ours else set())
        items_left = tuple(dict.fromkeys(tree.item_id for tree in report.trees_left))
        return TreeResult(report.to_json(), tuple(notes), not report.remaining, items_left)
    except ForgeError as exc:
        notes.append(f"tree reconciliation skipped: {exc.message}")
        return TreeResult({"groups": [], "stashes": [], "actions": []}, tuple(notes), False)


def gate(ctx: Context, enumerated: Enumerated, application: Application,
         proof: Proof | None, tree: TreeResult) -> Gated:
    """Step 7: the three evaluations behind ``resolved``, then the outcome ladder over
    the latest list (the proof's re-read, else step 5's when it read one, else step
    1's)."""
    unapplied_after = {entry["itemId"] for entry in _unapplied(ctx.rec, Step.GATE)}
    affected = tuple(applied.item_id for applied in application.applied)
    verdict = Gate(
        unapplied_affected=tuple(i for i in affected if i in unapplied_after),
        porcelain_clean=tree.porcelain_clean,
        items_left=tree.items_left,
        all_moved=proof is None or not proof.non_movers,
        affected=affected,
    )
    try:
        run_state = read_state(ctx.workspace.state_dir)  # None: no run has happened yet
    except ForgeError:
        run_state = RunState()  # a run is known of; its state is unreadable
    items = (proof.items if proof is not None else
             application.seen if application.seen is not None else enumerated.items)
    graph = build_graph(items)
    waiting = waiting_on(graph)
    return Gated(verdict, select_outcome(verdict, items, topology_of(graph), run_state,
                                         waiting), waiting)
