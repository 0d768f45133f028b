"""Recovery's steps one at a time, in process, on a real repository and the embedded
runner: a source that fails between two steps stops the pass at the step that read
it, and the report shows what the steps before it did — and nothing past it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import blocked_backlog, init_repository
from templates import Templates

from git_forge.recovery.answers import Choice
from git_forge.recovery.procedure import recover
from git_forge.recovery.report import FailureKind, Report, Step
from git_forge.recovery.steps import (
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
from git_forge.runner import runner_for
from git_forge.workspace import locate


def build_two_blocked(root: Path) -> None:
    """A committed backlog whose items 001 and 002 each wait on a different human."""
    init_repository(root)
    blocked_backlog(root, {"001": "Which colour for the logo?",
                           "002": "Which port should staging use?"})


@pytest.fixture
def context(templates: Templates, tmp_path: Path) -> Context:
    """A pass's context answering 001 and deferring 002, on a copy of the backlog."""
    root = templates.copy("two-blocked", build_two_blocked, tmp_path / "repo")
    workspace = locate(root)
    options = RecoverOptions(choices={"001": Choice("answer", "red")})
    return Context.open(workspace, runner_for(workspace), options)


def test_the_steps_keep_the_wire_text_of_the_report() -> None:
    assert [step.wire for step in Step] == [
        "1 (enumerate)", "2 (cluster)", "3 (questions)", "4 (record)", "5 (apply)",
        "6 (prove)", "7 (gate)"]
    assert [FailureKind(kind).exit_code for kind in
            ("failed-read", "failed-record", "failed-apply", "nothing-moved")] == [10, 11, 12, 13]


def test_a_stamp_that_fails_after_the_runner_took_the_answer_stops_at_step_5(
    context: Context
) -> None:
    enumerated = enumerate_items(context)
    clustered = cluster(context, enumerated)
    recorded = record(context, enumerated, consolidate(context, enumerated, clustered))
    assert [row["itemId"] for row in recorded.rows] == ["001", "002"]
    lock = context.rec.path.with_name(context.rec.path.name + ".lock")
    lock.unlink()
    lock.mkdir()  # the record's lock cannot be taken: the stamp fails
    with pytest.raises(RecoveryFailed) as caught:
        apply(context, enumerated, clustered, recorded)
    failed = caught.value
    assert (failed.step, failed.kind) == (Step.APPLY, FailureKind.RECORD)
    assert failed.message.startswith("item 001 was applied but its decision could not be "
                                     "stamped: cannot lock ")
    assert failed.partial is not None and failed.partial.applied == ()
    report = Report.assemble("embedded", context.record_path,
                             [enumerated, clustered, recorded, failed.partial], failed.failure)
    document = report.to_json()
    assert document["failure"] == {"kind": "failed-record", "step": "5 (apply)",
                                   "error": failed.message}
    assert (document["outcome"], document["exitCode"], document["next"]) == (
        "failed", 11, "git forge recover")
    assert document["applied"] == [] and document["affected"] == []
    assert document["proof"] == {"movers": [], "nonMovers": []} and document["gate"] is None
    assert [row["itemId"] for row in document["recorded"]] == ["001", "002"]
    # The runner holds the answer unstamped: the next pass settles it, asking nothing.
    lock.rmdir()
    again = recover(context.workspace, context.runner, RecoverOptions())
    assert again.settled == ["001"] and again.affected == []
    assert json.loads(context.rec.path.read_text())["decisions"][0]["appliedAt"] is not None


def test_a_record_unreadable_at_the_gate_fails_step_7_after_the_tree_was_reconciled(
    context: Context
) -> None:
    enumerated = enumerate_items(context)
    before = backlog_before(context, enumerated)
    clustered = cluster(context, enumerated)
    recorded = record(context, enumerated, consolidate(context, enumerated, clustered))
    application = apply(context, enumerated, clustered, recorded)
    proof = prove(context, application)
    assert [row["id"] for row in proof.movers] == ["001"] and proof.non_movers == ()
    tree = reconcile_tree(context, application, before)
    assert tree.clean and [a["group"] for a in tree.document["actions"]] == ["recovery"]
    context.rec.path.write_text("{corrupt")
    with pytest.raises(RecoveryFailed) as caught:
        gate(context, enumerated, application, proof, tree)
    failed = caught.value
    assert (failed.step, failed.kind, failed.partial) == (Step.GATE, FailureKind.READ, None)
    report = Report.assemble("embedded", context.record_path,
                             [enumerated, clustered, recorded, application, proof, tree],
                             failed.failure)
    document = report.to_json()
    assert document["failure"]["step"] == "7 (gate)" and document["exitCode"] == 10
    assert document["affected"] == ["001"] and document["gate"] is None
    assert document["tree"] == tree.document  # what step 7 did before its read failed
    assert document["waitingOn"] == [] and report.outcome is None
    assert context.rec.path.read_text() == "{corrupt"
