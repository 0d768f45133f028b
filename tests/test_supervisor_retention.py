"""Retention: restore reads only what may still need it; prune keeps the last runs and
everything not settled, lost or marked to keep, and removes the rest whole."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import run_forge, snapshot

from git_forge.supervisor.config import SupervisorConfig
from git_forge.supervisor.handles import mint_handle
from git_forge.supervisor.manifest import Manifest, ManifestStore
from git_forge.supervisor.process import PreparedProcess
from git_forge.supervisor.retention import PruneReport, prune
from git_forge.supervisor.supervisor import Supervisor
from git_forge.supervisor.view import ProcView

FAST = {"grace_seconds": 0.3, "drain_timeout_seconds": 0.3, "flush_interval_seconds": 0.1}


def prune_from_outside(root: Path, keep_runs: int, *, dry_run: bool = False) -> PruneReport:
    """A prune as ``git forge proc prune`` runs it, from a process of its own."""
    store = ManifestStore(root)
    return prune(store, store.paths, keep_runs, dry_run=dry_run)


class CountingStore(ManifestStore):
    """A real store that also counts the manifests it loads."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.loads = 0

    def load(self, handle: str) -> Manifest:
        self.loads += 1
        return super().load(handle)


def runs(root: Path, sizes: dict[str, int], **config) -> dict[str, list[str]]:
    """Run ``sizes[run]`` processes per run, one run after another, as the loop does
    (restore at the start of each)."""
    made: dict[str, list[str]] = {}
    for run_id, count in sizes.items():
        with Supervisor(SupervisorConfig(**(FAST | config)), ManifestStore(root)) as supervisor:
            supervisor.restore()
            made[run_id] = [
                supervisor.wait(supervisor.start(
                    {"run_id": run_id}, {"item_id": f"{run_id}-{number}", "iteration": 1},
                    PreparedProcess(["echo", run_id], cwd="/")), timeout=30).handle
                for number in range(count)]
    return made


def files_of(root: Path, handle: str) -> list[str]:
    return sorted(name for name in os.listdir(root) if handle in name)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "proc"


def test_restore_reads_only_the_manifests_that_are_not_settled(root: Path) -> None:
    made = runs(root, {"run-1": 3, "run-2": 3})
    store = CountingStore(root)
    with Supervisor(SupervisorConfig(**FAST), store) as supervisor:
        report = supervisor.restore()  # settles run-2's (run-1's were settled by run-2's)
        assert store.loads == 3 and {m.handle for m in report.reopened} == set(made["run-2"])
        store.loads = 0
        report = supervisor.restore()
        assert store.loads == 0 and report.reopened == [] and report.errors == []
    settled = json.loads((root / "settled.json").read_text())
    assert {run["run_id"]: sorted(run["handles"]) for run in settled["runs"]} == {
        run_id: sorted(handles) for run_id, handles in made.items()}


def test_an_unreadable_settled_list_only_costs_a_full_read(root: Path) -> None:
    made = runs(root, {"run-1": 2, "run-2": 1})
    (root / "settled.json").write_bytes(b"{torn")
    store = CountingStore(root)
    with Supervisor(SupervisorConfig(**FAST), store) as supervisor:
        report = supervisor.restore()
    assert store.loads == 3 and report.errors == []
    assert len(json.loads((root / "settled.json").read_text())["runs"]) == 2
    assert sorted(m.handle for m in report.reopened) == sorted(made["run-1"] + made["run-2"])


def test_prune_keeps_the_last_runs_and_removes_older_ones_whole(root: Path) -> None:
    made = runs(root, {"run-1": 2, "run-2": 2, "run-3": 1, "run-4": 1})
    with Supervisor(SupervisorConfig(keep_runs=2, **FAST), ManifestStore(root)) as supervisor:
        supervisor.restore()
        report = supervisor.prune()
    assert report.errors == [] and report.kept == []
    assert sorted(m.handle for m in report.removed) == sorted(made["run-1"] + made["run-2"])
    for handle in made["run-1"] + made["run-2"]:
        assert files_of(root, handle) == []  # manifest, spool, lock files: all gone
    kept = made["run-3"] + made["run-4"]
    assert ManifestStore(root).scan() == sorted(kept)
    assert {run["run_id"] for run in json.loads((root / "settled.json").read_text())["runs"]} \
        == {"run-3", "run-4"}
    view = ProcView(root)
    assert all(view.read(handle, 0, 100)[1].data == b"run-3\n" for handle in made["run-3"])


