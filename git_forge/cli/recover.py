"""``git forge recover`` — turn a stopped run's blocked items into a resumable backlog.

Interactive on a terminal (one question at a time; Ctrl-C cancels early and is
recorded), scripted otherwise (``--answer ID=TEXT``, ``--defer ID``,
``--answers FILE``; an unanswered question is deferred), or ``--plan --json``
for an agent host to ask its human. The report ends with NEXT-STEPS: exactly
one command, and nothing after it.

Exit codes: 0 resolved, complete, partial or deferred with a clean tree, or
nothing to recover (safe to resume); 2 usage error or refused input; 3
needs-human remains; 4 blocked remains; 6 the tree is left dirty; 10 failed
read; 11 failed record; 12 failed apply; 13 ran but nothing moved.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from git_forge.backlog.topology import id_key
from git_forge.cli import ask
from git_forge.cli.args import Args
from git_forge.cli.arguments import add_location
from git_forge.cli.ask import InputClosed
from git_forge.cli.output import emit_json, note, paint
from git_forge.cli.reconcile import ask_decisions, queued_text, render_plan
from git_forge.cli.render_topology import waiting_text
from git_forge.credentials import credential_refusal
from git_forge.errors import UsageError
from git_forge.loop.control import live_note, refuse_if_live
from git_forge.reconcile.conflicts import RECOVER_ANSWERS
from git_forge.recovery import answers
from git_forge.recovery.answers import CANCEL, DEFER, Choice, Collected, conflict_choice
from git_forge.recovery.procedure import RecoverOptions, plan, recover
from git_forge.recovery.questions import merge_targets, question_id
from git_forge.runner import runner_for
from git_forge.words import counted
from git_forge.workspace import locate

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterable

    from git_forge.reconcile.attribution import Plan
    from git_forge.reconcile.execution import Decision
    from git_forge.recovery.outcome import Gate
    from git_forge.recovery.procedure import PlanJSON
    from git_forge.recovery.questions import Question
    from git_forge.recovery.report import Report


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "The post-run recovery procedure: enumerate → cluster → consolidated "
        "questions → record → apply → prove → gate & exit, with tree "
        "reconciliation. Exit: 0 safe to resume, 2 refused input, 3 needs-human "
        "remains, 4 blocked remains, 6 tree left dirty, 10 failed read, 11 failed "
        "record, 12 failed apply, 13 ran but nothing moved.")
    add_location(parser)
    parser.add_argument("--answer", action="append", default=[], metavar="ID=TEXT",
                        help="answer a question by its cluster id (c003; c006 for one item) "
                             "or one item by its id (repeatable); a merge conflict takes "
                             "retry (on the new tip) or resolve (by hand)")
    parser.add_argument("--defer", action="append", default=[], metavar="ID",
                        help="defer a question (c003) or one item (repeatable)")
    parser.add_argument("--answers", metavar="FILE",
                        help="a YAML or JSON mapping of id to answer text, defer or cancel "
                             "(retry or resolve for a merge conflict)")
    parser.add_argument("--merge", action="append", default=[], metavar="C1,C2",
                        help="treat these clusters (or the clusters of these items) as one "
                             "question (repeatable; never splits)")
    parser.add_argument("--plan", action="store_true",
                        help="print the questions and write nothing (for an agent host)")
    parser.add_argument("--non-interactive", action="store_true",
                        help="never ask, even on a terminal: unanswered questions are deferred")
    parser.add_argument("--yes", action="store_true",
                        help="record each answer typed at a prompt without showing it back "
                             "for confirmation (as recover.confirmAnswers: false); a discard "
                             "is still confirmed")
    parser.add_argument("--no-commit", action="store_true",
                        help="do not commit recover's own backlog change")
    parser.add_argument("--actor", metavar="LABEL",
                        help="recordedBy/appliedBy label (default git-forge@<host>)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=run)


MERGE_HELP = """\
Questions whose items are blocked on the same cause can be asked as one: type their
ids (question or item ids, separated by commas or spaces) and the one answer you give
then goes to every item of them. Merge only questions that really share a cause — each
of their items gets the same answer. A merge conflict is always a question of its own.
  undo    split the last merge again
  Enter   go on to the questions as they are listed"""

DECISION_HELP = """\
Type your decision for the items this question names, then Enter; a paste of several
lines is one answer. {recorded} Never type a secret: say where it is ("use the key in $VAR").
  Enter or defer   decide nothing now: the question is asked again next time
  cancel           stop asking: this and every later question is deferred
  ? or help        this help"""

#: DECISION_HELP's word on recording, with confirmation on and off.
RECORDED_CONFIRMED = ("It is shown back with the items it applies to, and recorded only\n"
                      "once you confirm it.")
RECORDED_AT_ONCE = "It is recorded for the items this question names as you give it."

CONFLICT_HELP = """\
This item's work could not be integrated. Answer with one word, then Enter:
  retry            retry it on the new tip (its attempt is kept under refs/forge/retried/…)
  resolve          resolve it by hand in its worktree (the commands are above)
  Enter or defer   decide nothing now: the question is asked again next time
  cancel           stop asking: this and every later question is deferred
  ? or help        this help"""


class TerminalAsker:
    """The interactive dialogue: merges, one question at a time, the tree.

    Ctrl-C or end of input at any question is cancel-early (so is the answer
    ``cancel``): every question not yet answered is recorded as a deferral, the
    answers already given are applied, and the tree is left as it is — nothing more
    is asked. Being a decision (the answers confirmed stand), the pass then exits
    with its outcome (3 while a question is deferred), not the 130 of an
    interrupted command: README and docs/exit-codes.md say so. Each answer is shown
    back with the items it applies to and recorded only once confirmed (``confirm``:
    off with ``--yes`` or ``recover.confirmAnswers: false``); ``?`` or ``help`` at a
    prompt shows what it takes."""

    def __init__(self, *, confirm: bool = True) -> None:
        self.cancelled = False
        #: The operator closed the input (Ctrl-D): no prompt can be answered any more.
        self.input_closed = False
        self.confirm = confirm

    def _stopped(self, stop: KeyboardInterrupt) -> None:
        self.input_closed = self.input_closed or isinstance(stop, InputClosed)

    def merges(self, questions: list[Question]) -> list[list[str]]:
        try:
            return self._merges(questions)
        except KeyboardInterrupt as stop:
            self._stopped(stop)
            print("\ncancelled: every question is recorded as deferred")
            self.cancelled = True
            return []

    def _merges(self, questions: list[Question]) -> list[list[str]]:
        """The questions first, then merges until Enter: a merge is shown and can be
        undone; a wrong entry, or one that cannot merge (a merge conflict), is
        explained and asked again."""
        alone = {q.item_ids[0] for q in questions if q.conflict is not None}
        if len(questions) - len(alone) < 2:
            return []  # nothing that could be merged: no prompt
        reasons = {item_id: reason for q in questions
                   for item_id, reason in zip(q.item_ids, q.reasons, strict=True)}
        groups = [list(question.item_ids) for question in questions]
        merged: list[list[str]] = []
        before: list[list[list[str]]] = []  # the groups before each merge, for undo
        _list_questions(groups, reasons, alone)
        while True:
            line = ask.line("Merge questions that share a cause? (their ids; 'undo': split "
                            "the last merge; ?: help; Enter: go on) " if merged else
                            "Merge questions that share a cause? (their ids; ?: help; "
                            "Enter: ask each on its own) ", "the ids")
            if not line:
                return merged
            if line.lower() in ("?", "help"):
                print(MERGE_HELP)
                continue
            if line.lower() == "undo":
                if not merged:
                    print(paint("Nothing to undo: no questions are merged.", "yellow"))
                    continue
                groups = before.pop()
                merged.pop()
                print("Merge undone.")
                _list_questions(groups, reasons, alone)
                continue
            entries = [entry for entry in re.split(r"[\s,]+", line) if entry]
            try:
                picked = merge_targets(entries, groups, alone)
            except UsageError as problem:
                print(paint(f"Not merged: {problem.message}.", "yellow"))
                continue
            union = sorted((i for index in picked for i in groups[index]), key=id_key)
            before.append(groups)
            merged.append([groups[index][0] for index in picked])
            groups = [g for index, g in enumerate(groups) if index not in picked] + [union]
            groups.sort(key=lambda group: id_key(group[0]))
            print(f"Merged into one question: {question_id(union)} (items "
                  f"{', '.join(union)}); undo splits it again.")
            _list_questions(groups, reasons, alone)

    def ask(self, questions: list[Question]) -> list[Collected]:
        if self.cancelled:
            return [Collected(q, q.item_ids, CANCEL) for q in questions]
        collected: list[Collected] = []
        for index, question in enumerate(questions):
            try:
                print()
                print(paint(f"Question {index + 1} of {len(questions)} ({question.id})", "bold"))
                print(question.text)
                choice = self._decision(question)
            except KeyboardInterrupt as stop:
                self._stopped(stop)
                print("\ncancelled: this and the remaining questions are recorded as deferred")
                choice = CANCEL
            collected.append(Collected(question, question.item_ids, choice))
            if choice.kind == "cancel":
                collected += [Collected(q, q.item_ids, CANCEL) for q in questions[index + 1:]]
                self.cancelled = True
                break
        return collected

    def _decision(self, question: Question) -> Choice:
        """One question's choice: asked until it is one (help, a refusal and an answer
        not confirmed ask again)."""
        prompt = ("Your decision (retry / resolve; Enter: defer; 'cancel': cancel the run "
                  "early; ?: help) > " if question.conflict else
                  "Your decision (Enter: defer; 'cancel': cancel the run early; ?: help) > ")
        while True:
            reply = ask.text(prompt)
            word = reply.lower()
            if word in ("?", "help"):
                print(CONFLICT_HELP if question.conflict else DECISION_HELP.format(
                    recorded=RECORDED_CONFIRMED if self.confirm else RECORDED_AT_ONCE))
                continue
            if reply == "" or word == "defer":
                return DEFER
            if word == "cancel":
                return CANCEL
            choice = Choice("answer", reply)
            if question.conflict is not None:
                try:
                    choice = conflict_choice(question, choice, question.item_ids)
                except UsageError as problem:
                    print(paint(problem.message[0].upper() + problem.message[1:] + ".",
                                "yellow"))
                    continue
            else:
                refusal = credential_refusal(reply, "that answer")
                if refusal:
                    print(paint(refusal[0].upper() + refusal[1:] + ".", "red"))
                    continue
            if not self.confirm or _confirmed(question, choice):
                return choice

    def tree(self, plan: Plan) -> dict[str, Decision]:
        print()
        print("\n".join(render_plan(plan)))
        if self.cancelled:  # the run was cancelled early: nothing more is asked
            print("cancelled: the tree is left as it is")
            return {}
        try:
            return ask_decisions(plan, commit_recovery=True)
        except KeyboardInterrupt as stop:
            self._stopped(stop)
            print("\ncancelled: the tree is left as it is")
            return {}


def _list_questions(groups: list[list[str]], reasons: dict[str, str],
                    alone: set[str]) -> None:
    """The questions as they stand, each with its items' reasons: what a merge is
    judged on."""
    print(paint(f"{counted(len(groups), 'question')} from the blocked items:", "bold"))
    for group in groups:
        noun = "items" if len(group) > 1 else "item"
        own = " — a merge conflict, asked on its own" if group[0] in alone else ""
        print(f"  {question_id(group)}: {noun} {', '.join(group)}{own}")
        for item_id in group:
            reason = (reasons.get(item_id) or "").removesuffix(RECOVER_ANSWERS)
            print(f"    {item_id}: {reason or '(no reason given)'}")


def _confirmed(question: Question, choice: Choice) -> bool:
    """The choice shown back with the items it applies to, and the operator's yes."""
    items = question.item_ids
    noun = "items" if len(items) > 1 else "item"
    words = {"retry": "retry on the new tip", "resolve": "resolve by hand"}
    what = words.get(choice.kind) or choice.text or ""
    print(f"Your decision for {question.id}, to be recorded for {noun} {', '.join(items)}:")
    print("\n".join(f"  | {line}" for line in what.split("\n")))
    if ask.confirm("Record it?", "y records it, for the items above; n or Enter does not, "
                   "and asks for your decision again"):
        return True
    print("Not recorded: give your decision again (Enter: defer).")
    return False


