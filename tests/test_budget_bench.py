"""benchmarks/budget_bench.py runs, and prints every figure beside its budget.

Only that: whether a figure is within its budget is the benchmark's to say, on a
machine quiet enough to say it — speed is never asserted in a test.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import waiting

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "budget_bench.py"
FIGURES = (
    "status", "backlog list", "backlog show ID", "backlog topology", "decision list",
    "config", "proc list", "proc show HANDLE", "__complete items (a TAB)",
    "preflight, CPU", "preflight, wall", "pre-launch hook, CPU", "pre-launch hook, wall",
    "loop per iteration, wall", "loop per iteration, CPU", "6-item run, per item",
)


# --here: the git-forge of this environment, not a copy pip builds and installs (what
# the budgets are measured on; test_man_page installs one already).
@pytest.mark.timeout(300)
def test_quick_run_prints_every_figure_beside_its_budget(tmp_path: Path) -> None:
    result = waiting.run([sys.executable, str(BENCH), "--quick", "--here"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=280)
    assert result.returncode in (0, 1), result.stderr
    lines = result.stdout.splitlines()
    verdicts = {}
    for line in lines:
        for name in FIGURES:
            if line.startswith(f"  {name} ") and " budget " in line:
                verdicts[name] = line.rsplit(None, 1)[-1]
    assert set(verdicts) == set(FIGURES), result.stdout
    assert set(verdicts.values()) <= {"within", "OVER"}, result.stdout
    # Exit 1 exactly when a figure is over its budget.
    assert result.returncode == ("OVER" in verdicts.values()), result.stdout
    assert "--here" in lines[0] and "load average" in lines[0], result.stdout
    assert "load average" in lines[-1], result.stdout