def test_prune_keeps_what_is_not_settled_lost_or_marked(root: Path) -> None:
    made = runs(root, {"run-1": 3, "run-2": 1, "run-3": 1})
    store = ManifestStore(root)
    marked, unpublished, ordinary = made["run-1"]
    # a process a crashed run left running (its tree gone): restore makes it lost
    lost = mint_handle()
    document = store.load(ordinary).to_dict()
    document.update(handle=lost, state="running", result={"exit_code": None, "reason": None},
                    completion_published=0)
    document.pop("finished_at")
    (root / f"{lost}.manifest.json").write_text(json.dumps(document))
    # a finished process whose completion a crash left unpublished, not restored yet
    document = store.load(unpublished).to_dict()
    document["completion_published"] = 0
    settled = json.loads((root / "settled.json").read_text())
    for run in settled["runs"]:
        run["handles"] = [h for h in run["handles"] if h != unpublished]
    (root / "settled.json").write_text(json.dumps(settled))
    (root / f"{unpublished}.manifest.json").write_text(json.dumps(document))
    with Supervisor(SupervisorConfig(keep_runs=1, **FAST), store) as supervisor:
        supervisor.keep(marked)
    # from another terminal, before any restore: what a crash left is not settled
    report = prune_from_outside(root, 1)
    assert {m.handle for m in report.removed} == {ordinary, made["run-2"][0]}
    assert [m.handle for m in report.kept] == [marked]
    assert sorted(store.scan()) == sorted([marked, unpublished, lost, made["run-3"][0]])
    with Supervisor(SupervisorConfig(keep_runs=1, **FAST), store) as supervisor:
        assert [m.handle for m in supervisor.restore().reconciled] == [lost]
        report = supervisor.prune()  # republished by the restore: settled now
        assert [m.handle for m in report.removed] == [unpublished]
        assert {m.handle for m in report.kept} == {marked, lost}
        supervisor.keep(marked, False)
        assert [m.handle for m in supervisor.prune().removed] == [marked]
    assert sorted(store.scan()) == sorted([lost, made["run-3"][0]])


def test_a_dry_run_changes_nothing_and_says_what_would_go(root: Path) -> None:
    made = runs(root, {"run-1": 2, "run-2": 1})
    with Supervisor(SupervisorConfig(**FAST), ManifestStore(root)) as supervisor:
        supervisor.restore()
    before = snapshot(root)
    report = prune_from_outside(root, 1, dry_run=True)
    assert sorted(m.handle for m in report.removed) == sorted(made["run-1"])
    assert snapshot(root) == before


def test_a_prune_cut_short_leaves_no_half_process_and_the_next_one_finishes(root: Path) -> None:
    made = runs(root, {"run-1": 2, "run-2": 1})
    with Supervisor(SupervisorConfig(**FAST), ManifestStore(root)) as supervisor:
        supervisor.restore()
    cut = made["run-1"][0]
    (root / f"{cut}.manifest.json").unlink()  # a crash right after the manifest went
    manifests, errors = ProcView(root).manifests()
    assert cut not in {m.handle for m in manifests} and errors == []  # not listed at all
    prune_from_outside(root, 1)
    assert files_of(root, cut) == [] and files_of(root, made["run-1"][1]) == []
    assert ManifestStore(root).scan() == made["run-2"]


def test_a_live_supervisor_s_processes_are_never_pruned(root: Path) -> None:
    runs(root, {"run-1": 1})
    with Supervisor(SupervisorConfig(keep_runs=1, **FAST), ManifestStore(root)) as supervisor:
        supervisor.restore()
        live = supervisor.start({"run_id": "run-2"}, None,
                                PreparedProcess(["sleep", "30"], cwd="/"))
        # another terminal prunes meanwhile: the live run is the newest, and unsettled
        report = prune_from_outside(root, 1)
        assert report.removed == [] and ManifestStore(root).load(live).state == "running"
        supervisor.stop(live, "kill")


def test_proc_prune_from_the_command_line(git_repo: Path) -> None:
    root = git_repo / ".forge" / "proc"
    made = runs(root, {"run-1": 1, "run-2": 1, "run-3": 1})
    (git_repo / ".forge.yaml").write_text("supervisor:\n  keepRuns: 2\n")
    dry = run_forge("proc", "prune", "--dry-run", cwd=git_repo)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout == f"Would remove {made['run-1'][0]} (run run-1, item run-1-0)\n"
    as_json = json.loads(run_forge("proc", "prune", "-n", "--json", cwd=git_repo).stdout)
    assert [row["handle"] for row in as_json["removed"]] == made["run-1"]
    assert as_json["dry_run"] is True and as_json["errors"] == []
    done = run_forge("proc", "prune", cwd=git_repo)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")  # quiet, like git
    assert ManifestStore(root).scan() == sorted(made["run-2"] + made["run-3"])
    again = json.loads(run_forge("proc", "prune", "--json", cwd=git_repo).stdout)
    assert again["removed"] == []
    bad = run_forge("proc", "prune", "--keep", "3", cwd=git_repo)
    assert bad.returncode == 2 and ManifestStore(root).scan() == sorted(made["run-2"]
                                                                       + made["run-3"])


def test_restore_sweeps_what_a_writer_killed_mid_write_left(root: Path) -> None:
    made = runs(root, {"run-1": 1})
    stale = root / f".{made['run-1'][0]}.manifest.json.k1ll3d.tmp"
    stale.write_bytes(b"{half")
    request = root / f".{made['run-1'][0]}.stop.json.inflight.tmp"  # written without a lock
    request.write_bytes(b"{}")
    with Supervisor(SupervisorConfig(**FAST), ManifestStore(root)) as supervisor:
        supervisor.restore()
    assert not stale.exists() and request.exists()
