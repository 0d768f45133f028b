"""``loop run --follow``: the agent's output behind a ``| `` gutter, whatever it prints."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from builders import one_item_backlog
from helpers import run_forge
from templates import Templates

#: Progress drawn the way tools draw it on a terminal: carriage returns, no newline.
AGENT = (r"import sys; sys.stdin.read(); "
         r"sys.stdout.write('fetch 10%\rfetch 55%\rfetch 100%\nplain line\r\n'"
         r" + 'FORGE_DONE\n')")


def test_carriage_returns_never_erase_the_gutter(templates: Templates, tmp_path: Path) -> None:
    root = templates.copy("one-item", one_item_backlog, tmp_path / "repo")
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    # bytes, not text: text mode would turn every carriage return into a newline
    result = run_forge("loop", "run", "--follow", "--agent", f"{sys.executable} {agent}",
                       cwd=root, input=b"")
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    gutter = [line for line in out.split("\n") if line.startswith("  | ")]
    # each line shows what it said last; no carriage return reaches the terminal
    assert gutter == ["  | fetch 100%", "  | plain line", "  | FORGE_DONE"]
    assert "\r" not in out


#: An agent that floods: 60,000 numbered lines (about 2.6 MB) as fast as it can, then done.
FLOOD = (r"import sys; sys.stdin.read(); "
         r"sys.stdout.write(''.join(f'line {n:05} ' + 'x' * 32 + '\n' for n in range(60000))"
         r" + 'FORGE_DONE\n')")


def _check_against_spool(shown: list[str], spool: list[str]) -> int:
    """Walk what ``--follow`` showed along the spool's lines: every line shown is the
    spool's next line, whole; a skip note stands for exactly the lines it counts. The
    number of lines skipped."""
    position = skipped = 0
    for line in shown:
        if line.startswith("… ") and " skipped — git forge proc output " in line:
            count = int(line.split()[1].replace(",", ""))
            assert count > 0, line
            position += count
            skipped += count
            continue
        assert position < len(spool), f"shown past the end: {line!r}"
        assert line == spool[position], (position, line, spool[position])
        position += 1
    assert position == len(spool), (position, len(spool))
    return skipped


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_a_flood_is_followed_line_by_line_and_every_skip_is_said(
        templates: Templates, tmp_path: Path, parallel: bool) -> None:
    root = templates.copy("one-item", one_item_backlog, tmp_path / "repo")
    agent = tmp_path / "agent.py"
    agent.write_text(FLOOD)
    extra = ["--parallel", "2"] if parallel else []
    result = run_forge("loop", "run", "--follow", *extra,
                       "--agent", f"{sys.executable} {agent}", cwd=root, input=b"")
    assert result.returncode == 0, result.stderr
    prefix = "  | [001] " if parallel else "  | "
    shown = [line[len(prefix):] for line in result.stdout.decode().split("\n")
             if line.startswith(prefix)]
    spool = run_forge("proc", "output", "001", cwd=root)
    assert spool.returncode == 0, spool.stderr
    lines = spool.stdout.rstrip("\n").split("\n")
    assert len(lines) == 60001 and lines[-1] == "FORGE_DONE"
    _check_against_spool(shown, lines)
    assert shown[-1] == "FORGE_DONE"  # the end is always shown
