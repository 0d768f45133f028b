"""What a recovery pass did and found: one frozen value per step, and the report
assembled from them.

A step that ran returns its result; a step that failed contributes what it did
before failing (a batch half applied, the movers of a failed proof) and the
failure itself. The report never holds a claim no step made: it derives every
field it prints from those values, so nothing can be reported as recorded,
applied or moved past a failed step (recovery.md, the failure rule).
"""

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict, TypeVar

from git_forge.backlog.item import Item
from git_forge.backlog.topology import ClusterJSON, WaitingJSON, id_key
from git_forge.decisions import DecisionJSON
from git_forge.reconcile.conflicts import ConflictRecord, RetriedJSON, resolve_start
from git_forge.reconcile.service import ReconcileJSON
from git_forge.recovery.outcome import (
    FAILURE_EXIT_CODES,
    RECOVER,
    Gate,
    GateJSON,
    Outcome,
    exit_code,
    next_command,
)
from git_forge.recovery.questions import Question


class Step(enum.Enum):
    """The seven steps of recovery.md, numbered as the spec and the report number them."""

    ENUMERATE = 1
    CLUSTER = 2
    QUESTIONS = 3
    RECORD = 4
    APPLY = 5
    PROVE = 6
    GATE = 7

    @property
    def number(self) -> int:
        return self.value

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def wire(self) -> str:
        """How ``--json`` names the step: ``"5 (apply)"``."""
        return f"{self.value} ({self.label})"


class FailureKind(enum.StrEnum):
    """What failed: each kind has its own exit code (``outcome.FAILURE_EXIT_CODES``)."""

    READ = "failed-read"
    RECORD = "failed-record"
    APPLY = "failed-apply"
    NOTHING_MOVED = "nothing-moved"

    @property
    def exit_code(self) -> int:
        return FAILURE_EXIT_CODES[self.value]


class FailureJSON(TypedDict):
    kind: str
    step: str
    error: str


class RecordedJSON(TypedDict):
    """An entry step 4 recorded, as the report lists it."""

    itemId: str
    answer: str | None
    deferred: bool
    clusterId: NotRequired[str]
    #: A merge conflict's choice: ``retry`` or ``resolve``.
    choice: NotRequired[str]


class AppliedJSON(TypedDict):
    itemId: str
    via: str
    threaded: bool


class DegradedJSON(TypedDict):
    reason: str
    installHint: Any
    notThreaded: list[str]


class ProofJSON(TypedDict):
    movers: list[dict[str, str]]
    nonMovers: list[dict[str, str]]


class ResolveByHandJSON(TypedDict):
    itemId: str
    commands: list[str]


class RecoverJSON(TypedDict):
    """The ``recover --json`` document."""

    outcome: str | None
    exitCode: int
    affected: list[str]
    recorded: list[RecordedJSON]
    applied: list[AppliedJSON]
    degraded: DegradedJSON | None
    proof: ProofJSON
    gate: GateJSON | None
    tree: ReconcileJSON
    next: str
    failure: FailureJSON | None
    reentry: list[str]
    settled: list[str]
    stale: list[dict[str, str]]
    waitingOn: list[WaitingJSON]
    retried: list[RetriedJSON]
    resolveByHand: list[ResolveByHandJSON]


@dataclass(frozen=True)
class Failure:
    """The step that stopped the pass, and its source's error, verbatim. ``source``:
    the project file that could not be read (a hand-edited backlog.json), which must
    be fixed before recover can read it — running recover again fails the same way."""

    kind: FailureKind
    step: Step
    error: str
    source: str | None = None

    def to_json(self) -> FailureJSON:
        return {"kind": self.kind.value, "step": self.step.wire, "error": self.error}


@dataclass(frozen=True)
class Enumerated:
    """Step 1: the runner's item list and the record's unapplied entries."""

    items: list[Item]
    unapplied: list[DecisionJSON]

    @property
    def blocked(self) -> list[Item]:
        return [item for item in self.items if item.status == "blocked"]

    @property
    def nothing_to_recover(self) -> bool:
        """No unapplied decision and no blocked item: steps 2 to 6 are skipped."""
        return not self.unapplied and not self.blocked


