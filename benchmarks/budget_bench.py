"""Benchmark: the budgets a user feels, each figure printed beside its budget.

git-forge is measured as a user gets it: ``pip install`` of this tree (not an
editable install, whose import hook every start-up pays) into a new virtual
environment in a temporary directory, its dependencies reached from the running
environment through a ``.pth`` line. The benchmark then runs again under that
environment's interpreter, so that every ``git-forge`` it starts, and every helper
it shares with the other benchmarks, is the installed one. Each figure is the
median of runs taken in turns with the figures it is compared with (on a shared
machine a comparison means something only between figures of the same minutes); a
process's CPU is the user and system time of it and of everything under it.

* Every read command — ``status``, ``backlog list``, ``backlog show ID``,
  ``backlog topology``, ``decision list``, ``config``, ``proc list``, ``proc show
  HANDLE`` — on a repository of ``--items`` items (recover_bench's: a tenth blocked
  on questions that cluster, three tenths pending, the rest done) after a run of an
  instant agent (its state, journal and finished processes on disk), with a
  decision record (an applied answer for every fifth done item, an unapplied answer
  or a deferral for each blocked one): at most 50 ms CPU each. A TAB on an item id
  (``git-forge __complete items``, the process the completion scripts start): at
  most 50 ms CPU. The interpreter's own start-up (``python -c pass``) is printed
  with them: the part of each figure no code of git-forge's can save.
* The pre-launch check on a clean 1,000-file tree, as ``git-forge preflight`` and as
  the installed hook (``git hook run --ignore-missing pre-launch``, what launchers
  run): at most ``git status --porcelain`` on the same tree + 25 ms, CPU and wall.
* The loop's own cost per iteration with an instant agent, on a backlog of
  ``--items`` pending items, as loop_bench takes it (loop_bench's agent; a run of N
  iterations less a run of 1, over N - 1): at most 2x a shell loop doing the same
  work per item — the prompt on the agent's stdin, the item marked done in
  backlog.json (the whole file read and rewritten by jq, or by python3 where jq is
  missing), ``git add -A``, ``git commit`` — in wall time and in CPU.
* A 6-item run from launch to exit with the same agent: fewer ms per item (wall)
  than the fastest peer runner measured, ralphy and ralph-tui at ~95 ms per item,
  their start-up included.

The machine's load average is printed before and after. Exit 1 when any figure is
over its budget. ``--quick`` (500 items, fewer rounds and runs) shows that the
benchmark runs; its figures are rough.

Usage: ``python benchmarks/budget_bench.py [--quick] [--items N] [--rounds N]
[--runs N] [--iterations N]``.
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
from collections.abc import Callable
from pathlib import Path

import loop_bench
import recover_bench
from parallel_bench import load
from timing import bench_env, forge, run_timed

ROOT = Path(__file__).resolve().parent.parent
READ_BUDGET_MS = 50.0
COMPLETION_BUDGET_MS = 50.0
PREFLIGHT_MARGIN_MS = 25.0
PEER_MS_PER_ITEM = 95.0
RUN_ITEMS = 6
TREE_FILES = 1_000
#: Marks the first pending item done, reading and rewriting the whole backlog.json.
MARK_JQ = ("jq '(.items | map(.status) | index(\"pending\")) as $i"
           " | .items[$i].status = \"done\" | .items[$i].completedAt = (now | todate)'")
MARK_PYTHON = """python3 -c '
import json, sys, time
with open(sys.argv[1], encoding="utf-8") as handle:
    document = json.load(handle)
