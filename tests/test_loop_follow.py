"""``loop run --follow``: the agent's output behind a ``| `` gutter, whatever it prints."""

from __future__ import annotations

import sys
from pathlib import Path

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