@dataclass(frozen=True)
class Clustered:
    """Step 2: the clusters to ask about, and the unapplied answers sorted out first:
    re-entry (applied without asking), settled (the runner already holds it) and
    stale (the item is no longer blocked)."""

    clusters: list[ClusterJSON]
    reentry: dict[str, DecisionJSON]
    settled: tuple[str, ...] = ()
    stale: tuple[dict[str, str], ...] = ()
    #: The blocked items whose merge conflict is open (each its own question).
    conflicts: dict[str, ConflictRecord] = field(default_factory=dict)

    @property
    def reentry_ids(self) -> list[str]:
        return sorted(self.reentry, key=id_key)


@dataclass(frozen=True)
class Questions:
    """Step 3: the consolidated questions, after any merge the host asked for."""

    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Recorded:
    """Step 4: the entries recorded (as the report lists them) and, by item, the
    answer entries as written — exactly what step 5 may stamp."""

    rows: tuple[RecordedJSON, ...]
    answers: dict[str, DecisionJSON]
    #: A merge conflict's choice by item (``retry``, ``resolve``), also when a
    #: deferral that repeats the last one added no entry.
    chosen: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Applied:
    """One item the runner took: answered (threaded) or unblocked."""

    item_id: str
    needs_human: bool
    threaded: bool

    @property
    def via(self) -> str:
        """``answer`` when the runner threaded the answer, else ``unblock``."""
        return "answer" if self.threaded else "unblock"

    def to_json(self) -> AppliedJSON:
        return {"itemId": self.item_id, "via": self.via, "threaded": self.threaded}


@dataclass(frozen=True)
class Degraded:
    """Why answers were not threaded into the next prompt, and how to get that."""

    reason: str
    install_hint: Any
    not_threaded: tuple[str, ...]

    def to_json(self) -> DegradedJSON:
        return {"reason": self.reason, "installHint": self.install_hint,
                "notThreaded": list(self.not_threaded)}


@dataclass(frozen=True)
class Application:
    """Step 5: the items the runner was asked to change, those it took (applied and
    stamped, in order), and the degraded path if taken."""

    requested: tuple[str, ...] = ()
    applied: tuple[Applied, ...] = ()
    degraded: Degraded | None = None
    #: Conflicts retried on the new tip before their answer was applied.
    retried: tuple[ConflictRecord, ...] = ()
    #: Answers not applied because their item stopped being blocked while the pass
    #: asked (answered from another terminal, say): as step 2's stale ones.
    stale: tuple[dict[str, str], ...] = ()
    #: The runner's list as read to find them (``None``: not read): newer than step 1's.
    seen: list[Item] | None = None


@dataclass(frozen=True)
class Proof:
    """Step 6: the re-read list, and which applied items moved on it."""

    items: list[Item]
    movers: tuple[dict[str, str], ...]
    non_movers: tuple[dict[str, str], ...]


@dataclass(frozen=True)
class TreeResult:
    """Step 7, first: the tree reconciliation document (``reconcile --json``)."""

    document: ReconcileJSON
    notes: tuple[str, ...]
    #: No stranded work left in the working tree (what ``git status`` lists, less
    #: the runner's own files and backlog.json's queued change).
    porcelain_clean: bool
    #: The items whose worktree or branch still holds stranded work.
    items_left: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        """Nothing stranded anywhere: what the next launch needs."""
        return self.porcelain_clean and not self.items_left


@dataclass(frozen=True)
class Gated:
    """Step 7: the gate for ``resolved``, the outcome, and what a starved backlog waits on."""

    gate: Gate
    outcome: Outcome
    waiting: list[WaitingJSON]


StepResult = (Enumerated | Clustered | Questions | Recorded | Application | Proof
              | TreeResult | Gated)

_R = TypeVar("_R", Enumerated, Clustered, Questions, Recorded, Application, Proof,
             TreeResult, Gated)


def _find(results: Iterable[StepResult], kind: type[_R]) -> _R | None:
    return next((result for result in results if isinstance(result, kind)), None)