def _choices(args: Args) -> dict[str, Choice]:
    from_file = answers.load_file(Path(args.answers)) if args.answers else {}
    return answers.with_flags(from_file, answers.parse_flags(args.answer, args.defer))


def _merges(args: Args) -> list[list[str]]:
    """Each ``--merge C1,C2``: the clusters it makes one question of (two or more)."""
    merges = [[part.strip() for part in spec.split(",") if part.strip()] for spec in args.merge]
    for spec, names in zip(args.merge, merges, strict=True):
        if len(names) < 2:
            raise UsageError(f"--merge takes two or more cluster or item ids, C1,C2 "
                             f"(got {spec!r})")
    return merges


def render_plan_text(document: PlanJSON) -> list[str]:
    lines = []
    for question in document["questions"]:
        lines += [paint(f"{question['id']} ({question['kind']})", "bold"), question["text"], ""]
    if document["reentry"]:
        lines.append("Answered earlier, applied without asking: " + ", ".join(document["reentry"]))
    if not lines:
        lines.append("Nothing to ask.")
    return lines


def render_report(report: Report) -> list[str]:
    """The human report: what each step did, with its source, then NEXT-STEPS."""
    lines: list[str] = []
    if report.failure:
        title = "failed"
    else:
        assert report.outcome is not None, "a pass that did not fail reached step 7"
        title = report.outcome.name
    lines.append(paint(f"Recovery: {title}", "bold"))
    lines.append(f"  sources: runner list ({report.runner}), decision record "
                 f"{report.record_path}, topology of the runner's list, git status")
    if report.nothing_to_recover:
        lines.append("  nothing to recover: no unapplied decision and no blocked item")
    for entry in report.recorded:
        what = (f"answer {entry['answer']!r}" if entry["answer"] is not None else "deferred")
        if entry.get("choice") == "retry":
            what = "retry on the new tip"
        elif entry.get("choice") == "resolve":
            what = "resolve by hand (deferred until it lands)"
        cluster = f" (cluster {entry['clusterId']})" if entry.get("clusterId") else ""
        lines.append(f"  recorded  {entry['itemId']}: {what}{cluster}")
    for item_id in report.reentry:
        lines.append(f"  re-entry  {item_id}: answered earlier, applied now without asking")
    for item_id in report.settled:
        lines.append(f"  settled   {item_id}: the runner already holds the recorded answer; "
                     "its decision is stamped applied now")
    for row in report.stale:
        if row.get("asks"):
            lines.append(f"  skipped   {row['id']}: its recorded answer was not applied — it "
                         "answered an earlier question, and the item asks another one now")
            continue
        lines.append(f"  skipped   {row['id']}: its recorded answer was not applied — the item "
                     f"is {row['status']}, no longer blocked")
    for applied in report.applied:
        how = ("answer threaded into the next prompt" if applied.threaded else
               "unblocked — the answer was NOT threaded into the next prompt"
               + ("" if applied.needs_human else
                  " (the runner contract unblocks a plain blocked or deferred item; "
                  "the answer stays in the decision record)"))
        lines.append(f"  applied   {applied.item_id}: {how}")
    for record in report.retried:
        kept = (f"its attempt is kept at {record.retried_ref} (git show {record.retried_ref})"
                if record.retried_ref else "its branch was gone already")
        lines.append(f"  retried   {record.item_id}: {kept}; its worktree and branch are "
                     "removed, the next run starts it afresh from the tip")
    for item_id, commands in report.resolve_by_hand:
        lines.append(f"  by hand   {item_id}: resolve it in its worktree, then land it:")
        lines += [f"            {command}" for command in commands]
    if report.degraded:
        lines.append(paint(f"  degraded: {report.degraded['reason']}; answers were NOT threaded "
                           f"into the next prompt (they stay in the decision record)", "yellow"))
        if report.degraded.get("installHint"):
            lines.append(f"  to thread answers: {report.degraded['installHint']}")
    if report.movers or report.non_movers:
        moved = ", ".join(f"{r['id']} {r['status']}" for r in report.movers) or "none"
        stuck = ", ".join(f"{r['id']} {r['status']}" for r in report.non_movers) or "none"
        lines.append(f"  proof (re-read of the runner's list): moved: {moved}; "
                     f"did not move: {stuck}")
    tree = report.tree
    for group in tree["groups"]:
        paths = ", ".join(p["path"] for p in group["paths"])
        where = f" in worktree {group['worktree']}" if group.get("worktree") else ""
        what = ("this recovery's own backlog change" if group["kind"] == "recovery"
                else f"candidate{where}")
        lines.append(f"  tree      {group['id']} ({what}): {paths}")
    for action in tree["actions"]:
        ref = f" → {action['ref']}" if action.get("ref") else ""
        lines.append(f"  tree      {action['group']}: {action['action']}{ref}")
        if action["action"] == "discard":
            lines.append(f"            restore: git forge reconcile --restore {action['ref']}")
    for stash in tree["stashes"]:
        lines.append(f"  abandoned {stash['ref']} (item {stash['itemId']}): {stash['message']}"
                     f" — inspect: {stash['hints'][0]}; restore: {stash['hints'][1]}")
    by_hand = {item_id for item_id, _ in report.resolve_by_hand}  # its commands are above
    for branch in tree.get("branches", []):
        if branch["itemId"] in by_hand:
            continue
        lines.append(f"  branch    {branch['branch'] or branch['worktree']} (item "
                     f"{branch['itemId']}): commits not on the branch — "
                     + "; ".join(branch["hints"]))
    lines += [f"  note      {note}" for note in report.tree_notes]
    if tree.get("queuedBacklog"):
        lines.append(f"  note      {queued_text(tree['queuedBacklog'])}")
    if report.failure:
        failure = report.failure
        lines.append(paint(f"  FAILED at step {failure.step.number} ({failure.kind}):", "red"))
        lines.append(f"    {failure.error}")
        if failure.source is not None:
            lines.append(f"    {failure.source} must be fixed first (running recover again "
                         f"fails the same way): git diff -- {failure.source} shows the edit, "
                         f"git checkout -- {failure.source} restores the committed file")
    elif report.gate is not None:
        lines += render_gate(report.gate)
        outcome = report.outcome
        assert outcome is not None, "step 7's gate comes with its outcome"
        detail = f" ({outcome.cause})" if outcome.cause else ""
        if report.waiting:
            detail += f"; nothing is selectable, waiting on {waiting_text(report.waiting)}"
        lines.append(f"  outcome: {outcome.name}{detail}")
        deferred = [entry["itemId"] for entry in report.recorded
                    if entry["answer"] is None and not entry.get("choice")]
        if outcome.name == "resolved" and deferred:
            # Deferred items are not this pass's affected items (recovery spec): the
            # pass is resolved for what it applied; these wait for the next one.
            lines.append(f"  still open: {', '.join(deferred)} (deferred: the run leaves "
                         f"{'it' if len(deferred) == 1 else 'them'} blocked, and git forge "
                         "recover asks again)")
    lines += ["", "NEXT-STEPS", f"  {report.next}"]
    return lines