item = next(i for i in document["items"] if i["status"] == "pending")
item.update(status="done", completedAt=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
print(json.dumps(document, indent=2, ensure_ascii=False))
'"""
#: The shell loop git-forge's loop is held to: per item, what the loop does.
SAME_WORK = """#!/bin/sh
i=0
while [ "$i" -lt "$1" ]; do
    i=$((i + 1))
    FORGE_ITEM_ID="$i" "$2" < "$3" > /dev/null
    {mark} .forge/backlog.json > .forge/backlog.json.new
    mv .forge/backlog.json.new .forge/backlog.json
    git add -A
    git commit -q -m "item $i"
done
"""


def install(venv: Path, source: Path) -> Path:
    """``pip install`` of a copy of this tree (the build writes into the tree it
    builds) into a new virtual environment at ``venv``; that environment's python."""
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".ci", "build", "dist", "*.egg-info", "__pycache__", ".*_cache",
        "tests", "benchmarks"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                          "--quiet", "--no-deps", str(source)], capture_output=True, text=True)
    if pip.returncode != 0:
        raise SystemExit(f"pip install of {source} failed:\n{pip.stderr}")
    packages = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True).stdout.strip()
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib"),
            *site.getsitepackages()}
    (Path(packages) / "git-forge-dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    return python


def check_installed() -> str:
    """git-forge's version, once sure that the one imported here (and started beside
    this interpreter) is the copy installed in this environment, not the tree's."""
    import git_forge

    if not Path(git_forge.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()):
        raise SystemExit(f"git_forge comes from {git_forge.__file__}, not from {sys.prefix}")
    return git_forge.__version__


def decision_record(path: Path, items: list[dict]) -> int:
    """The decision record such a backlog has: an applied answer for every fifth
    done item (blocked once), and for each blocked item its question, answered and
    not yet applied, or deferred (every third). Returns its number of entries."""
    stamp = "2026-01-05T10:00:00Z"
    entries = []
    for number, item in enumerate(items):
        applied = item["status"] == "done" and number % 5 == 0
        if not applied and item["status"] != "blocked":
            continue
        deferred = not applied and number % 3 == 0
        entries.append({
            "itemId": item["id"],
            "question": item.get("blockedReason") or f"How should {item['title']} work?",
            "answer": None if deferred else f"Do it the simple way ({item['id']}).",
            "deferred": deferred, "decidedAt": stamp, "recordedBy": "git-forge@bench",
            "appliedAt": stamp if applied else None,
            "appliedBy": "git-forge@bench" if applied else None})
    document = {"schemaVersion": "1", "feature": path.parent.name, "createdAt": stamp,
                "decisions": entries, "updatedAt": stamp}
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return len(entries)


def interleaved(cases: dict[str, Callable[[], tuple[float, float]]],
                rounds: int) -> dict[str, tuple[float, float]]:
    """The median (wall s, CPU s) of each case, the cases taking turns round by
    round; a first round, not counted, warms the caches (the page cache, and the
    state dir's, as every run after the first one finds them)."""
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for number in range(rounds + 1):
        for name, case in cases.items():
            sample = case()
            if number:
                samples[name].append(sample)
    return {name: (statistics.median(s[0] for s in values),
                   statistics.median(s[1] for s in values))
            for name, values in samples.items()}


class Report:
    """Each figure printed beside its budget, and whether all were within."""

    def __init__(self) -> None:
        self.over: list[str] = []
        self.count = 0

    def figure(self, name: str, text: str, budget: str, within: bool) -> None:
        self.count += 1
        if not within:
            self.over.append(name)
        print(f"  {name:<24} {text:<28} budget {budget:<36} {'within' if within else 'OVER'}")


def read_figures(work: Path, items: int, iterations: int, rounds: int, env: dict[str, str],
                 report: Report) -> None:
    root = work / "read"
    blocked = items // 10
    recover_bench.build(root, items, blocked, max(1, blocked // 10))
    (root / "work").mkdir()  # where the agent writes
    agent = work / "agent.sh"
    subprocess.run(loop_bench.loop_argv(agent, iterations), cwd=root, check=True,
                   env={**env, "AGENT_EXITS": str(work / "exits")}, stdout=subprocess.DEVNULL)
    backlog = json.loads((root / ".forge" / "backlog.json").read_text())["items"]
    entries = decision_record(root / ".forge" / "forge-decisions.json", backlog)
    item = next(entry["id"] for entry in backlog if entry["status"] == "blocked")
    handle = sorted(root.glob(".forge/proc/*.manifest.json"))[0].name.split(".")[0]
    commands = {
        "status": ["status"], "backlog list": ["backlog", "list"],
        "backlog show ID": ["backlog", "show", item], "backlog topology": ["backlog", "topology"],
        "decision list": ["decision", "list", "--backlog-dir", ".forge"], "config": ["config"],
        "proc list": ["proc", "list"], "proc show HANDLE": ["proc", "show", handle],
        "__complete items (a TAB)": ["__complete", "items"],
    }
    cases = {name: lambda words=words: run_timed([*forge(), *words], root, env)
             for name, words in commands.items()}
    cases["python -c pass"] = lambda: run_timed([sys.executable, "-c", "pass"], root, env)
    medians = interleaved(cases, rounds)
    interpreter = medians.pop("python -c pass")[1] * 1000
    print(f"read commands: {items:,} items ({blocked:,} blocked), {iterations} finished "
          f"processes, {entries:,} decisions on record; median of {rounds} round(s); "
          f"the interpreter alone (python -c pass): CPU {interpreter:.1f} ms")
    for name, (wall, cpu) in medians.items():
        budget = COMPLETION_BUDGET_MS if name.startswith("__complete") else READ_BUDGET_MS
        report.figure(name, f"CPU {cpu * 1000:6.1f} ms (wall {wall * 1000:6.1f})",
                      f"<= {budget:g} ms CPU", cpu * 1000 <= budget)


def preflight_figures(work: Path, rounds: int, env: dict[str, str], report: Report) -> None:
    tree = work / "tree"
    loop_bench.build(tree, 10, TREE_FILES)
    subprocess.run([*forge(), "hooks", "install"], cwd=tree, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    if subprocess.run(["git", "status", "--porcelain"], cwd=tree, env=env, check=True,
                      capture_output=True).stdout:
        raise SystemExit(f"the tree at {tree} is not clean")
    medians = interleaved({
        "git status --porcelain": lambda: run_timed(["git", "status", "--porcelain"], tree, env),
        "preflight": lambda: run_timed([*forge(), "preflight"], tree, env),
        "pre-launch hook": lambda: run_timed(  # as launchers run it
            ["git", "hook", "run", "--ignore-missing", "pre-launch"], tree, env),
    }, rounds)
    git_wall, git_cpu = (value * 1000 for value in medians.pop("git status --porcelain"))
    print(f"pre-launch check: clean tree of {TREE_FILES:,} files; median of {rounds} round(s); "
          f"git status --porcelain: CPU {git_cpu:.1f} ms, wall {git_wall:.1f} ms")
    for name, (wall, cpu) in medians.items():
        for kind, ours, theirs in (("CPU", cpu * 1000, git_cpu), ("wall", wall * 1000, git_wall)):
            report.figure(f"{name}, {kind}", f"{kind} {ours:6.1f} ms",
                          f"<= git status + {PREFLIGHT_MARGIN_MS:g} = "
                          f"{theirs + PREFLIGHT_MARGIN_MS:.1f} ms",
                          ours <= theirs + PREFLIGHT_MARGIN_MS)


def done_on_head(root: Path) -> int:
    """How many items the committed backlog.json has done."""
    text = subprocess.run(["git", "show", "HEAD:.forge/backlog.json"], cwd=root, check=True,
                          capture_output=True, text=True).stdout
    return sum(item["status"] == "done" for item in json.loads(text)["items"])


def loop_figures(work: Path, items: int, iterations: int, runs: int, env: dict[str, str],
                 report: Report) -> None:
    mark = MARK_JQ if shutil.which("jq") else MARK_PYTHON
    (work / "same.sh").write_text(SAME_WORK.format(mark=mark))
    (work / "prompt.txt").write_bytes(loop_bench.PROMPT)
    big, small = work / "backlog", work / "six"
    loop_bench.build(big, items, 0)
    loop_bench.build(small, RUN_ITEMS, 0)
    run_env = {**env, "AGENT_EXITS": str(work / "exits")}

    def one(template: Path, what: str, count: int) -> tuple[float, float]:
        root = work / "run"
        shutil.copytree(template, root, symlinks=True)
        sample = loop_bench.one_run(what, count, root, work, run_env)
        done = done_on_head(root)
        shutil.rmtree(root)
        if done != count:
            raise SystemExit(f"{what}: {done} items done and committed, expected {count}")
        return sample

    samples: dict[tuple[str, int], list[tuple[float, float]]] = {}
    six = []
    for index in range(runs):
        pair = ("forge", "same") if index % 2 == 0 else ("same", "forge")  # no order bias
        for count in (iterations, 1):
            for what in pair:
                samples.setdefault((what, count), []).append(one(big, what, count))
        six.append(one(small, "forge", RUN_ITEMS))
    ours, theirs = ([statistics.median(loop_bench.marginal(
        samples[what, iterations], samples[what, 1], iterations - 1, part)) * 1000
        for part in (0, 1)] for what in ("forge", "same"))
    print(f"loop per iteration: {items:,} pending items, {iterations} iterations against 1, "
          f"median of {runs} run(s); the shell loop marks items done with "
          f"{mark.split()[0]}: wall {theirs[0]:.1f} ms, CPU {theirs[1]:.1f} ms")
    for part, kind in enumerate(("wall", "CPU")):  # a difference of noisy runs may be <= 0
        ratio = f"{ours[part] / theirs[part]:.2f}x" if theirs[part] > 0 else "-"
        report.figure(f"loop per iteration, {kind}", f"{kind} {ours[part]:6.1f} ms = {ratio}",
                      f"<= {loop_bench.GOAL_RATIO:g}x the shell loop",
                      ours[part] <= loop_bench.GOAL_RATIO * theirs[part])
    wall = statistics.median(sample[0] for sample in six) / RUN_ITEMS * 1000
    cpu = statistics.median(sample[1] for sample in six) / RUN_ITEMS * 1000
    print(f"a {RUN_ITEMS}-item run, launch to exit: median of {runs} run(s)")
    report.figure(f"{RUN_ITEMS}-item run, per item", f"wall {wall:6.1f} ms (CPU {cpu:.1f})",
                  f"< {PEER_MS_PER_ITEM:g} ms (ralphy, ralph-tui)", wall < PEER_MS_PER_ITEM)


def measure(options: argparse.Namespace) -> int:
    if options.here:
        import git_forge

        version, where = git_forge.__version__, (
            "as this environment has it (--here: not the installed copy the budgets "
            "are for)")
    else:
        version, where = check_installed(), "installed with pip in a new virtual environment"
    env = bench_env(NO_COLOR="1")
    report = Report()
    before = load()
    print(f"git-forge {version}, {where}; {before}")
    with tempfile.TemporaryDirectory(prefix="git-forge-budget-") as tmp:
        work = Path(tmp)
        agent = work / "agent.sh"
        agent.write_text(loop_bench.AGENT)
        agent.chmod(0o755)
        read_figures(work, options.items, min(10, options.iterations), options.rounds, env,
                     report)
        preflight_figures(work, options.rounds, env, report)
        loop_figures(work, options.items, options.iterations, options.runs, env, report)
    print(f"{report.count - len(report.over)} of {report.count} figures within their budgets"
          f"{'; over: ' + ', '.join(report.over) if report.over else ''}; {load()} after")
    return 1 if report.over else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="500 items, 1 round, 1 run of 3 iterations: that it runs")
    parser.add_argument("--items", type=int, help="backlog size (default 5,000)")
    parser.add_argument("--rounds", type=int, help="rounds of the read and pre-launch "
                        "figures (default 15)")
    parser.add_argument("--runs", type=int, help="runs of the loop figures (default 5)")
    parser.add_argument("--iterations", type=int, help="iterations of the long loop run "
                        "(default 20)")
    parser.add_argument("--here", action="store_true",
                        help="measure the git-forge this environment has (an editable "
                        "install's import hook adds to every figure): that the benchmark "
                        "runs, not whether the budgets hold")
    parser.add_argument("--installed", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    defaults = (500, 1, 1, 3) if options.quick else (5_000, 15, 5, 20)
    for name, default in zip(("items", "rounds", "runs", "iterations"), defaults, strict=True):
        if getattr(options, name) is None:
            setattr(options, name, default)
    if options.iterations < 2:
        parser.error("--iterations must be at least 2: a figure per iteration is the "
                     "difference of two runs")
    if options.installed or options.here:
        return measure(options)
    with tempfile.TemporaryDirectory(prefix="git-forge-budget-install-") as tmp:
        python = install(Path(tmp) / "venv", Path(tmp) / "source")
        return subprocess.run([str(python), str(Path(__file__).resolve()), *sys.argv[1:],
                               "--installed"]).returncode


if __name__ == "__main__":
    sys.exit(main())
