"""Benchmark: what a command costs before it does anything, and the small commands.

Every figure is the median wall time of ``--rounds`` fresh processes (default 15),
with the interpreter's own start-up (``python3 -c pass``) as the unit:

* ``git forge --version``;
* ``git forge status`` and ``backlog list --json`` on backlogs of 100, 1,000 and
  5,000 items (flat in backlog size is the goal for status, within 3x the
  interpreter) — answered from the state dir's cache after the first run, as every
  run but the first after a change to backlog.json is (and, once the file has gone
  unchanged for a few seconds, without reading it); at 5,000 items also with the
  cache removed before each run (the first run after a change);
* ``git forge status`` on 1,000 items after a ``loop run`` of 10 agents (its state,
  journal, receipts and processes' records are read too);
* ``git forge decision list --unapplied --json`` on a record of 10,000 entries,
  against a reference: a minimal Python script doing the same work (read the
  record, keep each item's latest entry, the unapplied ones, sorted as strings,
  print them) — the floor any Python implementation of the verb pays — and, with
  ``--feature-forge SCRIPT``, against feature-forge's own ``forge-session.py
  decision-list`` on the same record (the issue's bar: at most 0.5x it);
* ``git forge preflight`` on a clean and on a dirty 1,000-file repository, against
  ``git status --porcelain`` (goal: at most the interpreter plus 1.5x git status);
* ``git forge backlog add`` on a backlog of 100 items (one more each round), the
  small command that takes a lock (no goal: shown so that a lock's cost is seen).

git-forge runs from an installed copy, as ``pip install .`` lays it out (the package
in a fresh virtual environment's site-packages, the same launcher, the
development environment's dependencies reached through a ``.pth`` line), and the
unit is that environment's interpreter: a development install (``pip install -e``)
adds an import hook that costs ~60 ms at every start-up and is not what users run.
``--editable`` measures the development install instead.

Usage: ``python benchmarks/startup_bench.py [--rounds N] [--editable] [--feature-forge
SCRIPT]``. Goals: ``--version`` <= 2x the interpreter; ``decision list`` <= 0.5x
feature-forge's own script (without ``--feature-forge`` only the minimal reference
above is timed, a far stricter bar);
``status`` flat in backlog size within 3x the interpreter; ``preflight`` within the
interpreter plus 1.5x ``git status``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import site
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import timing
from timing import bench_env

ENV = bench_env(NO_COLOR="1")
REFERENCE = r'''
import json, sys
with open(sys.argv[1], encoding="utf-8") as handle:
    record = json.load(handle)
latest = {}
for entry in record["decisions"]:
    latest[entry["itemId"]] = entry
unapplied = sorted((e for e in latest.values() if e["appliedAt"] is None),
                   key=lambda e: e["itemId"])
print(json.dumps({"feature": record["feature"], "unapplied": unapplied,
                  "count": len(unapplied)}, indent=2, ensure_ascii=False))
'''


#: The launcher ``pip install`` installs as ``git-forge`` (its ``#!python`` line made the
#: environment's interpreter).
LAUNCHER = Path(__file__).resolve().parent.parent / "bin" / "git-forge"


#: Where the commands run from: the development interpreter and script by default,
#: an installed copy once ``install_copy`` ran.
PYTHON = [sys.executable]
FORGE: list[str] = []


def forge() -> list[str]:
    return FORGE or timing.forge()


def install_copy(target: Path) -> None:
    """A virtual environment holding this tree's ``git_forge`` as ``pip install .``
    would, its dependencies reached from the development environment."""
    global PYTHON, FORGE
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
    python = target / "bin" / "python"
    packages = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True).stdout.strip())
    source = Path(__file__).resolve().parent.parent / "git_forge"
    shutil.copytree(source, packages / "git_forge",
                    ignore=shutil.ignore_patterns("__pycache__"))
    ours = {sysconfig.get_path("purelib"), *site.getsitepackages()}
    (packages / "forge-dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    subprocess.run([str(python), "-m", "compileall", "-q", str(packages / "git_forge")],
                   check=True)
    script = target / "bin" / "git-forge"
    script.write_text(LAUNCHER.read_text().replace("#!python", f"#!{python}", 1))
    script.chmod(0o755)
    PYTHON, FORGE = [str(python)], [str(script)]


def git(*argv: str, cwd: Path) -> None:
    subprocess.run(["git", *argv], cwd=cwd, env=ENV, check=True, stdout=subprocess.DEVNULL)


def project(root: Path, items: int, files: int = 0) -> Path:
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root)
    for n in range(files):
        directory = root / "src" / f"d{n // 500:03d}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"f{n:05d}.txt").write_text(f"{n}\n")
    subprocess.run([*forge(), "init"], cwd=root, env=ENV, check=True,
                   stdout=subprocess.DEVNULL)
    backlog = root / ".forge" / "backlog.json"
    document = json.loads(backlog.read_text())
    document["items"] = [
        {"id": f"{n:05d}", "type": "feature", "priority": 1 + n % 4, "title": f"Item {n}",
         "description": "Something to do. " * 4, "acceptanceCriteria": ["it is done"],
         "status": ("done", "pending", "blocked")[n % 3], "completedAt": None,
         "needsHuman": n % 3 == 2, "blockedReason": "Which way?" if n % 3 == 2 else None,
         "dependsOn": [f"{n - 1:05d}"] if n % 7 == 0 and n > 1 else []}
        for n in range(1, items + 1)
    ]
    backlog.write_text(json.dumps(document, indent=2) + "\n")
    git("add", "-A", cwd=root)
    git("commit", "-qm", "init", cwd=root)
    return root


def after_a_run(root: Path, agent: Path) -> Path:
    """A 1,000-item project where ``loop run`` ended 10 agents: state.json, the
    journal, the receipts ledger and 10 processes' records are there, as after any
    run — what ``status`` reads then, beyond a fresh backlog."""
    project(root, 1_000)
    agent.write_text("#!/bin/sh\ncat >/dev/null\necho FORGE_DONE\n")
    agent.chmod(0o755)
    subprocess.run([*forge(), "loop", "run", "--agent", str(agent), "--iterations", "10"],
                   cwd=root, env=ENV, check=True, stdout=subprocess.DEVNULL)
    return root


def decision_record(root: Path, entries: int = 10_000) -> Path:
    path = root / ".forge" / "forge-decisions.json"
    stamp = "2026-11-01T10:00:00Z"
    document = {
        "schemaVersion": "1", "feature": ".forge", "createdAt": stamp,
        "decisions": [
            {"itemId": f"{n % 2000:03d}", "question": f"Question number {n}?",
             "answer": None if n % 3 == 0 else f"answer {n}", "deferred": n % 3 == 0,
             "decidedAt": stamp, "recordedBy": "bench@host",
             "appliedAt": stamp if n % 5 == 0 else None,
             "appliedBy": "bench@host" if n % 5 == 0 else None}
            for n in range(entries)
        ],
        "updatedAt": stamp,
    }
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return path


def interleaved(runs: dict[str, tuple[list[str], Path, object]], rounds: int
                ) -> dict[str, float]:
    """The median wall time (ms) of each run, the runs interleaved round by round —
    on a shared, loaded machine a ratio means something only between figures taken
    in the same minutes. ``(argv, cwd, before)``: ``before()`` runs, untimed, first."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for round_number in range(rounds + 1):  # the first round warms the caches
        for name, (argv, cwd, before) in runs.items():
            if callable(before):
                before()
            started = time.perf_counter()
            subprocess.run(argv, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            if round_number:
                samples[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


def same_answer(*runs: tuple[list[str], Path, object]) -> bool:
    """Whether the runs' commands write the same bytes to stdout."""
    answers = {subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True).stdout
               for argv, cwd, _ in runs}
    return len(answers) == 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--editable", action="store_true",
                        help="measure the development install instead of an installed copy")
    parser.add_argument("--feature-forge", type=Path, metavar="SCRIPT",
                        help="feature-forge's forge-session.py, to time its decision-list")
    arguments = parser.parse_args()
    rounds = arguments.rounds
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if not arguments.editable:
            install_copy(work / "venv")
        small = project(work / "small", 100)
        roots = {100: small, 1_000: project(work / "p1000", 1_000),
                 5_000: project(work / "p5000", 5_000)}
        record = decision_record(small)
        reference = work / "reference.py"
        reference.write_text(REFERENCE)
        clean = project(work / "clean", 10, files=1_000)
        dirty = project(work / "dirty", 10, files=1_000)
        for n in range(0, 1_000, 100):
            (dirty / "src" / f"d{n // 500:03d}" / f"f{n:05d}.txt").write_text("changed\n")

        adds = project(work / "adds", 100)  # its own: an add changes the backlog
        ran = after_a_run(work / "ran", work / "agent.sh")
        # A copy of its own: removing the cache there leaves the others' hits alone.
        changed = work / "p5000-changed"
        shutil.copytree(roots[5_000], changed, symlinks=True)

        def uncached(cache: Path = changed / ".forge" / "cache") -> None:
            shutil.rmtree(cache, ignore_errors=True)  # the first command after a change

        runs: dict[str, tuple[list[str], Path, object]] = {
            "pass": ([*PYTHON, "-c", "pass"], work, None),
            "version": ([*forge(), "--version"], small, None),
        }
        for items, root in roots.items():
            runs[f"status {items}"] = ([*forge(), "status"], root, None)
            runs[f"list {items}"] = ([*forge(), "backlog", "list", "--json"], root, None)
        runs["status after a run"] = ([*forge(), "status"], ran, None)
        runs["status 5000 uncached"] = ([*forge(), "status"], changed, uncached)
        runs["list 5000 uncached"] = ([*forge(), "backlog", "list", "--json"], changed,
                                      uncached)
        runs["decision list"] = ([*forge(), "decision", "list", "--backlog-dir", ".forge",
                                  "--unapplied", "--json"], small, None)
        runs["reference"] = ([*PYTHON, str(reference), str(record)], small, None)
        if arguments.feature_forge:  # the record is {backlogDir}/{stateDir}: stateDir ""
            runs["feature-forge"] = ([*PYTHON, str(arguments.feature_forge.resolve()),
                                      "decision-list", "--backlog-dir", ".forge",
                                      "--state-dir", "", "--unapplied", "--json"], small, None)
        runs["add"] = ([*forge(), "backlog", "add", "--title", "One more"], adds, None)
        for state, repo in (("clean", clean), ("dirty", dirty)):
            runs[f"preflight {state}"] = ([*forge(), "preflight"], repo, None)
            runs[f"git status {state}"] = (["git", "status", "--porcelain"], repo, None)
        ms = interleaved(runs, rounds)

        unit = ms["pass"]
        print(f"medians of {rounds} interleaved rounds, wall clock, fresh process each")
        print(f"python3 -c pass (the unit):                 {unit:7.1f} ms")
        print(f"git forge --version:                        {ms['version']:7.1f} ms  "
              f"({ms['version'] / unit:.2f}x; goal <= 2x)")
        for items in roots:
            status, listing = ms[f"status {items}"], ms[f"list {items}"]
            print(f"{items:>5} items: status {status:7.1f} ms ({status / unit:.2f}x), "
                  f"backlog list --json {listing:7.1f} ms ({listing / unit:.2f}x)")
        status = ms["status after a run"]
        print(f" 1000 items, after a run of 10 agents: status {status:7.1f} ms "
              f"({status / unit:.2f}x)")
        status, listing = ms["status 5000 uncached"], ms["list 5000 uncached"]
        print(f" 5000 items, cache removed before each: status {status:7.1f} ms "
              f"({status / unit:.2f}x), backlog list --json {listing:7.1f} ms "
              f"({listing / unit:.2f}x)")
        ours, theirs = ms["decision list"], ms["reference"]
        print(f"decision list --unapplied --json, 10,000 entries: {ours:7.1f} ms; "
              f"reference script {theirs:7.1f} ms ({ours / theirs:.2f}x)")
        if "feature-forge" in ms:
            theirs = ms["feature-forge"]
            same = same_answer(runs["decision list"], runs["feature-forge"])
            print(f"  feature-forge's forge-session.py decision-list: {theirs:7.1f} ms "
                  f"({ours / theirs:.2f}x; goal <= 0.5x); "
                  f"{'the same bytes' if same else 'ANSWERS DIFFER'} on stdout")
        print(f"backlog add, 100 items:           {ms['add']:7.1f} ms ({ms['add'] / unit:.2f}x)")
        for state in ("clean", "dirty"):
            preflight, status = ms[f"preflight {state}"], ms[f"git status {state}"]
            bar = unit + 1.5 * status
            print(f"preflight, 1,000 files, {state}: {preflight:7.1f} ms; git status "
                  f"{status:6.1f} ms; bar (interpreter + 1.5x git status) {bar:7.1f} ms "
                  f"({preflight / bar:.2f}x the bar)")


if __name__ == "__main__":
    main()