@dataclass(frozen=True)
class Report:
    """Everything a pass did and found, with the source of each claim."""

    runner: str
    record_path: str
    enumerated: Enumerated | None = None
    clustered: Clustered | None = None
    consolidated: Questions | None = None
    recording: Recorded | None = None
    application: Application | None = None
    proof: Proof | None = None
    reconciliation: TreeResult | None = None
    gated: Gated | None = None
    failure: Failure | None = None

    @classmethod
    def assemble(cls, runner: str, record_path: str, results: Iterable[StepResult],
                 failure: Failure | None = None) -> "Report":
        """The report of the steps that produced ``results`` (a failed step's partial
        result among them), stopped by ``failure`` if one did."""
        done = tuple(results)
        return cls(runner, record_path, enumerated=_find(done, Enumerated),
                   clustered=_find(done, Clustered), consolidated=_find(done, Questions),
                   recording=_find(done, Recorded), application=_find(done, Application),
                   proof=_find(done, Proof), reconciliation=_find(done, TreeResult),
                   gated=_find(done, Gated), failure=failure)

    @property
    def nothing_to_recover(self) -> bool:
        return self.enumerated is not None and self.enumerated.nothing_to_recover

    @property
    def questions(self) -> list[Question]:
        return list(self.consolidated.questions) if self.consolidated else []

    @property
    def reentry(self) -> list[str]:
        return self.clustered.reentry_ids if self.clustered else []

    @property
    def settled(self) -> list[str]:
        return list(self.clustered.settled) if self.clustered else []

    @property
    def stale(self) -> list[dict[str, str]]:
        return ([*self.clustered.stale] if self.clustered else []) + (
            [*self.application.stale] if self.application else [])

    @property
    def recorded(self) -> list[RecordedJSON]:
        return list(self.recording.rows) if self.recording else []

    @property
    def applied(self) -> list[Applied]:
        return list(self.application.applied) if self.application else []

    @property
    def retried(self) -> list[ConflictRecord]:
        return list(self.application.retried) if self.application else []

    @property
    def resolve_by_hand(self) -> list[tuple[str, tuple[str, ...]]]:
        """The conflicts the operator chose to resolve by hand, with the commands."""
        return [(question.item_ids[0], question.resolve) for question in self._by_hand]

    @property
    def _by_hand(self) -> list[Question]:
        """This pass's "resolve by hand" answers, and those of an earlier pass that this
        one did not answer otherwise (deferred, or not asked: still the next step)."""
        chosen = dict(self.recording.chosen) if self.recording else {}
        return [question for question in self.questions if question.conflict is not None
                and chosen.get(question.item_ids[0],
                               "resolve" if question.conflict.resolving else None) == "resolve"]

    @property
    def affected(self) -> list[str]:
        return [applied.item_id for applied in self.applied]

    @property
    def degraded(self) -> DegradedJSON | None:
        if self.application is None or self.application.degraded is None:
            return None
        return self.application.degraded.to_json()

    @property
    def movers(self) -> list[dict[str, str]]:
        return list(self.proof.movers) if self.proof else []

    @property
    def non_movers(self) -> list[dict[str, str]]:
        return list(self.proof.non_movers) if self.proof else []

    @property
    def tree(self) -> ReconcileJSON:
        if self.reconciliation is None:
            return {"groups": [], "stashes": [], "actions": []}
        return self.reconciliation.document

    @property
    def tree_notes(self) -> list[str]:
        return list(self.reconciliation.notes) if self.reconciliation else []

    @property
    def tree_clean(self) -> bool:
        return self.reconciliation.clean if self.reconciliation else True

    @property
    def gate(self) -> Gate | None:
        return self.gated.gate if self.gated else None

    @property
    def outcome(self) -> Outcome | None:
        return self.gated.outcome if self.gated else None

    @property
    def waiting(self) -> list[WaitingJSON]:
        """What the backlog waits on when nothing is selectable (``waiting_on``)."""
        return self.gated.waiting if self.gated else []

    @property
    def exit_code(self) -> int:
        if self.failure is not None:
            return self.failure.kind.exit_code
        assert self.outcome is not None
        return exit_code(self.outcome, self.tree_clean)

    @property
    def next(self) -> str:
        """The one command to run next. After "resolve by hand" it is the first of
        that resolution's commands (the rebase in the item's worktree), not
        ``recover``: the item stays blocked until its branch lands, and running
        recover again would only ask about it again."""
        if self.failure is not None and self.failure.source is not None:
            return f"git diff -- {self.failure.source}"
        if self.failure is not None or self.outcome is None:
            return RECOVER
        by_hand = [q.conflict for q in self._by_hand if q.conflict is not None]
        if by_hand:
            record = by_hand[0]
            for tree in self.tree.get("branches", []):
                if tree["itemId"] == record.item_id and tree.get("next"):
                    return str(tree["next"])  # a rebase begun, or done (``next_step``)
            return resolve_start(record)
        return next_command(self.outcome, self.tree_clean)

    def to_json(self) -> RecoverJSON:
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
            "retried": [{"itemId": r.item_id, "ref": r.retried_ref, "paths": list(r.paths)}
                        for r in self.retried],
            "resolveByHand": [{"itemId": item, "commands": list(commands)}
                              for item, commands in self.resolve_by_hand],
        }