def render_gate(gate: Gate) -> list[str]:
    """The checks behind the outcome ``resolved``, in words, each with its source."""

    def check(what: str, failing: Iterable[str] | bool, source: str) -> str:
        named = ", ".join(failing) if not isinstance(failing, bool) else ""
        verdict = f"no — {named}" if named else "no" if failing is True else "yes"
        return f"            {what}: {verdict} ({source})"

    return ["  checks    for the outcome resolved:",
            f"            answered in this pass: {', '.join(gate.affected) or 'none'}"
            + ("" if gate.affected else " (resolved needs one)"),
            check("every answer applied", gate.unapplied_affected, "the decision record"),
            check("every answered item unblocked", not gate.all_moved,
                  "the backlog, read again"),
            check("no stranded work in the working tree", not gate.porcelain_clean,
                  "git status"),
            check("no stranded work in items' worktrees or branches",
                  [f"item {item}" for item in gate.items_left], "git worktree list")]


def run(args: Args) -> int:
    workspace = locate(args.path, args.backlog)
    if not args.plan:  # recovery runs after a run ends: the tree is the live loop's
        refuse_if_live(workspace.state_dir, workspace.root)
    options = RecoverOptions(choices=_choices(args), merges=_merges(args),
                             commit_recovery=not args.no_commit, actor=args.actor)
    runner = runner_for(workspace)
    if args.plan:
        document = plan(workspace, runner, options)
        if args.json:
            emit_json(document)
        else:
            message = live_note(workspace.state_dir)
            if message is not None:
                note(message)
            print("\n".join(render_plan_text(document)))
        return 0
    interactive = (not args.non_interactive and not args.json and not options.choices
                   and ask.interactive())
    confirm = not args.yes and bool(workspace.config["recover.confirmAnswers"])
    asker = TerminalAsker(confirm=confirm) if interactive else None
    report = recover(workspace, runner, options, asker)
    untold = not (interactive or args.non_interactive or args.json or options.choices)
    if untold and any(entry["answer"] is None for entry in report.recorded):
        # asked for a dialogue, without a terminal at both ends: say why nothing was
        note("not a terminal: nothing was asked, and every question is deferred (answer "
             "with --answers FILE or --answer ID=TEXT; --plan lists the questions)")
    if args.json:
        emit_json(report.to_json())
    else:
        print("\n".join(render_report(report)))
    return report.exit_code
